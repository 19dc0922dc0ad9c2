"""Boards (api/openapi.yaml, "Boards"): records, claims with fences, heartbeats.

``with client.claim(board, holder) as work:`` takes the next record (None
when there is none within ``wait_ms``: ``work.record`` is then None),
heartbeats every ttl/3 on a thread, and ``work.complete(payload)`` /
``work.fail(payload)`` finish it with the claim's fence. When the claim is
lost (``stale_fence`` / ``claim_expired``, or no heartbeat succeeded before
it expired) ``work.lost`` is set, writes raise ``LeaseLost`` without
calling promptd, and leaving the block raises it. A block left without
finishing releases the record back to the board.

``async with aclient.claim(board, holder) as work:`` is the same with an
asyncio heartbeat task, whose ``work.complete`` / ``work.fail`` /
``work.update`` are awaited; on loss it also cancels the task running the
body, and the ``async with`` then raises ``LeaseLost`` instead of
``CancelledError``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

import httpx

from ._calls import seg
from ._http import Call, decode
from .batches import ABSENT
from .errors import ClaimExpired, InvalidTransition, LeaseLost, PromptdError, StaleFence
from .intents import RefLike, ref_json
from .lease import _AsyncHeld, _Keepalive, lease_lost
from .models import Page, _ListItem, read_page

if TYPE_CHECKING:
    from .aio import AsyncClient
    from .client import Client


@dataclass
class Record(_ListItem):
    board: str
    id: str
    revision: int
    state: str
    owner: Optional[str]
    fence: int
    claim_expires_at: Optional[str]
    claim_ttl_ms: int
    priority: int
    attempts: int
    payload: Any
    dedupe_key: Optional[str] = None
    created_at: str = ""
    updated_at: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def from_json(d: dict[str, Any]) -> "Record":
        return Record(board=str(d.get("board", "")), id=str(d.get("id", "")), revision=int(d.get("revision") or 0),
                      state=str(d.get("state", "")), owner=d.get("owner"), fence=int(d.get("fence") or 0),
                      claim_expires_at=d.get("claim_expires_at"), claim_ttl_ms=int(d.get("claim_ttl_ms") or 0),
                      priority=int(d.get("priority") or 0), attempts=int(d.get("attempts") or 0),
                      payload=d.get("payload"), dedupe_key=d.get("dedupe_key"),
                      created_at=str(d.get("created_at", "")), updated_at=str(d.get("updated_at", "")), raw=d)


@dataclass(frozen=True)
class Board:
    """A board and its state machine (GET /v1/boards/{board}): ``claim`` is
    the claim rule (from, to, ttl_ms, reclaim_to, max_attempts, exhausted)."""

    board: str
    revision: int
    created_by: str
    states: list[str]
    initial: str
    transitions: dict[str, list[str]]
    claim: dict[str, Any]
    terminal: list[str]
    quota: dict[str, Any]
    created_at: str = ""
    updated_at: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def from_json(d: dict[str, Any]) -> "Board":
        tr = d.get("transitions")
        return Board(board=str(d.get("board", "")), revision=int(d.get("revision") or 0),
                     created_by=str(d.get("created_by") or ""), states=[str(x) for x in d.get("states") or []],
                     initial=str(d.get("initial", "")),
                     transitions={str(k): [str(x) for x in v or []] for k, v in tr.items()} if isinstance(tr, dict)
                     else {},
                     claim=dict(d.get("claim") or {}), terminal=[str(x) for x in d.get("terminal") or []],
                     quota=dict(d.get("quota") or {}), created_at=str(d.get("created_at", "")),
                     updated_at=str(d.get("updated_at", "")), raw=d)

    def allows(self, frm: str, to: str) -> bool:
        return to in self.transitions.get(frm, [])

    def ends_claim(self, state: str) -> bool:
        """Entering state ends a claim: the claim's from state, reclaim_to,
        or a terminal state."""
        return state in (self.claim.get("from"), self.claim.get("reclaim_to")) or state in self.terminal

    def path(self, frm: str, to: str) -> Optional[list[str]]:
        """The shortest chain of transitions frm -> ... -> to whose steps
        before ``to`` keep a claim (the states a claimed record passes
        through, e.g. ``["running", "done"]`` from claimed on the default
        board); None when the machine has none."""
        seen, queue = {frm}, [(frm, list[str]())]
        while queue:
            state, steps = queue.pop(0)
            for nxt in self.transitions.get(state, []):
                if nxt == to:
                    return steps + [to]
                if nxt not in seen and not self.ends_claim(nxt):
                    seen.add(nxt)
                    queue.append((nxt, steps + [nxt]))
        return None


def get_board(board: str) -> Call[Board]:
    return Call("GET", f"/v1/boards/{seg(board)}", lambda r: Board.from_json(decode(r)))


def put_board(board: str, definition: Any, expected_revision: int) -> Call[Board]:
    body = {**dict(definition), "expected_revision": expected_revision}
    return Call("PUT", f"/v1/boards/{seg(board)}", lambda r: Board.from_json(decode(r)), json=body)


def list_records(board: str, state: Optional[str], owner: Optional[str], limit: Optional[int],
                 cursor: Optional[str]) -> Call[Page[Record]]:
    return Call("GET", f"/v1/boards/{seg(board)}/records", lambda r: read_page(decode(r), Record.from_json),
                params={"state": state, "owner": owner, "limit": limit, "cursor": cursor})


def _record(r: httpx.Response) -> Record:
    return Record.from_json(decode(r))


def create_record(board: str, payload: Any, id: Optional[str], priority: Optional[int],
                  dedupe_key: Optional[str]) -> Call[Record]:
    body: dict[str, Any] = {"payload": payload}
    for k, v in (("id", id), ("priority", priority), ("dedupe_key", dedupe_key)):
        if v is not None:
            body[k] = v
    return Call("POST", f"/v1/boards/{seg(board)}/records", _record, json=body, idempotent=True)


def get_record(board: str, id: str) -> Call[Record]:
    return Call("GET", f"/v1/boards/{seg(board)}/records/{seg(id)}", _record)


def patch_record(board: str, id: str, expected_revision: int, state: Optional[str], payload: Any,
                 fence: Optional[int], set_payload: bool, *, merge: bool = False, base_payload: Any = ABSENT,
                 intent: Optional[RefLike] = None) -> Call[Record]:
    """PATCH: with ``merge`` the payload is merged over the changes made
    since ``expected_revision`` (409 merge_conflict on an overlap); with
    ``intent`` the write is checked against the intent's scope and fence."""
    body: dict[str, Any] = {"expected_revision": expected_revision}
    if state is not None:
        body["state"] = state
    if set_payload:
        body["payload"] = payload
    if fence is not None:
        body["fence"] = fence
    if merge:
        body["merge"] = True
    if base_payload is not ABSENT:
        body["base_payload"] = base_payload
    ref = ref_json(intent)
    if ref is not None:
        body["intent"] = ref
    return Call("PATCH", f"/v1/boards/{seg(board)}/records/{seg(id)}", _record, json=body)


