"""Local evaluation: resolve and assemble from a bundle (GET /v1/bundle)
with exactly the server's rules (api/openapi.yaml, "Resolving and assembling",
"Chat templates and provider-shaped output", "Bundles and local
evaluation"). Pure functions, no I/O; LocalPrompts keeps the bundle current.

* bucket = murmur3_x86_32(utf8("<release_id>:<key>"), seed 0) mod 10000;
  key = user_id, or session_id for session stickiness or without user_id;
  neither: baseline, bucket None.
* overrides: hex sha256 of "<release_id>:<key>" on the candidate or
  baseline list decide before the bucket (reason "override").
* a candidate revoked in the env serves the baseline.
* a session pin is served (reason "pinned" while a release is active)
  unless revoked or unknown to the bundle: then :class:`AskServer`.
* templates: ``{{name}}`` / ``{{ name }}``, one pass; a ``{{`` that starts
  no placeholder is literal.
"""

from __future__ import annotations

import decimal
import hashlib
import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from .errors import CODES, PromptdError

__all__ = ["murmur3_32", "bucket", "override_id", "render", "resolve", "assemble", "AskServer", "Resolution"]

_C1, _C2, _M32 = 0xCC9E2D51, 0x1B873593, 0xFFFFFFFF


def murmur3_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3 x86_32."""
    h = seed & _M32
    n = len(data)
    end = n - n % 4
    for i in range(0, end, 4):
        k = data[i] | data[i + 1] << 8 | data[i + 2] << 16 | data[i + 3] << 24
        k = (k * _C1) & _M32
        k = ((k << 15) | (k >> 17)) & _M32
        k = (k * _C2) & _M32
        h ^= k
        h = ((h << 13) | (h >> 19)) & _M32
        h = (h * 5 + 0xE6546B64) & _M32
    k = 0
    tail = n & 3
    if tail == 3:
        k ^= data[end + 2] << 16
    if tail >= 2:
        k ^= data[end + 1] << 8
    if tail >= 1:
        k ^= data[end]
        k = (k * _C1) & _M32
        k = ((k << 15) | (k >> 17)) & _M32
        k = (k * _C2) & _M32
        h ^= k
    h ^= n
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    h ^= h >> 16
    return h


def bucket(release_id: str, key: str) -> int:
    return murmur3_32(f"{release_id}:{key}".encode()) % 10000


def override_id(release_id: str, key: str) -> str:
    return hashlib.sha256(f"{release_id}:{key}".encode()).hexdigest()


_PLACEHOLDER = re.compile(r"\{\{[ \t]*([A-Za-z_][A-Za-z0-9_]*)[ \t]*\}\}")


def render(s: str, variables: Mapping[str, str]) -> str:
    """One pass: a substituted value is never expanded again."""
    if "{{" not in s:
        return s
    return _PLACEHOLDER.sub(lambda m: variables.get(m.group(1), ""), s)


def _err(code: str, status: int, detail: str, **fields: Any) -> PromptdError:
    cls = CODES.get(code, PromptdError)
    return cls(status, code, detail, fields)


_IDENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")


def _check_ident(field: str, v: str) -> None:
    if not _IDENT.match(v):
        raise _err("invalid_id", 400, f"{field} must be 1..128 chars of [A-Za-z0-9._-]", field=field)


def _check_opaque(field: str, v: str) -> None:
    if not v or len(v) > 256 or not v.isprintable() or (not v.isascii() and len(v.encode()) > 256):
        raise _err("invalid_id", 400, f"{field} must be 1..256 bytes of printable UTF-8", field=field)


class AskServer(Exception):
    """Local evaluation cannot answer: ask promptd. ``reason`` is
    ``pin_unknown`` (a session whose pin the caller does not know),
    ``pin_revoked`` (promptd re-pins it, a write) or ``version_missing``
    (the bundle does not hold the version)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


