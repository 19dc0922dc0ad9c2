"""The lease context managers against a real promptd: keepalive, fenced
writes, and the work stopping when the lease is lost."""

from __future__ import annotations

import asyncio
import time

import pytest
from conftest import ADMIN, RUNTIME, Promptd, uid
from test_client import FAST, Recording, admin, publish, runtime

import promptd


def _session(server: Promptd) -> tuple[str, str]:
    agent = uid()
    with admin(server) as c:
        publish(c, agent)
        return agent, c.create_session(agent, "prod", user_id="u1").session_id


def test_sessionLease_keepsTheLeasePastItsTTL_andWritesCarryTheFence(shared_server: Promptd) -> None:
    _, sid = _session(shared_server)
    with runtime(shared_server) as rt, runtime(shared_server) as other:
        with rt.session_lease(sid, "worker-1", ttl_ms=1000) as lease:
            time.sleep(2.5)  # 2.5 TTLs: only the keepalive holds it
            assert lease.ka.renewals >= 2 and not lease.lost.is_set()
            out = rt.append(sid, [{"role": "user", "content": "under lease"}], 0)  # fence added by the SDK
            assert out.revision == 1
            lease.put_state("plan", {"n": 1}, 0)
            with pytest.raises(promptd.LeaseHeld):  # an unfenced writer is kept out
                other.append(sid, [{"role": "user", "content": "intruder"}], 1)
            assert rt.get_session(sid).lease is not None
        assert rt.get_session(sid).lease is None  # released on exit
        other.append(sid, [{"role": "user", "content": "after"}], 1)


def test_sessionLease_whenPreempted_setsLost_refusesWritesLocally_andExitRaises(shared_server: Promptd) -> None:
    _, sid = _session(shared_server)
    t = Recording()
    with promptd.Client(shared_server.url, RUNTIME, retry=FAST, transport=t) as rt, runtime(shared_server) as other:
        with pytest.raises(promptd.LeaseLost):
            with rt.session_lease(sid, "worker-1", ttl_ms=600) as lease:
                other.acquire_session_lease(sid, "worker-2", ttl_ms=5000, mode="preempt")
                assert lease.lost.wait(2.0), "the keepalive did not notice the loss"
                before = len(t.requests)
                with pytest.raises(promptd.LeaseLost):
                    rt.append(sid, [{"role": "user", "content": "too late"}], 0)
                assert len(t.requests) == before  # refused without calling promptd
        assert rt.get_session(sid).revision == 0


def test_sessionLease_whenPromptdStopsAnswering_isLostByItsDeadline(fresh_server: Promptd) -> None:
    _, sid = _session(fresh_server)
    with promptd.Client(fresh_server.url, RUNTIME, retry=FAST, timeout=0.2) as rt:
        with pytest.raises(promptd.LeaseLost):
            with rt.session_lease(sid, "worker-1", ttl_ms=400) as lease:
                fresh_server.pause()
                try:
                    start = time.monotonic()
                    assert lease.lost.wait(3.0)
                    assert time.monotonic() - start < 2.0
                finally:
                    fresh_server.resume()


def test_asyncSessionLease_whenPreempted_cancelsTheBodyAndRaisesLeaseLost(shared_server: Promptd) -> None:
    _, sid = _session(shared_server)
    reached: list[str] = []

    async def main() -> None:
        async with promptd.AsyncClient(shared_server.url, RUNTIME, retry=FAST) as rt:
            with promptd.Client(shared_server.url, ADMIN) as other:
                with pytest.raises(promptd.LeaseLost):
                    async with rt.session_lease(sid, "worker-1", ttl_ms=600) as lease:
                        await rt.append(sid, [{"role": "user", "content": "one"}], 0)
                        assert lease.fence > 0
                        await asyncio.to_thread(other.acquire_session_lease, sid, "worker-2", 5000, 0, "preempt")
                        reached.append("preempted")
                        await asyncio.sleep(5)  # cancelled by the keepalive
                        reached.append("slept")  # never reached
                s = await rt.get_session(sid)
                assert s.revision == 1

    start = time.monotonic()
    asyncio.run(main())
    assert reached == ["preempted"]
    assert time.monotonic() - start < 4.0


def test_asyncSessionLease_keepsTheLease_andReleasesOnExit(shared_server: Promptd) -> None:
    _, sid = _session(shared_server)

    async def main() -> None:
        async with promptd.AsyncClient(shared_server.url, RUNTIME, retry=FAST) as rt:
            async with rt.session_lease(sid, "worker-1", ttl_ms=1000) as lease:
                await asyncio.sleep(2.5)
                assert lease.ka.renewals >= 2
                await lease.append([{"role": "user", "content": "x"}], 0)
            assert (await rt.get_session(sid)).lease is None

    asyncio.run(main())


def test_genericLease_renewsAndReleases(shared_server: Promptd) -> None:
    res = f"order:{uid()}"
    with runtime(shared_server) as rt, runtime(shared_server) as other:
        with rt.lease([res], "worker-1", ttl_ms=1000) as held:
            time.sleep(2.5)
            assert held.fences[res] > 0 and not held.lost.is_set()
            with pytest.raises(promptd.LeaseHeld):
                with other.lease([res], "worker-2", ttl_ms=300):
                    pass
        with other.lease([res], "worker-2", ttl_ms=300) as h2:
            assert h2.fences[res] > held.fences[res]


def test_asyncGenericLeases_allOrNothing_conflictsNameTheHolder(shared_server: Promptd) -> None:
    a, b = f"order:{uid()}", f"order:{uid()}"

    async def main() -> None:
        async with promptd.AsyncClient(shared_server.url, RUNTIME, retry=FAST) as rt:
            held = await rt.acquire_leases([a], "worker-1", ttl_ms=5000)
            with pytest.raises(promptd.LeaseHeld) as lh:
                await rt.acquire_leases([a, b], "worker-2", ttl_ms=5000)
            assert [x["resource"] for x in lh.value.conflicts] == [a]
            assert (await rt.renew_leases(held.lease_id, held.token, 5000))
            await rt.release_leases(held.lease_id, held.token)
            both = await rt.acquire_leases([a, b], "worker-2", ttl_ms=5000)
            assert set(both.fences) == {a, b}
            with pytest.raises(promptd.LeaseLost):
                await rt.renew_leases(held.lease_id, held.token, 5000)

    asyncio.run(main())


def test_asyncHeldLeases_renewsPastTheTTL_andReleasesOnExit(shared_server: Promptd) -> None:
    a = f"order:{uid()}"

    async def main() -> None:
        async with promptd.AsyncClient(shared_server.url, RUNTIME, retry=FAST) as rt:
            async with rt.lease([a], "worker-1", ttl_ms=600) as held:
                assert set(held.fences) == {a}
                await asyncio.sleep(1.5)
                assert held.ka.renewals >= 2 and not held.lost.is_set()
            got = await rt.acquire_leases([a], "worker-2", ttl_ms=5000)  # released: free at once
            assert set(got.fences) == {a}

    asyncio.run(main())
