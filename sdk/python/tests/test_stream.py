"""The change feed as a stream: events in seq order, once, across a
promptd restart (reconnect with Last-Event-ID)."""

from __future__ import annotations

import threading
from typing import Any

from conftest import Promptd
from test_client import admin, runtime



def test_events_acrossARestart_resumeWithoutGapOrRepeat(fresh_server: Promptd) -> None:
    got: list[dict[str, Any]] = []
    seen = threading.Condition()

    def follow() -> None:
        with runtime(fresh_server) as rt:
            for ev in rt.events(since="0"):
                with seen:
                    got.append(ev)
                    seen.notify_all()

    def wait_n(n: int) -> bool:
        with seen:
            return seen.wait_for(lambda: len(got) >= n, timeout=10)

    threading.Thread(target=follow, daemon=True).start()
    with admin(fresh_server) as c:
        c.create_version("a1", {"system": "x"}, 0)
        c.set_env("a1", "prod", 1, 0)
        assert wait_n(2)
    fresh_server.restart()
    with admin(fresh_server) as c:
        c.create_version("a1", {"system": "y"}, 1)
        c.set_env("a1", "prod", 2, 1)
        assert wait_n(4)
    assert [e["action"] for e in got] == ["version.created", "pointer.switched"] * 2
    seqs = [int(e["seq"]) for e in got]
    assert seqs == sorted(set(seqs))