@dataclass(frozen=True)
class Resolution:
    agent: str
    env: str
    version: int
    content_hash: str
    config: Mapping[str, Any]
    release: Optional[dict[str, Any]]  # the trace, as the server writes it
    pinned: bool

    def to_json(self) -> dict[str, Any]:
        """The body promptd answers to GET .../prompt for this resolution."""
        return {"agent": self.agent, "env": self.env, "version": self.version, "content_hash": self.content_hash,
                "config": self.config, "release": self.release, "pinned": self.pinned, "repinned_from": None}


def _percent(bp: int) -> Union[int, float]:
    return bp // 100 if bp % 100 == 0 else float(f"{bp // 100}.{bp % 100:02d}")


_ACTIVE = ("running", "paused")


@dataclass(frozen=True)
class _Release:
    id: str
    basis_points: int
    percent: Union[int, float]
    baseline: int
    candidate: int
    by_session: bool
    candidates: frozenset[str]  # override ids, lower-case hex
    baselines: frozenset[str]


@dataclass(frozen=True)
class EnvView:
    """One env of a bundle, prepared for resolving (built once per bundle)."""

    agent: str
    env: str
    version: int
    revoked: frozenset[int]
    release: Optional[_Release]
    versions: Mapping[str, Any]


def env_view(bundle: Mapping[str, Any], agent: str, env: str) -> EnvView:
    """The env's view; the server's errors for an unknown agent or env."""
    a = (bundle.get("agents") or {}).get(agent)
    if a is None:
        _check_ident("agent", agent)
        raise _err("agent_not_found", 404, f"no agent {agent}")
    e = (a.get("envs") or {}).get(env)
    if e is None:
        _check_ident("env", env)
        raise _err("no_pointer", 409, "the env has no pointer yet: no version was published to it")
    rel = e.get("release")
    r: Optional[_Release] = None
    if rel is not None and rel.get("state") in _ACTIVE:
        bp = int(rel.get("basis_points") or 0)
        ov = rel.get("overrides") or {}
        r = _Release(id=str(rel["id"]), basis_points=bp, percent=_percent(bp),
                     baseline=int(rel["baseline_version"]), candidate=int(rel["candidate_version"]),
                     by_session=rel.get("stickiness") == "session",
                     candidates=frozenset(str(i).lower() for i in ov.get("candidate") or ()),
                     baselines=frozenset(str(i).lower() for i in ov.get("baseline") or ()))
    return EnvView(agent=agent, env=env, version=int(e["version"]),
                   revoked=frozenset(int(v) for v in e.get("revoked") or ()), release=r,
                   versions=a.get("versions") or {})


def _decide(r: _Release, revoked: frozenset[int], user_id: Optional[str], session_id: Optional[str],
            bucket_of: Callable[[str, str], int]) -> tuple[int, dict[str, Any]]:
    trace: dict[str, Any] = {"id": r.id, "arm": "baseline", "bucket": None, "percent": r.percent,
                             "reason": "bucket"}
    key = session_id if r.by_session or not user_id else user_id
    if key:
        b = bucket_of(r.id, key)
        trace["bucket"] = b
        oid = override_id(r.id, key) if r.candidates or r.baselines else None
        if oid is not None and oid in r.candidates:
            trace["arm"], trace["reason"] = "candidate", "override"
        elif oid is not None and oid in r.baselines:
            trace["arm"], trace["reason"] = "baseline", "override"
        elif b < r.basis_points:
            trace["arm"] = "candidate"
    version = r.baseline
    if trace["arm"] == "candidate":
        if r.candidate in revoked:
            trace["arm"] = "baseline"
        else:
            version = r.candidate
    return version, trace