def claim_next(board: str, holder: str, ttl_ms: Optional[int], wait_ms: int,
               min_priority: Optional[int]) -> Call[Optional[tuple[Record, int]]]:
    def parse(r: httpx.Response) -> Optional[tuple[Record, int]]:
        if r.status_code == 204:
            return None
        d = decode(r)
        return Record.from_json(d["record"]), int(d["fence"])
    body: dict[str, Any] = {"holder": holder, "wait_ms": wait_ms}
    if ttl_ms is not None:
        body["ttl_ms"] = ttl_ms
    if min_priority is not None:
        body["min_priority"] = min_priority
    return Call("POST", f"/v1/boards/{seg(board)}/claim", parse, json=body, idempotent=True)


def heartbeat(board: str, id: str, fence: int, ttl_ms: Optional[int]) -> Call[dict[str, Any]]:
    body: dict[str, Any] = {"fence": fence}
    if ttl_ms is not None:
        body["ttl_ms"] = ttl_ms
    return Call("POST", f"/v1/boards/{seg(board)}/records/{seg(id)}/heartbeat", lambda r: dict(decode(r)), json=body)


def release_record(board: str, id: str, fence: int) -> Call[Any]:
    return Call("POST", f"/v1/boards/{seg(board)}/records/{seg(id)}/release", lambda r: decode(r),
                json={"fence": fence})


