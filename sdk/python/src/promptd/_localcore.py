"""The pure parts of LocalPrompts, shared by the sync and async flavours:
the bundle held in memory, the session pins learned from promptd, the
exposure counts, the SSE parser and the disk copy."""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Optional, Sequence

from . import evaluate
from ._http import new_key
from .evaluate import Resolution
from .models import Assembled, Resolved, Session, Trace

# Feed actions that can change what a bundle holds (api/openapi.yaml, Events).
RELEVANT = ("pointer.switched", "version.revoked", "version.unrevoked", "env.rolled_back")


def relevant(action: str) -> bool:
    return action in RELEVANT or action.startswith("release.")


def _cursor(v: Any) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return 0


@dataclass
class Pin:
    agent: str
    env: str
    version: int
    user_id: Optional[str]


class Core:
    """The bundle and what resolves need; thread-safe for one writer (the
    watcher) and many readers (a bundle is replaced whole, never mutated)."""

    def __init__(self, agents: Optional[Sequence[str]], envs: Optional[Sequence[str]],
                 cache_path: Optional[str]) -> None:
        self.agents = list(agents) if agents else None
        self.envs = list(envs) if envs else None
        self.cache_path = cache_path
        self.bundle: Optional[dict[str, Any]] = None
        self.etag: Optional[str] = None
        self.cursor = 0
        self.views: dict[tuple[str, str], evaluate.EnvView] = {}  # of the bundle held
        self.buckets: dict[tuple[str, str], int] = {}
        self.rendered: evaluate.Rendered = {}
        self.pins: dict[str, Pin] = {}
        self.versions: dict[tuple[str, int], dict[str, Any]] = {}  # pinned versions the bundle leaves out
        self.exposures = Exposures()
        self.applied = 0  # bundles applied (tests and figures)
        self.from_disk = False

    def params(self) -> dict[str, str]:
        p: dict[str, str] = {}
        if self.agents:
            p["agents"] = ",".join(self.agents)
        if self.envs:
            p["envs"] = ",".join(self.envs)
        return p

    def wants(self, ev: Mapping[str, Any]) -> bool:
        if not relevant(str(ev.get("action", ""))):
            return False
        if self.agents and ev.get("agent") and ev.get("agent") not in self.agents:
            return False
        if self.envs and ev.get("env") and ev.get("env") not in self.envs:
            return False
        return _cursor(ev.get("seq")) > self.cursor

    def apply(self, bundle: dict[str, Any], etag: Optional[str]) -> bool:
        """Take a bundle unless it is older than the one held."""
        c = _cursor(bundle.get("cursor"))
        if self.bundle is not None and c < self.cursor:
            return False
        self.bundle, self.etag, self.cursor = bundle, etag, max(c, self.cursor)
        self.views = {}
        self.applied += 1
        # A pin that the bundle now revokes is asked again of the server.
        for sid, pin in list(self.pins.items()):
            e = ((bundle.get("agents") or {}).get(pin.agent) or {}).get("envs", {}).get(pin.env)
            if e is not None and pin.version in (e.get("revoked") or ()):
                del self.pins[sid]
        return True

    def missing_pin(self, session_id: str) -> Optional[tuple[str, int]]:
        """The (agent, version) of a known, unrevoked pin that neither the
        bundle nor the versions read apart hold."""
        pin = self.pins.get(session_id)
        if pin is None or self.bundle is None or (pin.agent, pin.version) in self.versions:
            return None
        a = (self.bundle.get("agents") or {}).get(pin.agent) or {}
        e = (a.get("envs") or {}).get(pin.env)
        if e is None or pin.version in (e.get("revoked") or ()) or str(pin.version) in (a.get("versions") or {}):
            return None
        return pin.agent, pin.version

    def learn(self, s: Session) -> Optional[Pin]:
        if s.state != "open" or not s.pinned_version:
            return None
        pin = Pin(s.agent, s.env, s.pinned_version, s.user_id)
        self.pins[s.session_id] = pin
        return pin

    def resolve(self, agent: str, env: str, user_id: Optional[str], session_id: Optional[str]) -> Resolution:
        """Local resolution; AskServer when promptd must answer (a session
        not seen yet, a revoked or unknown pin)."""
        if self.bundle is None:
            raise evaluate.AskServer("version_missing", "no bundle yet")
        pinned: Optional[int] = None
        if session_id is not None:
            pin = self.pins.get(session_id)
            if pin is None or pin.agent != agent or pin.env != env:
                raise evaluate.AskServer("pin_unknown", f"session {session_id}")
            pinned, user_id = pin.version, pin.user_id
        view = self.views.get((agent, env))
        if view is None:
            view = evaluate.env_view(self.bundle, agent, env)
            self.views[(agent, env)] = view
        res = evaluate.resolve_view(view, user_id, session_id, pinned, self.versions, self.bucket)
        self.exposures.count(res)
        return res

    def bucket(self, release_id: str, key: str) -> int:
        """evaluate.bucket, remembered for the callers seen lately."""
        k = (release_id, key)
        b = self.buckets.get(k)
        if b is None:
            if len(self.buckets) >= 100_000:
                self.buckets.clear()
            b = self.buckets[k] = evaluate.bucket(release_id, key)
        return b

    # The disk copy.
    def save(self) -> None:
        if not self.cache_path or self.bundle is None:
            return
        data = json.dumps({"etag": self.etag, "bundle": self.bundle}, separators=(",", ":")).encode()
        d = os.path.dirname(os.path.abspath(self.cache_path))
        fd, tmp = tempfile.mkstemp(prefix=".promptd-bundle-", dir=d)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.cache_path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def load(self) -> bool:
        if not self.cache_path or not os.path.exists(self.cache_path):
            return False
        with open(self.cache_path, "rb") as f:
            d = json.load(f)
        if not isinstance(d, dict) or not isinstance(d.get("bundle"), dict):
            return False
        self.apply(d["bundle"], d.get("etag"))
        self.from_disk = True
        return True