def resolve(bundle: Mapping[str, Any], agent: str, env: str, user_id: Optional[str] = None,
            session_id: Optional[str] = None, pinned_version: Optional[int] = None,
            extra_versions: Optional[Mapping[tuple[str, int], Mapping[str, Any]]] = None) -> Resolution:
    """The version this caller gets. ``pinned_version`` is the session's pin
    (the session's own user_id must be passed as ``user_id``).
    ``extra_versions`` holds versions read apart from the bundle (versions
    never change), for pins the bundle does not name."""
    return resolve_view(env_view(bundle, agent, env), user_id, session_id, pinned_version, extra_versions)


def resolve_view(view: EnvView, user_id: Optional[str] = None, session_id: Optional[str] = None,
                 pinned_version: Optional[int] = None,
                 extra_versions: Optional[Mapping[tuple[str, int], Mapping[str, Any]]] = None,
                 bucket_of: Callable[[str, str], int] = bucket) -> Resolution:
    """resolve() on a prepared view (LocalPrompts keeps one per env)."""
    if user_id is not None:
        _check_opaque("user_id", user_id)
    if session_id is not None:
        _check_ident("session_id", session_id)
    versions, rel, revoked = view.versions, view.release, view.revoked
    trace: Optional[dict[str, Any]] = None
    pinned = False
    if session_id is not None and pinned_version is None:
        raise AskServer("pin_unknown", f"session {session_id}")
    if pinned_version is not None:
        snap = versions.get(str(pinned_version))
        if snap is None and extra_versions:
            snap = extra_versions.get((view.agent, pinned_version))
        if pinned_version in revoked:
            raise AskServer("pin_revoked", f"session {session_id}: pinned version {pinned_version}")
        if snap is None:
            raise AskServer("version_missing", f"session {session_id}: pinned version {pinned_version}")
        version, pinned = pinned_version, True
        if rel is not None and version in (rel.candidate, rel.baseline):
            _, trace = _decide(rel, revoked, user_id, session_id, bucket_of)
            trace["reason"] = "pinned"
            trace["arm"] = "candidate" if version == rel.candidate else "baseline"
    else:
        if rel is not None:
            version, trace = _decide(rel, revoked, user_id, session_id, bucket_of)
        else:
            version = view.version
        snap = versions.get(str(version))
        if snap is None:
            raise AskServer("version_missing", f"version {version} of {view.agent}")
    return Resolution(agent=view.agent, env=view.env, version=version,
                      content_hash=str(snap.get("content_hash", "")), config=snap.get("config") or {},
                      release=trace, pinned=pinned)


MAX_LIST_ITEMS = 1024


def _expected(decl: Mapping[str, Any]) -> str:
    t = decl.get("type")
    if t == "number":
        return "a number"
    if t == "boolean":
        return "true or false"
    if t == "enum":
        return "one of " + ", ".join(str(x) for x in decl.get("values") or [])
    if t == "string_list":
        return f"a list of at most {MAX_LIST_ITEMS} strings"
    return "a string"


def format_number(f: float) -> str:
    """ECMAScript's Number::toString of a double (what JavaScript's
    String(n) and the server write): the shortest digits that round-trip,
    plain from 1e-6 up to 1e21, exponent form beyond ("1e+21", "1.5e-7");
    -0 as "0"."""
    if f == 0:
        return "0"
    r = repr(f)  # the shortest digits; in exponent form below 1e-4 and from 1e16
    if abs(f) >= 1e21 or abs(f) < 1e-6:
        mant, _, exp = r.partition("e")
        if mant.endswith(".0"):
            mant = mant[:-2]
        n = int(exp)
        return f"{mant}e{'+' if n >= 0 else '-'}{abs(n)}"
    s = format(decimal.Decimal(r), "f")
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s


def render_value(decl: Mapping[str, Any], v: Any) -> Optional[str]:
    """A value's text in a template, as the server writes it; None: not of
    the declaration's type (a string when it declares none)."""
    t = decl.get("type")
    if t == "number":
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        try:
            f = float(v)
        except OverflowError:
            return None
        if math.isinf(f) or math.isnan(f):
            return None
        return format_number(f)
    if t == "boolean":
        return ("true" if v else "false") if isinstance(v, bool) else None
    if t == "string_list":
        if not isinstance(v, (list, tuple)) or len(v) > MAX_LIST_ITEMS or not all(isinstance(x, str) for x in v):
            return None
        return ", ".join(v)
    if not isinstance(v, str):
        return None
    if t == "enum" and v not in (decl.get("values") or []):
        return None
    return v


