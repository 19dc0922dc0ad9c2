"""Board claims against a real promptd: heartbeats keep a claim past its
TTL, completion carries the claim's fence, a reclaimed record's old holder
is fenced out."""

from __future__ import annotations

import time

import pytest
from conftest import Promptd, uid
from test_client import runtime

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