def resolved(res: Resolution) -> Resolved:
    """The Resolved of a local resolution; its config is the bundle's own
    (shared, not copied: do not modify it)."""
    rel = res.release
    trace = Trace(id=rel["id"], arm=rel["arm"], bucket=rel["bucket"], percent=rel["percent"],
                  reason=rel["reason"]) if rel is not None else None
    return Resolved(agent=res.agent, env=res.env, version=res.version, content_hash=res.content_hash,
                    config=res.config, release=trace, pinned=res.pinned)


def assembled(body: dict[str, Any], res: Resolution, fmt: str) -> Assembled:
    return Assembled(format=fmt, body=body, version=res.version, release=Trace.from_json(res.release))


def minute_of(t: Optional[dt.datetime] = None) -> str:
    t = (t or dt.datetime.now(dt.timezone.utc)).replace(second=0, microsecond=0)
    return t.strftime("%Y-%m-%dT%H:%M:00.000Z")


ExposureKey = tuple[str, str, Optional[str], int, Optional[str], str]


@dataclass
class Batch:
    key: str
    items: list[dict[str, Any]]
    attempts: int = 0


@dataclass
class Exposures:
    """Local resolves counted per (agent, env, release_id, version, arm,
    minute); taken in batches of at most 1,000 items, each batch with its
    own Idempotency-Key, kept until promptd acknowledged it."""

    counts: dict[ExposureKey, int] = field(default_factory=dict)
    pending: list[Batch] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    sent: int = 0  # resolves acknowledged by promptd
    dropped: int = 0  # resolves in batches promptd refused (validation)
    _minute: str = ""
    _minute_at: int = -1

    def count(self, res: Resolution) -> None:
        rel = res.release
        now = int(time.time()) // 60
        if now != self._minute_at:
            self._minute, self._minute_at = minute_of(), now
        key: ExposureKey = (res.agent, res.env, rel["id"] if rel else None, res.version,
                            rel["arm"] if rel else None, self._minute)
        with self.lock:
            self.counts[key] = self.counts.get(key, 0) + 1

    def take(self, max_items: int = 1000) -> list[Batch]:
        """Move the counts into new batches; return every pending batch."""
        with self.lock:
            counts, self.counts = self.counts, {}
            items = []
            for (agent, env, rid, version, arm, minute), n in counts.items():
                it: dict[str, Any] = {"agent": agent, "env": env, "version": version, "count": n, "at": minute}
                if rid is not None:
                    it["release_id"], it["arm"] = rid, arm
                items.append(it)
            for i in range(0, len(items), max_items):
                self.pending.append(Batch(new_key(), items[i:i + max_items]))
            return list(self.pending)

    def done(self, b: Batch, accepted: bool) -> None:
        with self.lock:
            if b in self.pending:
                self.pending.remove(b)
            n = sum(int(i["count"]) for i in b.items)
            if accepted:
                self.sent += n
            else:
                self.dropped += n

    def empty(self) -> bool:
        with self.lock:
            return not self.counts and not self.pending


@dataclass
class SSEEvent:
    id: Optional[str]
    event: str
    data: str


class SSEParser:
    """Server-Sent Events, line by line (WHATWG rules that promptd uses:
    id, event, data; comments and blank-line dispatch)."""

    def __init__(self) -> None:
        self._id: Optional[str] = None
        self._event = ""
        self._data: list[str] = []

    def feed(self, line: str) -> Iterator[SSEEvent]:
        line = line.rstrip("\r\n")
        if line == "":
            if self._data or self._event:
                yield SSEEvent(self._id, self._event or "message", "\n".join(self._data))
            self._event, self._data = "", []
            return
        if line.startswith(":"):
            return
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "id":
            self._id = value
        elif name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)


def parse_event(ev: SSEEvent) -> Optional[dict[str, Any]]:
    try:
        d = json.loads(ev.data) if ev.data else {}
    except ValueError:
        return None
    if not isinstance(d, dict):
        return None
    d.setdefault("action", ev.event)
    if "seq" not in d and ev.id is not None:
        d["seq"] = ev.id
    return d
