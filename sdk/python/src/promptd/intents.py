"""Intents (api/openapi.yaml, "intents"): scopes an agent registers before a
batch of work, so others see the overlap before they collide.

``with client.intent(holder, scope, ttl_ms=30000) as it:`` registers the
intent (``it.overlaps`` are the live intents whose scope overlaps it; an
exclusive overlap raises :class:`~promptd.errors.IntentConflict` naming
them), renews it every ttl/3 on a thread, and makes the writes through
``it`` (``it.apply_batch``, ``it.update_record``) carry ``it.ref``, the
intent and its fence, which promptd checks in the write's transaction.
When the intent ends under the work (a renewal answers ``stale_fence``:
released by another, expired; or no renewal succeeded before the TTL ran
out) renewing stops, ``it.lost`` is set, the next write through ``it``
raises :class:`~promptd.errors.StaleFence` without calling promptd, and
leaving the block raises ``StaleFence``. Otherwise the block's end
releases the intent.

``async with aclient.intent(...) as it:`` renews on a task and, on loss,
also cancels the task running the body; the ``async with`` then raises
``StaleFence`` instead of ``CancelledError``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence, Union

import httpx

from ._calls import seg
from ._http import Call, decode
from .errors import PromptdError, StaleFence
from .lease import _AsyncHeld, _Keepalive

if TYPE_CHECKING:
    from .aio import AsyncClient
    from .batches import BoardBatch
    from .boards import Record
    from .client import Client


def _strs(v: Any) -> list[str]:
    return [x for x in v if isinstance(x, str)] if isinstance(v, list) else []


def _opt_str(v: Any) -> Optional[str]:
    return v if isinstance(v, str) else None


@dataclass(frozen=True)
class RecordScope:
    """Records of one board: ids, and id prefixes (a prefix covers every id
    it starts)."""

    board: str
    ids: list[str] = dataclasses.field(default_factory=list)
    prefixes: list[str] = dataclasses.field(default_factory=list)

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "RecordScope":
        return RecordScope(board=str(d.get("board", "")), ids=_strs(d.get("ids")), prefixes=_strs(d.get("prefixes")))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"board": self.board}
        if self.ids:
            out["ids"] = list(self.ids)
        if self.prefixes:
            out["prefixes"] = list(self.prefixes)
        return out


@dataclass(frozen=True)
class IntentScope:
    """What an intent covers: ``agents`` (names, or prefixes ending in ``*``)
    in ``envs``, whole ``boards``, and ``records`` of a board. An empty list
    names none of its kind; answers show the scope canonical (sorted,
    merged)."""

    agents: list[str] = dataclasses.field(default_factory=list)
    envs: list[str] = dataclasses.field(default_factory=list)
    boards: list[str] = dataclasses.field(default_factory=list)
    records: list[RecordScope] = dataclasses.field(default_factory=list)

    @staticmethod
    def from_json(d: Any) -> "IntentScope":
        if not isinstance(d, Mapping):
            return IntentScope()
        recs = d.get("records")
        return IntentScope(agents=_strs(d.get("agents")), envs=_strs(d.get("envs")), boards=_strs(d.get("boards")),
                           records=[RecordScope.from_json(r) for r in recs if isinstance(r, Mapping)]
                           if isinstance(recs, list) else [])

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k in ("agents", "envs", "boards"):
            v = getattr(self, k)
            if v:
                out[k] = list(v)
        if self.records:
            out["records"] = [r.to_json() for r in self.records]
        return out


ScopeLike = Union[IntentScope, Mapping[str, Any]]


def scope_json(scope: ScopeLike) -> dict[str, Any]:
    return scope.to_json() if isinstance(scope, IntentScope) else dict(scope)


@dataclass(frozen=True)
class IntentRef:
    """The intent a write is made under, with its fence."""

    id: str
    fence: int

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "fence": self.fence}


RefLike = Union[IntentRef, Mapping[str, Any]]


def ref_json(ref: Optional[RefLike]) -> Optional[dict[str, Any]]:
    if ref is None:
        return None
    return ref.to_json() if isinstance(ref, IntentRef) else dict(ref)


@dataclass(frozen=True)
class Intent:
    """An intent: ``state`` active|released|expired (an active one past its
    expiry reads as expired); ``fence`` grows in every space it takes."""

    id: str
    holder: str
    mode: str
    scope: IntentScope
    description: str
    fence: int
    state: str
    ttl_ms: int
    expires_at: str
    created_by: str
    created_at: str
    ended_at: Optional[str] = None
    raw: dict[str, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    @property
    def ref(self) -> IntentRef:
        return IntentRef(self.id, self.fence)

    @staticmethod
    def _args(d: Mapping[str, Any]) -> dict[str, Any]:
        return dict(id=str(d.get("id", "")), holder=str(d.get("holder", "")), mode=str(d.get("mode", "")),
                    scope=IntentScope.from_json(d.get("scope")), description=str(d.get("description") or ""),
                    fence=int(d.get("fence") or 0), state=str(d.get("state", "")), ttl_ms=int(d.get("ttl_ms") or 0),
                    expires_at=str(d.get("expires_at", "")), created_by=str(d.get("created_by", "")),
                    created_at=str(d.get("created_at", "")), ended_at=_opt_str(d.get("ended_at")), raw=dict(d))

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "Intent":
        return Intent(**Intent._args(d))


@dataclass(frozen=True)
class RegisteredIntent(Intent):
    """POST /v1/intents: the intent, and every live intent whose scope
    overlaps it (advisory ones, for an advisory registration)."""

    overlaps: list[Intent] = dataclasses.field(default_factory=list)

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "RegisteredIntent":
        over = d.get("overlaps")
        overlaps = [Intent.from_json(o) for o in over if isinstance(o, Mapping)] if isinstance(over, list) else []
        return RegisteredIntent(**Intent._args(d), overlaps=overlaps)


@dataclass(frozen=True)
class IntentPage:
    """GET /v1/intents: a page of live intents, in id order."""

    items: list[Intent]
    next: Optional[str]


# Call builders (sent by Client and AsyncClient).
def _intent(r: httpx.Response) -> Intent:
    return Intent.from_json(decode(r) or {})


def register(holder: str, scope: ScopeLike, mode: Optional[str], ttl_ms: Optional[int],
             description: Optional[str]) -> Call[RegisteredIntent]:
    body: dict[str, Any] = {"holder": holder, "scope": scope_json(scope)}
    for k, v in (("mode", mode), ("ttl_ms", ttl_ms), ("description", description)):
        if v is not None:
            body[k] = v
    return Call("POST", "/v1/intents", lambda r: RegisteredIntent.from_json(decode(r) or {}), json=body,
                idempotent=True)


Names = Union[str, Sequence[str], None]


def _names(v: Names) -> Optional[list[str]]:
    if v is None:
        return None
    return [v] if isinstance(v, str) else list(v)


def list_intents(agent: Names, env: Names, board: Names, record: Names, holder: Optional[str], limit: Optional[int],
                 cursor: Optional[str]) -> Call[IntentPage]:
    def parse(r: httpx.Response) -> IntentPage:
        d = decode(r) or {}
        return IntentPage(items=[Intent.from_json(x) for x in d.get("items") or [] if isinstance(x, Mapping)],
                          next=_opt_str(d.get("next")))
    return Call("GET", "/v1/intents", parse, params={"agent": _names(agent), "env": _names(env),
                                                     "board": _names(board), "record": _names(record),
                                                     "holder": holder, "limit": limit, "cursor": cursor})


def get(intent_id: str) -> Call[Intent]:
    return Call("GET", f"/v1/intents/{seg(intent_id)}", _intent)


def renew(intent_id: str, fence: int, ttl_ms: Optional[int]) -> Call[Intent]:
    body: dict[str, Any] = {"fence": fence}
    if ttl_ms is not None:
        body["ttl_ms"] = ttl_ms
    return Call("POST", f"/v1/intents/{seg(intent_id)}/renew", _intent, json=body)


def release(intent_id: str, fence: int) -> Call[Intent]:
    return Call("POST", f"/v1/intents/{seg(intent_id)}/release", _intent, json={"fence": fence})


# Held intents.
def intent_ended(it: Intent, detail: str) -> StaleFence:
    """The SDK's own StaleFence (status 0): the intent ran out before a
    renewal got through."""
    return StaleFence(0, "stale_fence", detail, {"intent_id": it.id, "state": "expired", "current_fence": it.fence})


class _Held:
    """What both flavours of a held intent share: the registration, its
    keepalive state and the local refusal of writes once it ended."""

    intent: Optional[RegisteredIntent]
    ka: _Keepalive

    def __init__(self, holder: str, scope: ScopeLike, mode: Optional[str], ttl_ms: int,
                 description: Optional[str]) -> None:
        self.holder, self.scope, self.mode, self.description = holder, scope, mode, description
        self.ka = _Keepalive(ttl_ms)
        self.intent = None
        self.released: Optional[Intent] = None

    @property
    def lost(self) -> threading.Event:
        return self.ka.lost

    @property
    def ref(self) -> IntentRef:
        if self.intent is None:
            raise RuntimeError("the intent is not registered yet (use it inside the with block)")
        return self.intent.ref

    @property
    def id(self) -> str:
        return self.ref.id

    @property
    def fence(self) -> int:
        return self.ref.fence

    @property
    def overlaps(self) -> list[Intent]:
        return list(self.intent.overlaps) if self.intent else []

    def _register(self) -> Call[RegisteredIntent]:
        return register(self.holder, self.scope, self.mode, self.ka.ttl_ms, self.description)

    def _renew(self) -> Call[Intent]:
        return renew(self.id, self.fence, self.ka.ttl_ms)

    def _expired(self) -> StaleFence:
        assert self.intent is not None
        return intent_ended(self.intent, "no renewal succeeded before the intent's TTL ran out")

    def _check(self) -> None:
        """Raise StaleFence, sending nothing, once the intent is gone."""
        if not self.ka.lost.is_set() and self.ka.deadline and time.monotonic() >= self.ka.deadline:
            self.ka.mark_lost(self._expired())
        if self.ka.lost.is_set():
            raise self._ended("the intent ended; the write was not sent")

    def _ended(self, detail: str) -> StaleFence:
        """A fresh StaleFence for the caller, caused by what ended it."""
        why = self.ka.lost_reason
        fields = dict(why.fields) if isinstance(why, PromptdError) else {"intent_id": self.id}
        err = StaleFence(why.status if isinstance(why, PromptdError) else 0, "stale_fence",
                         f"intent {self.id}: {detail}", fields)
        err.__cause__ = why
        return err

    def _observe(self, err: PromptdError) -> None:
        # stale_fence naming this intent: it ended (a record's claim fence
        # is another stale_fence, without intent_id).
        if isinstance(err, StaleFence) and err.fields.get("intent_id") == self.id:
            self.ka.mark_lost(err)


class HeldIntent(_Held):
    """A registered intent renewed on a thread (sync); see the module doc."""

    def __init__(self, client: "Client", holder: str, scope: ScopeLike, mode: Optional[str] = None,
                 ttl_ms: int = 30000, description: Optional[str] = None) -> None:
        super().__init__(holder, scope, mode, ttl_ms, description)
        self.client = client
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def __enter__(self) -> "HeldIntent":
        sent = time.monotonic()
        self.intent = self.client._send(self._register())
        self.ka.granted(sent)
        self._thread = threading.Thread(target=self._renew_loop, name=f"promptd-intent-{self.id}", daemon=True)
        self._thread.start()
        return self

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.ka.next_wait()):
            if time.monotonic() >= self.ka.deadline:
                self.ka.mark_lost(self._expired())
                return
            sent = time.monotonic()
            try:
                self.client._send(self._renew(), retry=self.client._lease_retry)
            except StaleFence as err:
                self.ka.mark_lost(err)
                return
            except PromptdError:
                continue  # unreachable or 5xx: try again before the deadline
            self.ka.granted(sent)
            self.ka.renewals += 1

    def apply_batch(self, board: str, items: Sequence[Mapping[str, Any]], *, mode: str = "all_or_nothing",
                    batch_fingerprint: Optional[str] = None) -> "BoardBatch":
        """A batch under the intent (see Client.apply_batch)."""
        self._check()
        try:
            return self.client.apply_batch(board, items, mode=mode, intent=self.ref,
                                           batch_fingerprint=batch_fingerprint)
        except PromptdError as err:
            self._observe(err)
            raise

    def update_record(self, board: str, id: str, expected_revision: int, **kw: Any) -> "Record":
        """A record write under the intent (see Client.update_record)."""
        self._check()
        try:
            return self.client.update_record(board, id, expected_revision, intent=self.ref, **kw)
        except PromptdError as err:
            self._observe(err)
            raise

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.intent is None:
            return
        if self.ka.lost.is_set():
            raise self._ended("the intent ended while the work ran")
        self.released = self.client._send(release(self.id, self.fence))


class AsyncHeldIntent(_AsyncHeld, _Held):
    """A registered intent renewed on a task (asyncio); see the module doc."""

    def __init__(self, client: "AsyncClient", holder: str, scope: ScopeLike, mode: Optional[str] = None,
                 ttl_ms: int = 30000, description: Optional[str] = None) -> None:
        super().__init__(holder, scope, mode, ttl_ms, description)
        self.client = client
        self._renewer: Optional[asyncio.Task[None]] = None

    async def __aenter__(self) -> "AsyncHeldIntent":
        sent = time.monotonic()
        registered: RegisteredIntent = await self.client._send(self._register())
        self.intent = registered
        self.ka.granted(sent)
        self._body = asyncio.current_task()
        self._renewer = asyncio.create_task(self._keep_alive(
            lambda: self.client._send(self._renew(), retry=self.client._lease_retry), (StaleFence,), self._expired()))
        return self

    async def apply_batch(self, board: str, items: Sequence[Mapping[str, Any]], *, mode: str = "all_or_nothing",
                          batch_fingerprint: Optional[str] = None) -> "BoardBatch":
        self._check()
        try:
            return await self.client.apply_batch(board, items, mode=mode, intent=self.ref,
                                                 batch_fingerprint=batch_fingerprint)
        except PromptdError as err:
            self._observe(err)
            raise

    async def update_record(self, board: str, id: str, expected_revision: int, **kw: Any) -> "Record":
        self._check()
        try:
            return await self.client.update_record(board, id, expected_revision, intent=self.ref, **kw)
        except PromptdError as err:
            self._observe(err)
            raise

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self._exiting = True
        await self._stop_renewer()
        if self.intent is None:
            return
        if self.ka.lost.is_set():
            self._give_back_cancel()
            raise self._ended("the intent ended while the work ran")
        released: Intent = await self.client._send(release(self.id, self.fence))
        self.released = released
