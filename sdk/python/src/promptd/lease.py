"""Leases kept alive in the background, whose loss stops the work.

``with client.session_lease(sid, holder) as lease:`` acquires the session
lease, renews it every ttl/3 on a thread, and makes every write through the
client (or the lease) carry ``lease.fence``. When the lease is lost (renew
answers ``lease_lost``, or no renewal succeeded before the lease's expiry)
``lease.lost`` is set, the next write raises :class:`LeaseLost` without
calling promptd, and leaving the block raises :class:`LeaseLost`.

``async with aclient.session_lease(...)`` renews on a task and, on loss,
cancels the task running the body; the ``async with`` then raises
:class:`LeaseLost` instead of ``CancelledError``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Optional, Sequence, Union

from . import _calls
from .errors import LeaseLost, PromptdError, StaleFence
from .models import Appended, LeaseGrant, Leases, Session, StateEntry

if TYPE_CHECKING:
    from .aio import AsyncClient
    from .client import Client


def lease_lost(detail: str) -> LeaseLost:
    return LeaseLost(409, "lease_lost", detail)


class _AsyncHeld:
    """What the asyncio holders (a session lease, a board claim) share: a
    keepalive task that beats every ttl/3, and on loss the cancellation of
    the task running the ``async with`` body, given back when the block is
    left (where ``Task.uncancel`` exists: Python 3.11+)."""

    ka: "_Keepalive"
    _body: Optional["asyncio.Task[Any]"] = None
    _cancelled_body = False
    _exiting = False  # set when the block is left: __aexit__ raises LeaseLost itself
    _renewer: Optional["asyncio.Task[None]"] = None  # the keepalive task, once started

    def _lose(self, err: BaseException) -> None:
        self.ka.mark_lost(err)
        if not self._exiting and self._body is not None and not self._body.done():
            self._cancelled_body = True
            self._body.cancel()

    async def _stop_renewer(self) -> None:
        """Cancels the keepalive task (``_renewer``) and waits for it to end."""
        if self._renewer is None:
            return
        self._renewer.cancel()
        try:
            await self._renewer
        except asyncio.CancelledError:
            pass

    def _give_back_cancel(self) -> None:
        if self._cancelled_body and self._body is not None and hasattr(self._body, "uncancel"):
            self._body.uncancel()

    async def _keep_alive(self, beat: Callable[[], Awaitable[Any]], lost_on: tuple[type[BaseException], ...],
                          expired: Union[str, BaseException]) -> None:
        """Beats until lost: an answer of a lost_on type, or no beat through
        by the deadline (expired says so: LeaseLost with that detail, or
        the error given); other refusals are tried again."""
        while True:
            await asyncio.sleep(self.ka.next_wait())
            if time.monotonic() >= self.ka.deadline:
                self._lose(expired if isinstance(expired, BaseException) else lease_lost(expired))
                return
            sent = time.monotonic()
            try:
                await beat()
            except lost_on as err:
                self._lose(err)
                return
            except PromptdError:
                continue
            self.ka.granted(sent)
            self.ka.renewals += 1


class _Keepalive:
    """The state both flavours share: the fence, the local deadline by
    which a renewal must have succeeded, and the loss."""

    def __init__(self, ttl_ms: int) -> None:
        self.ttl_ms = ttl_ms
        self.interval = max(ttl_ms / 3000.0, 0.03)
        self.deadline = 0.0  # monotonic: the lease surely expired after this
        self.lost = threading.Event()
        self.lost_reason: Optional[BaseException] = None
        self.renewals = 0

    def granted(self, sent_at: float) -> None:
        # The server's expiry is ttl after it handled the request, which
        # was after we sent it: sent_at + ttl is a safe lower bound.
        self.deadline = sent_at + self.ttl_ms / 1000.0

    def mark_lost(self, reason: BaseException) -> None:
        if not self.lost.is_set():
            self.lost_reason = reason
            self.lost.set()

    def check(self) -> None:
        """Raise LeaseLost when the lease is gone (before any write)."""
        if self.lost.is_set() or (self.deadline and time.monotonic() >= self.deadline):
            self.mark_lost(lease_lost("the lease expired before it could be renewed"))
            err = lease_lost("the lease was lost; the write was not sent")
            raise err from self.lost_reason

    def next_wait(self) -> float:
        """Seconds until the next renewal attempt: ttl/3, sooner after a
        failure, never past the deadline."""
        return max(0.0, min(self.interval, self.deadline - time.monotonic() - 0.01))


class _SessionWrites:
    """Writes of one session under its lease (shared by both flavours)."""

    sid: str
    ka: _Keepalive
    grant: Optional[LeaseGrant]

    @property
    def fence(self) -> int:
        if self.grant is None:
            raise lease_lost("the lease is not held")
        return self.grant.fence

    @property
    def token(self) -> str:
        if self.grant is None:
            raise lease_lost("the lease is not held")
        return self.grant.token

    @property
    def lost(self) -> threading.Event:
        return self.ka.lost

    def fence_for_write(self) -> int:
        self.ka.check()
        return self.fence

    def observe(self, err: PromptdError) -> None:
        """A write answered stale_fence or lease_lost: the lease is gone."""
        if isinstance(err, (StaleFence, LeaseLost)):
            self.ka.mark_lost(err)


class SessionLease(_SessionWrites):
    """A held session lease (sync); see the module doc."""

    def __init__(self, client: "Client", sid: str, holder: str, ttl_ms: int = 5000, wait_ms: int = 0,
                 mode: str = "reject") -> None:
        self.client, self.sid, self.holder = client, sid, holder
        self.wait_ms, self.mode = wait_ms, mode
        self.ka = _Keepalive(ttl_ms)
        self.grant = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def __enter__(self) -> "SessionLease":
        sent = time.monotonic()
        grant: LeaseGrant = self.client._send(_calls.acquire_session_lease(
            self.sid, self.holder, self.ka.ttl_ms, self.wait_ms, self.mode, None))
        self.grant = grant
        self.ka.granted(sent)
        self.client._leases[self.sid] = self
        self._thread = threading.Thread(target=self._renew_loop, name=f"promptd-lease-{self.sid}", daemon=True)
        self._thread.start()
        return self

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.ka.next_wait()):
            if time.monotonic() >= self.ka.deadline:
                self.ka.mark_lost(lease_lost("no renewal succeeded before the lease expired"))
                return
            sent = time.monotonic()
            try:
                self.client._send(_calls.renew_session_lease(self.sid, self.token, self.ka.ttl_ms),
                                  retry=self.client._lease_retry)
            except LeaseLost as err:
                self.ka.mark_lost(err)
                return
            except PromptdError:
                continue  # unreachable or 5xx: try again before the deadline
            self.ka.granted(sent)
            self.ka.renewals += 1

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.client._leases.get(self.sid) is self:
            del self.client._leases[self.sid]
        if self.ka.lost.is_set():
            raise lease_lost(f"session {self.sid}: the lease was lost while the work ran") from self.ka.lost_reason
        try:
            self.client._send(_calls.release_session_lease(self.sid, self.token))
        except LeaseLost:
            pass  # taken over at the very end: every write was fenced

    # Writes under the lease (the client's own methods do the same when
    # called inside the block).
    def append(self, turns: Sequence[_calls.TurnLike], expected_revision: int) -> Appended:
        return self.client.append(self.sid, turns, expected_revision)

    def append_retrying(self, fn: Callable[[Session], Optional[Sequence[_calls.TurnLike]]],
                        attempts: int = 10) -> Optional[Appended]:
        return self.client.append_retrying(self.sid, fn, attempts=attempts)

    def put_state(self, key: str, value: Any, expected_revision: int) -> StateEntry:
        return self.client.put_state(self.sid, key, value, expected_revision)

    def close_session(self, expected_revision: int) -> Session:
        return self.client.close_session(self.sid, expected_revision)


class AsyncSessionLease(_AsyncHeld, _SessionWrites):
    """A held session lease (asyncio); see the module doc."""

    def __init__(self, client: "AsyncClient", sid: str, holder: str, ttl_ms: int = 5000, wait_ms: int = 0,
                 mode: str = "reject") -> None:
        self.client, self.sid, self.holder = client, sid, holder
        self.wait_ms, self.mode = wait_ms, mode
        self.ka = _Keepalive(ttl_ms)
        self.grant = None
        self._renewer: Optional[asyncio.Task[None]] = None

    async def __aenter__(self) -> "AsyncSessionLease":
        sent = time.monotonic()
        grant: LeaseGrant = await self.client._send(_calls.acquire_session_lease(
            self.sid, self.holder, self.ka.ttl_ms, self.wait_ms, self.mode, None))
        self.grant = grant
        self.ka.granted(sent)
        self.client._leases[self.sid] = self
        self._body = asyncio.current_task()
        self._renewer = asyncio.create_task(self._renew_loop())
        return self

    async def _renew_loop(self) -> None:
        await self._keep_alive(
            lambda: self.client._send(_calls.renew_session_lease(self.sid, self.token, self.ka.ttl_ms),
                                      retry=self.client._lease_retry),
            (LeaseLost,), "no renewal succeeded before the lease expired")

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        await self._stop_renewer()
        if self.client._leases.get(self.sid) is self:
            del self.client._leases[self.sid]
        if self.ka.lost.is_set():
            self._give_back_cancel()
            raise lease_lost(f"session {self.sid}: the lease was lost while the work ran") from self.ka.lost_reason
        try:
            await self.client._send(_calls.release_session_lease(self.sid, self.token))
        except LeaseLost:
            pass

    async def append(self, turns: Sequence[_calls.TurnLike], expected_revision: int) -> Appended:
        return await self.client.append(self.sid, turns, expected_revision)

    async def append_retrying(self, fn: Callable[[Session], Optional[Sequence[_calls.TurnLike]]],
                              attempts: int = 10) -> Optional[Appended]:
        return await self.client.append_retrying(self.sid, fn, attempts=attempts)

    async def put_state(self, key: str, value: Any, expected_revision: int) -> StateEntry:
        return await self.client.put_state(self.sid, key, value, expected_revision)

    async def close_session(self, expected_revision: int) -> Session:
        return await self.client.close_session(self.sid, expected_revision)


class HeldLeases:
    """A generic lease on several resources, renewed on a thread (sync).
    ``lost`` is set when it is lost; leaving the block then raises."""

    def __init__(self, client: "Client", resources: Sequence[str], holder: str, ttl_ms: int = 5000,
                 wait_ms: int = 0) -> None:
        self.client, self.resources, self.holder, self.wait_ms = client, list(resources), holder, wait_ms
        self.ka = _Keepalive(ttl_ms)
        self.grant: Optional[Leases] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    @property
    def lost(self) -> threading.Event:
        return self.ka.lost

    @property
    def fences(self) -> dict[str, int]:
        return dict(self.grant.fences) if self.grant else {}

    def __enter__(self) -> "HeldLeases":
        sent = time.monotonic()
        self.grant = self.client._send(_calls.acquire_leases(self.resources, self.holder, self.ka.ttl_ms,
                                                             self.wait_ms))
        self.ka.granted(sent)
        self._thread = threading.Thread(target=self._renew_loop, name="promptd-leases", daemon=True)
        self._thread.start()
        return self

    def _renew_loop(self) -> None:
        assert self.grant is not None
        while not self._stop.wait(self.ka.next_wait()):
            if time.monotonic() >= self.ka.deadline:
                self.ka.mark_lost(lease_lost("no renewal succeeded before the lease expired"))
                return
            sent = time.monotonic()
            try:
                self.client._send(_calls.renew_leases(self.grant.lease_id, self.grant.token, self.ka.ttl_ms),
                                  retry=self.client._lease_retry)
            except LeaseLost as err:
                self.ka.mark_lost(err)
                return
            except PromptdError:
                continue
            self.ka.granted(sent)

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.ka.lost.is_set():
            raise lease_lost("the lease was lost while the work ran") from self.ka.lost_reason
        assert self.grant is not None
        try:
            self.client._send(_calls.release_leases(self.grant.lease_id, self.grant.token))
        except LeaseLost:
            pass


class AsyncHeldLeases(_AsyncHeld):
    """A generic lease on several resources, renewed on a task (asyncio):
    ``async with aclient.lease(["order:1"], holder) as held:``. On loss the
    task running the body is cancelled and the ``async with`` raises
    LeaseLost instead of ``CancelledError``."""

    def __init__(self, client: "AsyncClient", resources: Sequence[str], holder: str, ttl_ms: int = 5000,
                 wait_ms: int = 0) -> None:
        self.client, self.resources, self.holder, self.wait_ms = client, list(resources), holder, wait_ms
        self.ka = _Keepalive(ttl_ms)
        self.grant: Optional[Leases] = None
        self._renewer: Optional[asyncio.Task[None]] = None

    @property
    def lost(self) -> threading.Event:
        return self.ka.lost

    @property
    def fences(self) -> dict[str, int]:
        return dict(self.grant.fences) if self.grant else {}

    async def __aenter__(self) -> "AsyncHeldLeases":
        sent = time.monotonic()
        grant: Leases = await self.client._send(_calls.acquire_leases(self.resources, self.holder, self.ka.ttl_ms,
                                                                       self.wait_ms))
        self.grant = grant
        self.ka.granted(sent)
        self._body = asyncio.current_task()
        self._renewer = asyncio.create_task(self._renew_loop(grant))
        return self

    async def _renew_loop(self, grant: Leases) -> None:
        await self._keep_alive(
            lambda: self.client._send(_calls.renew_leases(grant.lease_id, grant.token, self.ka.ttl_ms),
                                      retry=self.client._lease_retry),
            (LeaseLost,), "no renewal succeeded before the lease expired")

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self._exiting = True
        await self._stop_renewer()
        if self.ka.lost.is_set():
            self._give_back_cancel()
            raise lease_lost("the lease was lost while the work ran") from self.ka.lost_reason
        assert self.grant is not None
        try:
            await self.client._send(_calls.release_leases(self.grant.lease_id, self.grant.token))
        except LeaseLost:
            pass
