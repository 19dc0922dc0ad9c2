"""Typed answers of promptd (api/openapi.yaml). Each keeps the decoded JSON in ``raw``
so that fields added by a newer server are never lost."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Mapping, Optional, TypeVar

T = TypeVar("T")


def _opt_int(v: Any) -> Optional[int]:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _opt_str(v: Any) -> Optional[str]:
    return v if isinstance(v, str) else None


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def _opt_dict(v: Any) -> Optional[dict[str, Any]]:
    return v if isinstance(v, dict) else None


def _dicts(v: Any) -> list[dict[str, Any]]:
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


class _ListItem:
    """What a list's items had when they were dicts: ``item["id"]`` and
    ``item.get("id")`` read the JSON kept in ``raw`` (deprecated: read the
    fields, ``item.id``)."""

    raw: dict[str, Any]

    def __getitem__(self, key: str) -> Any:
        warnings.warn(f"list items are {type(self).__name__} now: read item.{key}, not item[{key!r}]",
                      DeprecationWarning, stacklevel=2)
        return self.raw[key]

    def get(self, key: str, default: Any = None) -> Any:
        """``raw.get(key, default)`` (deprecated: read the field)."""
        warnings.warn(f"list items are {type(self).__name__} now: read item.{key}, not item.get({key!r})",
                      DeprecationWarning, stacklevel=2)
        return self.raw.get(key, default)


@dataclass
class Trace:
    """Why a release decided the version: ``arm`` baseline|candidate,
    ``bucket`` (None without a key), ``reason`` bucket|override|pinned."""

    id: str
    arm: str
    bucket: Optional[int]
    percent: Any = None
    reason: Optional[str] = None

    @staticmethod
    def from_json(d: Any) -> Optional["Trace"]:
        if not isinstance(d, Mapping):
            return None
        return Trace(id=_str(d.get("id")), arm=_str(d.get("arm")), bucket=_opt_int(d.get("bucket")),
                     percent=d.get("percent"), reason=d.get("reason"))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "arm": self.arm, "bucket": self.bucket}
        if self.percent is not None:
            out["percent"] = self.percent
        if self.reason is not None:
            out["reason"] = self.reason
        return out


@dataclass
class Resolved:
    """GET .../prompt: the version this caller gets, its config and why."""

    agent: str
    env: str
    version: int
    content_hash: str
    config: Mapping[str, Any]
    release: Optional[Trace]
    pinned: bool
    repinned_from: Optional[int] = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def from_json(d: dict[str, Any]) -> "Resolved":
        return Resolved(agent=_str(d.get("agent")), env=_str(d.get("env")), version=int(d["version"]),
                        content_hash=_str(d.get("content_hash")), config=dict(d.get("config") or {}),
                        release=Trace.from_json(d.get("release")), pinned=bool(d.get("pinned")),
                        repinned_from=_opt_int(d.get("repinned_from")), raw=d)


@dataclass
class Assembled:
    """POST .../assemble: ``body`` is the exact answer (for ``format="openai"``
    the body of a Chat Completions request, ready to send).

    ``tools`` are the config's tools (OpenAI function-tool shape, ``[]`` when
    it has none) and ``model`` its model settings (``{"name": "gpt-4o",
    "temperature": 0.2, ...}`` as written, None when it has none), the same
    for both formats: for ``format="openai"`` they are read back from the
    body (``model`` is its ``model`` as ``name`` plus the other top-level
    keys promptd put there; a provider's keys under ``model.extra`` are
    among them, flat, since the openai body does not say which they were)."""

    format: str
    body: dict[str, Any]
    version: Optional[int]
    release: Optional[Trace]
    tools: list[dict[str, Any]] = field(default_factory=list)
    model: Optional[dict[str, Any]] = None

    @property
    def model_name(self) -> Optional[str]:
        """``model["name"]``, or None."""
        name = self.model.get("name") if self.model is not None else None
        return name if isinstance(name, str) else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        m = self.body.get("messages")
        return list(m) if isinstance(m, list) else []


@dataclass(frozen=True)
class Turn:
    role: str
    content: Any = None
    name: Optional[str] = None
    tool_call_id: Optional[str] = None
    tool_calls: Optional[list[Any]] = None
    metadata: Optional[dict[str, Any]] = None
    # Set on a turn read from promptd (seq, created_at); a turn to append has neither.
    seq: Optional[int] = None
    created_at: Optional[str] = None

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "Turn":
        return Turn(role=_str(d.get("role")), content=d.get("content"), name=d.get("name"),
                    tool_call_id=d.get("tool_call_id"), tool_calls=d.get("tool_calls"),
                    metadata=d.get("metadata"), seq=_opt_int(d.get("seq")), created_at=d.get("created_at"))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        for k in ("name", "tool_call_id", "tool_calls", "metadata"):
            v = getattr(self, k)
            if v is not None:
                out[k] = v
        return out


@dataclass(frozen=True)
class LeaseInfo:
    holder: str
    fence: int
    expires_at: str


def _lease_info(v: Any) -> Optional[LeaseInfo]:
    if not isinstance(v, Mapping):
        return None
    return LeaseInfo(holder=_str(v.get("holder")), fence=_int(v.get("fence")), expires_at=_str(v.get("expires_at")))


@dataclass(frozen=True)
class SessionSummary(_ListItem):
    """A session as GET /v1/sessions lists it (``list_sessions``): no
    metadata, idle TTL, turns nor state keys (``get_session`` has them)."""

    session_id: str
    agent: str
    env: str
    user_id: Optional[str]
    pinned_version: int
    revision: int
    state: str  # open or closed
    fence: int
    lease: Optional[LeaseInfo]  # the holder and fence while held (open sessions only)
    turn_count: int
    created_at: str
    updated_at: str
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "SessionSummary":
        return SessionSummary(
            session_id=_str(d.get("session_id")), agent=_str(d.get("agent")), env=_str(d.get("env")),
            user_id=_opt_str(d.get("user_id")), pinned_version=_int(d.get("pinned_version")),
            revision=_int(d.get("revision")), state=_str(d.get("state")), fence=_int(d.get("fence")),
            lease=_lease_info(d.get("lease")), turn_count=_int(d.get("turn_count")),
            created_at=_str(d.get("created_at")), updated_at=_str(d.get("updated_at")), raw=dict(d))


@dataclass(frozen=True)
class Session:
    """A session: as GET /v1/sessions/{id} answers it (SessionDetail), or as
    create and close do (no turns nor state keys: ``turns`` and ``state_keys``
    are then empty, ``next_since`` None)."""

    session_id: str
    agent: str
    env: str
    user_id: Optional[str]
    pinned_version: int
    revision: int
    state: str
    fence: int
    lease: Optional[LeaseInfo]
    metadata: Any
    turns: list[Turn]
    state_keys: list[str]
    next_since: Optional[int]
    idle_ttl_ms: int = 0
    turn_count: int = 0
    created_at: str = ""
    updated_at: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def next(self) -> Optional[int]:
        """``next_since``, by its former name."""
        return self.next_since

    @staticmethod
    def from_json(d: dict[str, Any]) -> "Session":
        lease = d.get("lease")
        return Session(
            session_id=_str(d.get("session_id")), agent=_str(d.get("agent")), env=_str(d.get("env")),
            user_id=d.get("user_id") or None, pinned_version=int(d.get("pinned_version") or 0),
            revision=int(d.get("revision") or 0), state=_str(d.get("state")), fence=int(d.get("fence") or 0),
            lease=LeaseInfo(holder=_str(lease.get("holder")), fence=int(lease.get("fence") or 0),
                            expires_at=_str(lease.get("expires_at"))) if isinstance(lease, Mapping) else None,
            metadata=d.get("metadata"), turns=[Turn.from_json(t) for t in d.get("turns") or []],
            state_keys=list(d.get("state_keys") or []), next_since=_opt_int(d.get("next_since")),
            idle_ttl_ms=int(d.get("idle_ttl_ms") or 0), turn_count=int(d.get("turn_count") or 0),
            created_at=_str(d.get("created_at")), updated_at=_str(d.get("updated_at")), raw=d)


@dataclass(frozen=True)
class Appended:
    revision: int
    seqs: list[int]


@dataclass(frozen=True)
class StateEntry:
    key: str
    value: Any
    revision: int


@dataclass(frozen=True)
class LeaseGrant:
    """A session lease: pass ``token`` to renew/release, write with ``fence``."""

    lease_id: str
    token: str
    fence: int
    expires_at: str

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "LeaseGrant":
        return LeaseGrant(lease_id=_str(d.get("lease_id")), token=_str(d.get("token")),
                          fence=int(d.get("fence") or 0), expires_at=_str(d.get("expires_at")))


@dataclass(frozen=True)
class Leases:
    """A generic lease on several resources, one fence per resource."""

    lease_id: str
    token: str
    fences: dict[str, int]
    expires_at: str

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "Leases":
        return Leases(lease_id=_str(d.get("lease_id")), token=_str(d.get("token")),
                      fences={k: int(v) for k, v in (d.get("fences") or {}).items()},
                      expires_at=_str(d.get("expires_at")))


@dataclass(frozen=True)
class VersionMerge:
    """A merged version's parents: the base its author started from and the
    latest version it was merged over."""

    base_version: int
    theirs_version: int

    @staticmethod
    def from_json(d: Any) -> Optional["VersionMerge"]:
        if not isinstance(d, Mapping):
            return None
        return VersionMerge(base_version=int(d.get("base_version") or 0),
                            theirs_version=int(d.get("theirs_version") or 0))


@dataclass(frozen=True)
class Version(_ListItem):
    agent: str
    version: int
    config: dict[str, Any]
    content_hash: str
    message: str
    created_by: str
    created_at: str
    merge: Optional[VersionMerge] = None  # set on a version made by a merge
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "Version":
        return Version(agent=_str(d.get("agent")), version=int(d["version"]), config=dict(d.get("config") or {}),
                       content_hash=_str(d.get("content_hash")), message=_str(d.get("message")),
                       created_by=_str(d.get("created_by")), created_at=_str(d.get("created_at")),
                       merge=VersionMerge.from_json(d.get("merge")), raw=dict(d))


@dataclass(frozen=True)
class Agent(_ListItem):
    """An agent as GET /v1/agents lists it: its latest version and, per
    env, the version the env's pointer names."""

    agent: str
    latest_version: int
    latest_content_hash: str
    envs: dict[str, int]
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "Agent":
        envs = d.get("envs")
        return Agent(agent=_str(d.get("agent")), latest_version=_int(d.get("latest_version")),
                     latest_content_hash=_str(d.get("latest_content_hash")),
                     envs={str(k): _int(v) for k, v in envs.items()} if isinstance(envs, Mapping) else {},
                     raw=dict(d))