class _Claim:
    """What both flavours of a claim hold: the claim's terms, the record
    and its fence once granted, and the keepalive state."""

    def __init__(self, board: str, holder: str, ttl_ms: int, wait_ms: int, min_priority: Optional[int]) -> None:
        self.board, self.holder = board, holder
        self.wait_ms, self.min_priority = wait_ms, min_priority
        self.ka = _Keepalive(ttl_ms)
        self.record: Optional[Record] = None
        self.fence = 0
        self.finished = False
        self._machine: Optional[Board] = None

    @property
    def lost(self) -> threading.Event:
        return self.ka.lost

    def _steps(self, machine: Board, state: str) -> list[str]:
        """The writes that take the claimed record to ``state``: ``[state]``
        when the machine has the transition, else the states in between
        first (claimed -> running -> done on the default board). No such
        path: InvalidTransition naming the missing step, nothing sent."""
        assert self.record is not None
        cur = self.record.state
        if cur == state or machine.allows(cur, state):
            return [state]
        path = machine.path(cur, state)
        if path is None:
            allowed = ", ".join(machine.transitions.get(cur, [])) or "none"
            raise InvalidTransition(409, "invalid_transition", (
                f"board {self.board}: no path {cur} -> {state} in its machine that keeps the claim "
                f"(from {cur} it allows: {allowed}); the board's transitions need the missing step "
                f"{cur} -> {state} (or a state between them)"),
                {"state": cur, "to": state, "board": self.board})
        return path


class BoardClaim(_Claim):
    """A claimed record kept alive by heartbeats (sync); see the module doc."""

    def __init__(self, client: "Client", board: str, holder: str, ttl_ms: int = 30000, wait_ms: int = 0,
                 min_priority: Optional[int] = None) -> None:
        super().__init__(board, holder, ttl_ms, wait_ms, min_priority)
        self.client = client
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def __enter__(self) -> "BoardClaim":
        sent = time.monotonic()
        got = self.client._send(claim_next(self.board, self.holder, self.ka.ttl_ms, self.wait_ms,
                                           self.min_priority))
        if got is None:
            return self
        self.record, self.fence = got
        self.ka.granted(sent)
        self._thread = threading.Thread(target=self._beat, name="promptd-claim", daemon=True)
        self._thread.start()
        return self

    def _beat(self) -> None:
        assert self.record is not None
        while not self._stop.wait(self.ka.next_wait()):
            if time.monotonic() >= self.ka.deadline:
                self.ka.mark_lost(lease_lost("no heartbeat succeeded before the claim expired"))
                return
            sent = time.monotonic()
            try:
                self.client._send(heartbeat(self.board, self.record.id, self.fence, self.ka.ttl_ms),
                                  retry=self.client._lease_retry)
            except (StaleFence, ClaimExpired, LeaseLost) as err:
                self.ka.mark_lost(err)
                return
            except PromptdError:
                continue
            self.ka.granted(sent)
            self.ka.renewals += 1

    def update(self, state: Optional[str] = None, payload: Any = None, *, set_payload: bool = False) -> Record:
        """A fenced compare-and-set write of the claimed record."""
        if self.record is None:
            raise lease_lost("nothing was claimed")
        self.ka.check()
        try:
            rec = self.client._send(patch_record(self.board, self.record.id, self.record.revision, state, payload,
                                                 self.fence, set_payload or payload is not None))
        except (StaleFence, ClaimExpired) as err:
            self.ka.mark_lost(err)
            raise
        self.record = rec
        return rec

    def machine(self) -> Board:
        """The board's state machine (read once per claim)."""
        if self._machine is None:
            self._machine = self.client._send(get_board(self.board))
        return self._machine

    def complete(self, payload: Any = None, state: str = "done") -> Record:
        """Write ``state`` (done) with ``payload``, fenced. When the machine
        has no direct transition from the record's state (claimed -> done
        on the default board) the states between are written first, each
        fenced (claimed -> running -> done); no path at all raises
        InvalidTransition naming the missing step."""
        if self.record is None:
            raise lease_lost("nothing was claimed")
        self.ka.check()
        *between, last = self._steps(self.machine(), state)
        for step in between:
            self.update(step)
        rec = self.update(last, payload)
        self.finished = True
        return rec

    def fail(self, payload: Any = None, state: str = "failed") -> Record:
        return self.complete(payload, state)

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.record is None:
            return
        if self.ka.lost.is_set():
            raise lease_lost(f"board {self.board}: the claim of {self.record.id} was lost") from self.ka.lost_reason
        if not self.finished:
            try:
                self.client._send(release_record(self.board, self.record.id, self.fence))
            except (StaleFence, ClaimExpired):
                pass