def bind(config: Mapping[str, Any], variables: Optional[Mapping[str, Any]]) -> dict[str, str]:
    """Each value of its variable's type (a string when untyped); a required
    variable without one is missing; defaults fill the rest; undeclared
    extras are ignored. Each value is rendered as its template text."""
    given = variables or {}
    out: dict[str, str] = {}
    decls = config.get("variables") or {}
    for name in sorted(decls):
        decl = decls[name] or {}
        v = given.get(name)
        if v is not None:
            s = render_value(decl, v)
            if s is None:
                raise _err("invalid_variable", 422, f"variable {name} must be {_expected(decl)}", variable=name,
                           field=f"variables.{name}")
            out[name] = s
        elif decl.get("default") is not None:
            s = render_value(decl, decl["default"])
            if s is None:
                raise _err("invalid_variable", 422, f"variable {name}'s default is not {_expected(decl)}",
                           variable=name, field=f"variables.{name}")
            out[name] = s
        elif decl.get("required"):
            raise _err("missing_variable", 422, f"required variable {name} is missing", variable=name,
                       field=f"variables.{name}")
    return out


def system_message(config: Mapping[str, Any], v: Mapping[str, str]) -> str:
    parts = [render(str(config.get("system", "")), v)]
    skills = config.get("skills") or []
    if skills:
        parts.append("\n\n# Skills")
        for s in skills:
            parts.append("\n\n## " + str(s.get("name", "")) + "\n" + render(str(s.get("instructions", "")), v))
    memory = config.get("memory") or []
    if memory:
        parts.append("\n\n# Memory")
        for m in memory:
            parts.append("\n- " + render(str(m), v))
    return "".join(parts)


def history_message(turn: Mapping[str, Any]) -> dict[str, Any]:
    """A session turn as an assembled message: role, content, and name,
    tool_call_id, tool_calls when set."""
    out: dict[str, Any] = {"role": turn.get("role"), "content": turn.get("content")}
    for k in ("name", "tool_call_id"):
        if turn.get(k):
            out[k] = turn[k]
    if turn.get("tool_calls") is not None:
        out["tool_calls"] = turn["tool_calls"]
    return out


DEFAULT_MAX_HISTORY_TURNS = 1000
MAX_HISTORY_TURNS_REQUEST = 10000


def cut_history(turns: Sequence[Mapping[str, Any]], max_turns: int) -> list[Mapping[str, Any]]:
    """The newest ``max_turns``; when that may have left older turns out,
    leading tool turns are dropped too (never separating tool answers from
    the assistant turn with tool_calls)."""
    if max_turns <= 0 or len(turns) < max_turns:
        return list(turns)
    out = list(turns[len(turns) - max_turns:])
    while out and out[0].get("role") == "tool":
        out.pop(0)
    return out


_RESERVED_MODEL_KEYS = ("messages", "model", "stream", "tools")


def assemble(bundle: Mapping[str, Any], agent: str, env: str, variables: Optional[Mapping[str, Any]] = None,
             user_id: Optional[str] = None, session_id: Optional[str] = None,
             pinned_version: Optional[int] = None, history: Optional[Sequence[Mapping[str, Any]]] = None,
             max_history_turns: Optional[int] = None, format: str = "plain",
             resolution: Optional[Resolution] = None) -> dict[str, Any]:
    """The assemble answer body (plain) or the Chat Completions request
    body (openai), as the server would answer it."""
    if format not in ("plain", "openai"):
        raise _err("invalid_field", 400, "format must be plain or openai", field="format")
    res = resolution or resolve(bundle, agent, env, user_id, session_id, pinned_version)
    return assemble_resolved(res, variables, history, max_history_turns, format)