@dataclass(frozen=True)
class EnvPointer:
    agent: str
    env: str
    version: int
    revision: int
    revoked: list[int]
    release: Optional[dict[str, Any]]
    updated_at: str = ""
    updated_by: str = ""
    history: list[dict[str, Any]] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def from_json(d: dict[str, Any]) -> "EnvPointer":
        rel = d.get("release")
        return EnvPointer(agent=_str(d.get("agent")), env=_str(d.get("env")), version=int(d.get("version") or 0),
                          revision=int(d.get("revision") or 0), revoked=[int(v) for v in d.get("revoked") or []],
                          release=rel if isinstance(rel, dict) else None, updated_at=_str(d.get("updated_at")),
                          updated_by=_str(d.get("updated_by")), history=_dicts(d.get("history")), raw=d)


@dataclass(frozen=True)
class Release(_ListItem):
    id: str
    agent: str
    env: str
    state: str
    baseline_version: int
    candidate_version: int
    percent: Any
    stickiness: str
    revision: int
    steps: list[dict[str, Any]] = field(default_factory=list)
    steps_applied: int = 0
    next_step_at: Optional[str] = None
    message: str = ""
    created_by: str = ""
    created_at: str = ""
    updated_at: str = ""
    paused_by_guard: bool = False
    # None where promptd leaves them out: history in lists, overrides and guard when unset.
    history: Optional[list[dict[str, Any]]] = None
    overrides: Optional[dict[str, Any]] = None
    guard: Optional[dict[str, Any]] = None
    stats: Optional[dict[str, Any]] = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def from_json(d: dict[str, Any]) -> "Release":
        history = d.get("history")
        return Release(id=_str(d.get("id")), agent=_str(d.get("agent")), env=_str(d.get("env")),
                       state=_str(d.get("state")), baseline_version=int(d.get("baseline_version") or 0),
                       candidate_version=int(d.get("candidate_version") or 0), percent=d.get("percent"),
                       stickiness=_str(d.get("stickiness")), revision=int(d.get("revision") or 0),
                       steps=_dicts(d.get("steps")), steps_applied=int(d.get("steps_applied") or 0),
                       next_step_at=d.get("next_step_at"), message=_str(d.get("message")),
                       created_by=_str(d.get("created_by")), created_at=_str(d.get("created_at")),
                       updated_at=_str(d.get("updated_at")), paused_by_guard=d.get("paused_by_guard") is True,
                       history=_dicts(history) if isinstance(history, list) else None,
                       overrides=_opt_dict(d.get("overrides")), guard=_opt_dict(d.get("guard")),
                       stats=_opt_dict(d.get("stats")), raw=d)


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list: ``items`` are the route's models
    (``Page[SessionSummary]`` for ``list_sessions``, ``Page[Release]``,
    ...), ``next`` the cursor of the next page (None after the last)."""

    items: list[T]
    next: Optional[str]


def read_page(d: Any, item: Callable[[dict[str, Any]], T]) -> Page[T]:
    """The page (``{"items": [...], "next": ...}``) in ``d``, each item (a
    JSON object) read by ``item``."""
    page: Mapping[str, Any] = d if isinstance(d, Mapping) else {}
    items = page.get("items")
    return Page(items=[item(dict(x)) for x in items if isinstance(x, Mapping)] if isinstance(items, list) else [],
                next=_opt_str(page.get("next")))