class AsyncBoardClaim(_AsyncHeld, _Claim):
    """A claimed record kept alive by heartbeats (asyncio); see the module doc."""

    def __init__(self, client: "AsyncClient", board: str, holder: str, ttl_ms: int = 30000, wait_ms: int = 0,
                 min_priority: Optional[int] = None) -> None:
        super().__init__(board, holder, ttl_ms, wait_ms, min_priority)
        self.client = client
        self._beater: Optional[asyncio.Task[None]] = None

    async def __aenter__(self) -> "AsyncBoardClaim":
        sent = time.monotonic()
        got = await self.client._send(claim_next(self.board, self.holder, self.ka.ttl_ms, self.wait_ms,
                                                 self.min_priority))
        if got is None:
            return self
        self.record, self.fence = got
        self.ka.granted(sent)
        self._body = asyncio.current_task()
        self._beater = asyncio.create_task(self._beat())
        return self

    async def _beat(self) -> None:
        assert self.record is not None
        record_id = self.record.id
        await self._keep_alive(
            lambda: self.client._send(heartbeat(self.board, record_id, self.fence, self.ka.ttl_ms),
                                      retry=self.client._lease_retry),
            (StaleFence, ClaimExpired, LeaseLost), "no heartbeat succeeded before the claim expired")

    async def update(self, state: Optional[str] = None, payload: Any = None, *,
                     set_payload: bool = False) -> Record:
        """A fenced compare-and-set write of the claimed record."""
        if self.record is None:
            raise lease_lost("nothing was claimed")
        self.ka.check()
        try:
            rec = await self.client._send(patch_record(self.board, self.record.id, self.record.revision, state,
                                                       payload, self.fence, set_payload or payload is not None))
        except (StaleFence, ClaimExpired) as err:
            self.ka.mark_lost(err)  # the caller sees the error; exit raises LeaseLost
            raise
        self.record = rec
        return rec

    async def machine(self) -> Board:
        """The board's state machine (read once per claim)."""
        if self._machine is None:
            got: Board = await self.client._send(get_board(self.board))
            self._machine = got
        return self._machine

    async def complete(self, payload: Any = None, state: str = "done") -> Record:
        """See BoardClaim.complete: through the states between when the
        machine needs them (claimed -> running -> done), each fenced."""
        if self.record is None:
            raise lease_lost("nothing was claimed")
        self.ka.check()
        *between, last = self._steps(await self.machine(), state)
        for step in between:
            await self.update(step)
        rec = await self.update(last, payload)
        self.finished = True
        return rec

    async def fail(self, payload: Any = None, state: str = "failed") -> Record:
        return await self.complete(payload, state)

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self._exiting = True
        if self._beater is not None:
            self._beater.cancel()
            try:
                await self._beater
            except asyncio.CancelledError:
                pass
        if self.record is None:
            return
        if self.ka.lost.is_set():
            self._give_back_cancel()
            raise lease_lost(f"board {self.board}: the claim of {self.record.id} was lost") from self.ka.lost_reason
        if not self.finished:
            try:
                await self.client._send(release_record(self.board, self.record.id, self.fence))
            except (StaleFence, ClaimExpired):
                pass