Rendered = dict[tuple[str, tuple[tuple[str, str], ...]], tuple[tuple[str, str], ...]]


def fixed_messages(cfg: Mapping[str, Any], v: Mapping[str, str]) -> list[tuple[str, str]]:
    """(role, content) of the system message and the config's messages."""
    out = [("system", system_message(cfg, v))]
    for m in cfg.get("messages") or []:
        out.append((str(m.get("role")), render(str(m.get("content", "")), v)))
    return out


def assemble_resolved(res: Resolution, variables: Optional[Mapping[str, Any]],
                      history: Optional[Sequence[Mapping[str, Any]]], max_history_turns: Optional[int],
                      format: str, rendered: Optional[Rendered] = None) -> dict[str, Any]:
    """The answer for a resolution. ``rendered`` (optional) remembers the
    rendered messages per (content_hash, variables): a version never
    changes, so an entry never goes stale."""
    if max_history_turns is not None and not 0 <= max_history_turns <= MAX_HISTORY_TURNS_REQUEST:
        raise _err("invalid_field", 400, f"max_history_turns must be 0..{MAX_HISTORY_TURNS_REQUEST}",
                   field="max_history_turns")
    cfg = res.config
    v = bind(cfg, variables)
    fixed: Sequence[tuple[str, str]]
    if rendered is None:
        fixed = fixed_messages(cfg, v)
    else:
        key = (res.content_hash, tuple(sorted(v.items())))
        got = rendered.get(key)
        if got is None:
            if len(rendered) >= 10_000:
                rendered.clear()
            got = rendered[key] = tuple(fixed_messages(cfg, v))
        fixed = got
    messages: list[dict[str, Any]] = [{"role": r, "content": c} for r, c in fixed]
    if history:
        cut = cut_history(history, max_history_turns or DEFAULT_MAX_HISTORY_TURNS)
        messages.extend(history_message(t) for t in cut)
    tools = list(cfg.get("tools") or [])
    model = cfg.get("model")
    if format == "openai":
        return _openai(model, messages, tools)
    return {"version": res.version, "content_hash": res.content_hash, "messages": messages, "tools": tools,
            "model": model, "release": res.release, "pinned": res.pinned}


def _openai(model: Any, messages: list[dict[str, Any]], tools: list[Any]) -> dict[str, Any]:
    m = model if isinstance(model, Mapping) else {}
    name = m.get("name")
    if not isinstance(name, str) or not name:
        raise _err("invalid_config", 422, "the openai format needs model.name, a non-empty string",
                   field="config.model.name")
    for k in _RESERVED_MODEL_KEYS:
        if k in m:
            raise _err("invalid_config", 422, f"model may not set {k} in the openai format", field=f"config.model.{k}")
    # model.extra holds a provider's own keys: they go to the top level,
    # sorted with the others; one that is reserved or repeats a key set
    # beside it is refused, as the server does.
    keys: dict[str, Any] = {k: v for k, v in m.items() if k not in ("name", "extra")}
    if "extra" in m:
        extra = m["extra"]
        if not isinstance(extra, Mapping):
            raise _err("invalid_config", 422, "model.extra must be an object", field="config.model.extra")
        for k in sorted(extra):
            if k in _RESERVED_MODEL_KEYS or k in ("name", "extra"):
                raise _err("invalid_config", 422, f"model.extra may not set {k}: promptd assembles it",
                           field=f"config.model.extra.{k}")
            if k in m:
                raise _err("invalid_config", 422, f"model.extra.{k} would shadow model.{k}: set it once",
                           field=f"config.model.extra.{k}")
            keys[k] = extra[k]
    body: dict[str, Any] = {"model": name}
    for k in sorted(keys):
        body[k] = keys[k]
    body["messages"] = messages
    if tools:
        body["tools"] = tools
    return body
