"""Board claims against a real promptd: heartbeats keep a claim past its
TTL, completion carries the claim's fence, a reclaimed record's old holder
is fenced out; the async claim also cancels its body when the claim is
lost."""

from __future__ import annotations

import asyncio
import time
from typing import Optional

import httpx
import pytest
from conftest import RUNTIME, Promptd, uid
from test_client import FAST, admin, runtime

import promptd


def test_boardClaim_heartbeatsPastItsTTL_andCompletesWithTheFence(shared_server: Promptd) -> None:
    board = uid("b")
    with runtime(shared_server) as rt:
        rec = rt.create_record(board, {"task": 1})
        with rt.claim(board, "worker-1", ttl_ms=1000) as work:
            assert work.record is not None and work.record.id == rec.id and work.fence > 0
            time.sleep(2.5)
            assert work.ka.renewals >= 2 and not work.lost.is_set()
            work.update("running")
            done = work.complete({"ok": True})
        assert done.state == "done" and rt.get_record(board, rec.id).payload == {"ok": True}
        with rt.claim(board, "worker-1") as nothing:
            assert nothing.record is None


def test_boardClaim_whenReleasedByAnother_isFencedOut_andExitRaises(shared_server: Promptd) -> None:
    board = uid("b")
    with runtime(shared_server) as rt, runtime(shared_server) as other:
        rec = rt.create_record(board, {"task": 1})
        with pytest.raises(promptd.LeaseLost):
            with rt.claim(board, "worker-1", ttl_ms=600) as work:
                other._send(promptd.boards.release_record(board, rec.id, work.fence))
                assert other._send(promptd.boards.claim_next(board, "worker-2", 5000, 0, None)) is not None
                assert work.lost.wait(2.0)
                with pytest.raises(promptd.LeaseLost):
                    work.complete({"late": True})
        assert rt.get_record(board, rec.id).owner == "worker-2"


def test_boardClaim_leftUnfinished_releasesTheRecord(shared_server: Promptd) -> None:
    board = uid("b")
    with runtime(shared_server) as rt:
        rec = rt.create_record(board, {"task": 1})
        with rt.claim(board, "worker-1") as work:
            assert work.record is not None
        assert rt.get_record(board, rec.id).state == "pending"


# The async claim: heartbeats on a task, cancels the body on loss.

