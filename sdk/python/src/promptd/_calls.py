"""Call builders: one function per route of api/openapi.yaml, shared by Client and
AsyncClient (which only send what these build)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional, Sequence, Union
from urllib.parse import quote

import httpx

from ._http import Call, decode
from .models import (
    Agent,
    Appended,
    Assembled,
    EnvPointer,
    LeaseGrant,
    Leases,
    Page,
    Release,
    Resolved,
    Session,
    SessionSummary,
    StateEntry,
    Trace,
    Turn,
    Version,
    read_page,
)

TurnLike = Union[Turn, Mapping[str, Any]]


def seg(s: Union[str, int]) -> str:
    return quote(str(s), safe="")


def _json(r: httpx.Response) -> Any:
    return decode(r)


def _none(r: httpx.Response) -> None:
    return None


def _page(r: httpx.Response) -> Page[dict[str, Any]]:
    """A page of JSON objects (the feed's events, exposure counts)."""
    return read_page(decode(r), lambda x: x)


def turns_json(turns: Iterable[TurnLike]) -> list[dict[str, Any]]:
    return [t.to_json() if isinstance(t, Turn) else dict(t) for t in turns]


# Versions and envs.
def create_version(agent: str, config: Mapping[str, Any], base_version: int, message: str,
                   merge: bool = False) -> Call[Version]:
    body: dict[str, Any] = {"base_version": base_version, "config": config, "message": message}
    if merge:
        body["merge"] = True
    return Call("POST", f"/v1/agents/{seg(agent)}/versions", lambda r: Version.from_json(decode(r)),
                json=body, idempotent=True)


def get_version(agent: str, version: int) -> Call[Version]:
    return Call("GET", f"/v1/agents/{seg(agent)}/versions/{version}", lambda r: Version.from_json(decode(r)))


def list_versions(agent: str, limit: Optional[int], cursor: Optional[str]) -> Call[Page[Version]]:
    return Call("GET", f"/v1/agents/{seg(agent)}/versions", lambda r: read_page(decode(r), Version.from_json),
                params={"limit": limit, "cursor": cursor})


def list_agents() -> Call[Page[Agent]]:
    return Call("GET", "/v1/agents", lambda r: read_page(decode(r), Agent.from_json))


def get_env(agent: str, env: str) -> Call[EnvPointer]:
    return Call("GET", f"/v1/agents/{seg(agent)}/envs/{seg(env)}", lambda r: EnvPointer.from_json(decode(r)))


def set_env(agent: str, env: str, version: int, expected_revision: int) -> Call[EnvPointer]:
    return Call("PUT", f"/v1/agents/{seg(agent)}/envs/{seg(env)}", lambda r: EnvPointer.from_json(decode(r)),
                json={"version": version, "expected_revision": expected_revision})


def revoke(agent: str, env: str, version: int, reason: str) -> Call[Any]:
    return Call("POST", f"/v1/agents/{seg(agent)}/envs/{seg(env)}/revocations", _json,
                json={"version": version, "reason": reason})


# Runtime path.
def resolve(agent: str, env: str, user_id: Optional[str], session_id: Optional[str]) -> Call[Resolved]:
    return Call("GET", f"/v1/agents/{seg(agent)}/envs/{seg(env)}/prompt", lambda r: Resolved.from_json(decode(r)),
                params={"user_id": user_id, "session_id": session_id})


def _promptd_version(r: httpx.Response) -> Optional[int]:
    v = r.headers.get("Promptd-Version", "")
    try:
        return int(v.rsplit("/", 1)[1])
    except (IndexError, ValueError):
        return None


def release_header(v: Optional[str]) -> Optional[Trace]:
    """The Promptd-Release header (an RFC 8941 dictionary:
    ``id="rel_1", arm=candidate, bucket=771, reason=bucket``) as a Trace."""
    if not v:
        return None
    d: dict[str, Any] = {}
    for m in re.finditer(r'\s*([a-z_][a-z0-9_.*-]*)=("(?:[^"\\]|\\.)*"|[^,]*)\s*(?:,|$)', v):
        key, val = m.group(1), m.group(2).strip()
        if val.startswith('"'):
            d[key] = re.sub(r'\\(.)', r"\1", val[1:-1])
        elif re.fullmatch(r"-?\d+", val):
            d[key] = int(val)
        else:
            d[key] = val
    return Trace(id=str(d.get("id", "")), arm=str(d.get("arm", "")),
                 bucket=d.get("bucket") if isinstance(d.get("bucket"), int) else None, reason=d.get("reason"))


def _assembled(fmt: str) -> Any:
    def parse(r: httpx.Response) -> Assembled:
        d = decode(r) or {}
        if fmt == "plain":
            version = d.get("version")
            trace = Trace.from_json(d.get("release"))
        else:
            version, trace = _promptd_version(r), release_header(r.headers.get("Promptd-Release"))
        return Assembled(format=fmt, body=d, version=version if isinstance(version, int) else None, release=trace,
                         tools=_dicts(d.get("tools")), model=_model_settings(fmt, d))
    return parse


# The members of an openai body that are not the config's model settings.
_OPENAI_NOT_MODEL = frozenset({"model", "messages", "tools", "stream"})


def _model_settings(fmt: str, d: Mapping[str, Any]) -> Optional[dict[str, Any]]:
    """The config's ``model`` (ModelSettings): the plain answer's ``model``;
    in an openai body, ``model`` is its name and the other settings sit at
    the top level."""
    if fmt == "plain":
        m = d.get("model")
        return dict(m) if isinstance(m, Mapping) else None
    name = d.get("model")
    if not isinstance(name, str):
        return None
    return {"name": name, **{k: v for k, v in d.items() if k not in _OPENAI_NOT_MODEL}}


def _dicts(v: Any) -> list[dict[str, Any]]:
    return [dict(x) for x in v if isinstance(x, Mapping)] if isinstance(v, list) else []


def assemble(agent: str, env: str, variables: Optional[Mapping[str, Any]], user_id: Optional[str],
             session_id: Optional[str], history: bool, max_history_turns: Optional[int],
             fmt: str) -> Call[Assembled]:
    body: dict[str, Any] = {"variables": dict(variables or {}), "history": history}
    if user_id is not None:
        body["user_id"] = user_id
    if session_id is not None:
        body["session_id"] = session_id
    if max_history_turns is not None:
        body["max_history_turns"] = max_history_turns
    if fmt != "plain":
        body["format"] = fmt
    # assemble only reads: safe to retry.
    return Call("POST", f"/v1/agents/{seg(agent)}/envs/{seg(env)}/assemble", _assembled(fmt), json=body, safe=True)


# Releases.
def _release(r: httpx.Response) -> Release:
    return Release.from_json(decode(r))


def _some(**kv: Any) -> dict[str, Any]:
    return {k: v for k, v in kv.items() if v is not None}


def get_release(release_id: str) -> Call[Release]:
    return Call("GET", f"/v1/releases/{seg(release_id)}", _release)


def list_releases(agent: str, env: str, limit: Optional[int] = None,
                  cursor: Optional[str] = None) -> Call[Page[Release]]:
    return Call("GET", f"/v1/agents/{seg(agent)}/envs/{seg(env)}/releases",
                lambda r: read_page(decode(r), Release.from_json),
                params={"limit": limit, "cursor": cursor})


def create_release(agent: str, env: str, candidate_version: int, percent: Union[int, float, str],
                   stickiness: Optional[str], steps: Optional[Sequence[Mapping[str, Any]]], message: Optional[str],
                   expected_revision: Optional[int], overrides: Optional[Mapping[str, Any]],
                   guard: Optional[Mapping[str, Any]]) -> Call[Release]:
    body = _some(candidate_version=candidate_version, percent=percent, stickiness=stickiness,
                 steps=[dict(x) for x in steps] if steps is not None else None, message=message,
                 expected_revision=expected_revision, overrides=overrides, guard=guard)
    return Call("POST", f"/v1/agents/{seg(agent)}/envs/{seg(env)}/releases", _release, json=body, idempotent=True)


def ramp_release(release_id: str, percent: Union[int, float, str], expected_revision: int,
                 reason: Optional[str]) -> Call[Release]:
    body = _some(percent=percent, expected_revision=expected_revision, reason=reason)
    return Call("PATCH", f"/v1/releases/{seg(release_id)}", _release, json=body)


def transition_release(release_id: str, action: str, expected_revision: Optional[int],
                       reason: Optional[str]) -> Call[Release]:
    """pause, resume, promote or rollback (running -> paused, paused ->
    running, running|paused -> promoted | rolled_back)."""
    return Call("POST", f"/v1/releases/{seg(release_id)}/{action}", _release,
                json=_some(expected_revision=expected_revision, reason=reason))


# Sessions.
def create_session(agent: str, env: str, session_id: Optional[str], user_id: Optional[str],
                   metadata: Any, idle_ttl_ms: Optional[int]) -> Call[Session]:
    body: dict[str, Any] = {"agent": agent, "env": env}
    for k, v in (("session_id", session_id), ("user_id", user_id), ("metadata", metadata),
                 ("idle_ttl_ms", idle_ttl_ms)):
        if v is not None:
            body[k] = v
    return Call("POST", "/v1/sessions", lambda r: Session.from_json(decode(r)), json=body, idempotent=True)


def list_sessions(agent: Optional[str], env: Optional[str], state: Optional[str], limit: Optional[int],
                  cursor: Optional[str]) -> Call[Page[SessionSummary]]:
    return Call("GET", "/v1/sessions", lambda r: read_page(decode(r), SessionSummary.from_json),
                params={"agent": agent, "env": env, "state": state, "limit": limit, "cursor": cursor})


def get_session(sid: str, since: Optional[int], limit: Optional[int]) -> Call[Session]:
    return Call("GET", f"/v1/sessions/{seg(sid)}", lambda r: Session.from_json(decode(r)),
                params={"since": since, "limit": limit})


def _fenced(body: dict[str, Any], fence: Optional[int]) -> dict[str, Any]:
    if fence is not None:
        body["fence"] = fence
    return body


def append(sid: str, turns: Sequence[TurnLike], expected_revision: int, fence: Optional[int]) -> Call[Appended]:
    def parse(r: httpx.Response) -> Appended:
        d = decode(r)
        return Appended(revision=int(d["revision"]), seqs=[int(s) for s in d.get("seqs") or []])
    return Call("POST", f"/v1/sessions/{seg(sid)}/turns", parse, idempotent=True,
                json=_fenced({"expected_revision": expected_revision, "turns": turns_json(turns)}, fence))


def put_state(sid: str, key: str, value: Any, expected_revision: int, fence: Optional[int]) -> Call[StateEntry]:
    def parse(r: httpx.Response) -> StateEntry:
        d = decode(r)
        return StateEntry(key=d.get("key", key), value=value, revision=int(d["revision"]))
    return Call("PUT", f"/v1/sessions/{seg(sid)}/state/{seg(key)}", parse, idempotent=True,
                json=_fenced({"value": value, "expected_revision": expected_revision}, fence))


def get_state(sid: str) -> Call[dict[str, StateEntry]]:
    def parse(r: httpx.Response) -> dict[str, StateEntry]:
        d = decode(r) or {}
        return {k: StateEntry(key=k, value=v.get("value"), revision=int(v.get("revision") or 0))
                for k, v in d.items() if isinstance(v, dict)}
    return Call("GET", f"/v1/sessions/{seg(sid)}/state", parse)


def close_session(sid: str, expected_revision: int, fence: Optional[int]) -> Call[Session]:
    return Call("POST", f"/v1/sessions/{seg(sid)}/close", lambda r: Session.from_json(decode(r) or {}),
                json=_fenced({"expected_revision": expected_revision}, fence))


# Session leases.
def acquire_session_lease(sid: str, holder: str, ttl_ms: int, wait_ms: int, mode: str,
                          token: Optional[str]) -> Call[LeaseGrant]:
    body: dict[str, Any] = {"holder": holder, "ttl_ms": ttl_ms, "wait_ms": wait_ms, "mode": mode}
    if token is not None:
        body["token"] = token
    return Call("POST", f"/v1/sessions/{seg(sid)}/lease", lambda r: LeaseGrant.from_json(decode(r)), json=body)


def renew_session_lease(sid: str, token: str, ttl_ms: int) -> Call[str]:
    return Call("POST", f"/v1/sessions/{seg(sid)}/lease/renew", lambda r: str(decode(r).get("expires_at", "")),
                json={"ttl_ms": ttl_ms}, headers={"Lease-Token": token})


def release_session_lease(sid: str, token: str) -> Call[None]:
    return Call("DELETE", f"/v1/sessions/{seg(sid)}/lease", _none, headers={"Lease-Token": token})


# Generic leases.
def acquire_leases(resources: Sequence[str], holder: str, ttl_ms: int, wait_ms: int) -> Call[Leases]:
    return Call("POST", "/v1/leases", lambda r: Leases.from_json(decode(r)),
                json={"resources": list(resources), "holder": holder, "ttl_ms": ttl_ms, "wait_ms": wait_ms})


def renew_leases(lease_id: str, token: str, ttl_ms: int) -> Call[str]:
    return Call("POST", f"/v1/leases/{seg(lease_id)}/renew", lambda r: str(decode(r).get("expires_at", "")),
                json={"ttl_ms": ttl_ms}, headers={"Lease-Token": token})


def release_leases(lease_id: str, token: str) -> Call[None]:
    return Call("DELETE", f"/v1/leases/{seg(lease_id)}", _none, headers={"Lease-Token": token})


# Events (JSON long-poll; the stream is in stream.py).
def poll_events(since: Optional[str], wait_ms: Optional[int], limit: Optional[int],
                actions: Optional[str], agent: Optional[str], env: Optional[str]) -> Call[Page[dict[str, Any]]]:
    return Call("GET", "/v1/events", _page, params={"since": since, "wait_ms": wait_ms, "limit": limit,
                                                    "actions": actions, "agent": agent, "env": env})


# Bundles and exposures.
def exposures(items: list[dict[str, Any]], key: str) -> Call[Any]:
    return Call("POST", "/v1/exposures", _json, json={"items": items}, headers={"Idempotency-Key": key})


def get_exposures(agent: str, env: str, frm: Optional[str], to: Optional[str],
                  cursor: Optional[str]) -> Call[Page[dict[str, Any]]]:
    return Call("GET", f"/v1/agents/{seg(agent)}/envs/{seg(env)}/exposures", _page,
                params={"from": frm, "to": to, "cursor": cursor})


# Fragments (docs/fragments.md): shared, versioned pieces of prompts. Every
# fragment route needs an unscoped token; writes the admin role.
def _s(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _i(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def _d(v: Any) -> dict[str, Any]:
    return dict(v) if isinstance(v, Mapping) else {}


@dataclass(frozen=True)
class FragmentProposal:
    """An agent whose latest version names the fragment by an env, so whose
    next publish takes what that env then points at."""

    agent: str
    version: int
    alias: str
    env: str

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "FragmentProposal":
        return FragmentProposal(agent=_s(d.get("agent")), version=_i(d.get("version")), alias=_s(d.get("alias")),
                                env=_s(d.get("env")))


@dataclass(frozen=True)
class FragmentVersion:
    """An immutable fragment version: ``fragment`` is ``{"text": ...}`` or
    ``{"messages": [...]}``; ``fragments`` its own references, pinned."""

    name: str
    version: int
    content_hash: str
    fragment: dict[str, Any]
    variables: dict[str, Any]
    fragments: dict[str, Any]
    message: str
    created_by: str
    created_at: str
    dry_run: bool = False
    proposal: list[FragmentProposal] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def text(self) -> Optional[str]:
        t = self.fragment.get("text")
        return t if isinstance(t, str) else None

    @property
    def messages(self) -> Optional[list[dict[str, Any]]]:
        m = self.fragment.get("messages")
        return [dict(x) for x in m if isinstance(x, Mapping)] if isinstance(m, list) else None

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "FragmentVersion":
        p = d.get("proposal")
        return FragmentVersion(name=_s(d.get("name")), version=_i(d.get("version")), content_hash=_s(d.get("content_hash")),
                               fragment=_d(d.get("fragment")), variables=_d(d.get("variables")),
                               fragments=_d(d.get("fragments")), message=_s(d.get("message")),
                               created_by=_s(d.get("created_by")), created_at=_s(d.get("created_at")),
                               dry_run=d.get("dry_run") is True,
                               proposal=[FragmentProposal.from_json(x) for x in p if isinstance(x, Mapping)]
                               if isinstance(p, list) else [], raw=dict(d))


@dataclass(frozen=True)
class Fragment:
    """A fragment as GET /v1/fragments lists it: its latest version and,
    per env, the version the env's pointer names."""

    name: str
    latest_version: int
    latest_content_hash: str
    envs: dict[str, int]
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "Fragment":
        return Fragment(name=_s(d.get("name")), latest_version=_i(d.get("latest_version")),
                        latest_content_hash=_s(d.get("latest_content_hash")),
                        envs={k: _i(v) for k, v in _d(d.get("envs")).items()}, raw=dict(d))


@dataclass(frozen=True)
class FragmentEnv:
    """A fragment env pointer."""

    name: str
    env: str
    version: int
    revision: int
    updated_at: str
    updated_by: str
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "FragmentEnv":
        return FragmentEnv(name=_s(d.get("name")), env=_s(d.get("env")), version=_i(d.get("version")),
                           revision=_i(d.get("revision")), updated_at=_s(d.get("updated_at")),
                           updated_by=_s(d.get("updated_by")), raw=dict(d))


@dataclass(frozen=True)
class FragmentUse:
    """An agent version that pins a fragment version, with the envs whose
    pointers name that agent version."""

    agent: str
    version: int
    envs: list[str]
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "FragmentUse":
        e = d.get("envs")
        return FragmentUse(agent=_s(d.get("agent")), version=_i(d.get("version")),
                           envs=[x for x in e if isinstance(x, str)] if isinstance(e, list) else [], raw=dict(d))


def _fragment_path(name: str) -> str:
    return f"/v1/fragments/{seg(name)}"


def create_fragment_version(name: str, base_version: int, text: Optional[str],
                            messages: Optional[Sequence[Mapping[str, Any]]], variables: Optional[Mapping[str, Any]],
                            fragments: Optional[Mapping[str, Any]], message: str, propose: bool,
                            dry_run: bool) -> Call[FragmentVersion]:
    if (text is None) == (messages is None):
        raise ValueError("exactly one of text or messages is required")
    content: dict[str, Any] = {"text": text} if text is not None else {"messages": [dict(m) for m in messages or []]}
    body: dict[str, Any] = {"base_version": base_version, "fragment": content, "message": message}
    if variables is not None:
        body["variables"] = dict(variables)
    if fragments is not None:
        body["fragments"] = dict(fragments)
    if propose:
        body["propose"] = True
    writes = not (propose or dry_run)
    return Call("POST", _fragment_path(name) + "/versions", lambda r: FragmentVersion.from_json(decode(r)), json=body,
                params={"dry_run": "true" if dry_run else None}, idempotent=writes, safe=not writes)


def list_fragments(limit: Optional[int], cursor: Optional[str]) -> Call[Page[Fragment]]:
    return Call("GET", "/v1/fragments", lambda r: read_page(decode(r), Fragment.from_json),
                params={"limit": limit, "cursor": cursor})


def list_fragment_versions(name: str, limit: Optional[int], cursor: Optional[str]) -> Call[Page[FragmentVersion]]:
    return Call("GET", _fragment_path(name) + "/versions", lambda r: read_page(decode(r), FragmentVersion.from_json),
                params={"limit": limit, "cursor": cursor})


def get_fragment_version(name: str, version: int) -> Call[FragmentVersion]:
    return Call("GET", f"{_fragment_path(name)}/versions/{version}", lambda r: FragmentVersion.from_json(decode(r)))


def fragment_used_by(name: str, version: int, limit: Optional[int], cursor: Optional[str]) -> Call[Page[FragmentUse]]:
    return Call("GET", f"{_fragment_path(name)}/versions/{version}/used-by",
                lambda r: read_page(decode(r), FragmentUse.from_json), params={"limit": limit, "cursor": cursor})


def put_fragment_env(name: str, env: str, version: int, expected_revision: int) -> Call[FragmentEnv]:
    return Call("PUT", f"{_fragment_path(name)}/envs/{seg(env)}", lambda r: FragmentEnv.from_json(decode(r)),
                json={"version": version, "expected_revision": expected_revision})


def get_fragment_env(name: str, env: str) -> Call[FragmentEnv]:
    return Call("GET", f"{_fragment_path(name)}/envs/{seg(env)}", lambda r: FragmentEnv.from_json(decode(r)))