class _AsyncRecording(httpx.AsyncBaseTransport):
    """Records every request the async client sends."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.requests: list[httpx.Request] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def test_asyncBoardClaim_heartbeatsPastItsTTL_andCompletesWithTheFence(shared_server: Promptd) -> None:
    board = uid("b")

    async def main() -> None:
        async with promptd.AsyncClient(shared_server.url, RUNTIME, retry=FAST) as rt:
            rec = await rt.create_record(board, {"task": 1})
            async with rt.claim(board, "worker-1", ttl_ms=600) as work:
                assert work.record is not None and work.record.id == rec.id and work.fence > 0
                assert (await rt.get_record(board, rec.id)).owner == "worker-1"
                await asyncio.sleep(1.5)  # 2.5 TTLs: only the heartbeat task holds it
                assert work.ka.renewals >= 3 and not work.lost.is_set()
                await work.update("running")
                done = await work.complete({"ok": True})
            assert done.state == "done"
            got = await rt.get_record(board, rec.id)
            print(f"renewals={work.ka.renewals} state={got.state} owner={got.owner} payload={got.payload}")
            assert got.state == "done" and got.payload == {"ok": True} and got.owner is None

    asyncio.run(main())


@pytest.mark.parametrize("take_away", [True, False])
def test_asyncBoardClaim_whenTakenAway_cancelsTheBodyAndRaisesLeaseLost(shared_server: Promptd,
                                                                        take_away: bool) -> None:
    board = uid("b")
    reached: list[str] = []
    taken: list[float] = []

    async def take(other: promptd.AsyncClient, rec_id: str, fence: int) -> None:
        await asyncio.sleep(0.1)
        await other._send(promptd.boards.release_record(board, rec_id, fence))
        assert await other.claim_next(board, "worker-2", ttl_ms=5000) is not None
        taken.append(time.monotonic())

    async def main() -> None:
        t = _AsyncRecording()
        async with promptd.AsyncClient(shared_server.url, RUNTIME, retry=FAST, transport=t) as rt, \
                promptd.AsyncClient(shared_server.url, RUNTIME, retry=FAST) as other:
            rec = await rt.create_record(board, {"task": 1})
            raised: Optional[BaseException] = None
            taker: Optional[asyncio.Task[None]] = None
            current = asyncio.current_task()
            assert current is not None
            # (httpx's anyio may leave a count behind; compare with before)
            cancels_before = current.cancelling()
            try:
                async with rt.claim(board, "worker-1", ttl_ms=600) as work:
                    assert work.record is not None
                    if take_away:
                        taker = asyncio.create_task(take(other, rec.id, work.fence))
                    reached.append("sleeping")
                    await asyncio.sleep(2.0)  # cancelled by the heartbeat task when taken away
                    reached.append("slept")
                    await work.update("running")
                    await work.complete({"ok": True})
            except BaseException as err:  # a CancelledError must be seen too
                raised = err
            ended = time.monotonic()
            if taker is not None:
                await taker
            got = await rt.get_record(board, rec.id)
            if not take_away:
                print(f"control: reached={reached} raised={raised!r} state={got.state}")
                assert raised is None and reached == ["sleeping", "slept"] and not work.lost.is_set()
                assert got.state == "done" and got.payload == {"ok": True}
                return
            after = ended - taken[0]
            print(f"taken away: reached={reached} raised={type(raised).__name__} lost {after:.2f}s after"
                  f" the take-over, reason={work.ka.lost_reason!r}")
            assert isinstance(raised, promptd.LeaseLost) and reached == ["sleeping"] and work.lost.is_set()
            assert after < 0.9  # within about the TTL
            assert current.cancelling() == cancels_before  # the SDK's cancellation was consumed
            before = len(t.requests)
            with pytest.raises(promptd.LeaseLost):
                await work.complete({"late": True})
            assert len(t.requests) == before  # refused without calling promptd
            assert got.owner == "worker-2" and got.payload == {"task": 1}
            await asyncio.sleep(0.05)  # the task is not cancelled any more

    asyncio.run(main())


def test_asyncBoardClaim_bodyRaises_releasesTheRecord(shared_server: Promptd) -> None:
    board = uid("b")

    async def main() -> None:
        async with promptd.AsyncClient(shared_server.url, RUNTIME, retry=FAST) as rt:
            rec = await rt.create_record(board, {"task": 1})
            with pytest.raises(RuntimeError, match="boom"):
                async with rt.claim(board, "worker-1", ttl_ms=5000) as work:
                    assert work.record is not None and work.record.id == rec.id
                    raise RuntimeError("boom")
            got = await rt.get_record(board, rec.id)
            again = await rt.claim_next(board, "worker-2", ttl_ms=5000, wait_ms=0)
            print(f"after the raise: state={got.state} owner={got.owner}; reclaimed={again is not None}")
            assert got.state == "pending" and got.owner is None
            assert again is not None and again[0].id == rec.id and again[0].owner == "worker-2"
            assert again[1] > work.fence

    asyncio.run(main())


def test_asyncBoardClaim_noRecordWithinWait_runsTheBodyWithNone(shared_server: Promptd) -> None:
    board = uid("b")
    ran: list[bool] = []

    async def main() -> None:
        async with promptd.AsyncClient(shared_server.url, RUNTIME, retry=FAST) as rt:
            first = await rt.create_record(board, {"task": 1})  # the board exists, its one record is taken
            assert await rt.claim_next(board, "worker-2", ttl_ms=5000) is not None
            start = time.monotonic()
            async with rt.claim(board, "worker-1", ttl_ms=600, wait_ms=200) as work:
                waited = time.monotonic() - start
                assert work.record is None and not work.lost.is_set()
                ran.append(True)
                await asyncio.sleep(0.3)  # no heartbeat task to cancel anything
            print(f"no record: waited {waited:.2f}s, body ran={ran}")
            assert waited >= 0.15
            assert (await rt.get_record(board, first.id)).owner == "worker-2"

    asyncio.run(main())
    assert ran == [True]


# complete() and fail() from the claimed state: the default board is
# pending -> claimed -> running -> done | failed, so they step through
# running first (fenced); a machine with no such path is refused by name.

def test_boardClaim_completeFromClaimed_onTheDefaultBoard_stepsThroughRunning(shared_server: Promptd) -> None:
    board = uid("b")
    with runtime(shared_server) as rt:
        rec = rt.create_record(board, {"task": 1})
        with rt.claim(board, "worker-1") as work:
            assert work.record is not None and work.record.state == "claimed"
            assert work.machine().path("claimed", "done") == ["running", "done"]
            done = work.complete({"ok": True})
        assert done.state == "done" and done.payload == {"ok": True}
        assert rt.get_record(board, rec.id).state == "done"
        rt.create_record(board, {"task": 2}, id="t2")
        with rt.claim(board, "worker-1") as work:
            failed = work.fail({"why": "boom"})
        assert failed.state == "failed" and failed.payload == {"why": "boom"}


def test_boardClaim_completeWithNoPathInTheMachine_raisesNamingTheMissingStep(shared_server: Promptd) -> None:
    board = uid("b")
    with admin(shared_server) as adm, runtime(shared_server) as rt:
        machine = adm.put_board(board, {
            "states": ["pending", "claimed", "done", "failed"], "initial": "pending",
            "transitions": {"pending": ["claimed", "done"], "claimed": ["failed", "pending"]},
            "claim": {"from": "pending", "to": "claimed", "exhausted": "failed"},
            "terminal": ["done", "failed"]})
        assert machine.path("claimed", "done") is None and rt.get_board(board).revision == machine.revision
        rec = rt.create_record(board, {"task": 1})
        with rt.claim(board, "worker-1") as work:
            with pytest.raises(promptd.errors.InvalidTransition) as err:
                work.complete({"ok": True})
            assert "claimed -> done" in str(err.value) and err.value.fields["state"] == "claimed"
            work.fail()
        assert rt.get_record(board, rec.id).state == "failed"


def test_asyncBoardClaim_completeFromClaimed_stepsThroughRunning(shared_server: Promptd) -> None:
    board = uid("b")

    async def main() -> None:
        async with promptd.AsyncClient(shared_server.url, RUNTIME, retry=FAST) as rt:
            rec = await rt.create_record(board, {"task": 1})
            async with rt.claim(board, "worker-1") as work:
                assert work.record is not None and work.record.state == "claimed"
                done = await work.complete({"ok": True})
            assert done.state == "done" and (await rt.get_record(board, rec.id)).state == "done"

    asyncio.run(main())
