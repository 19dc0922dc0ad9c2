"""LocalPrompts against a real promptd: zero calls per resolve after
warm-up, kept current by the event stream (or polling when the stream is
down), serving through an outage and starting cold from the disk copy,
sessions, exposures counted exactly."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from pathlib import Path
from typing import Any, Callable

import httpx
import pytest
from conftest import CONFIG, RUNTIME, Promptd, start_promptd, uid
from test_client import FAST, Recording, admin, publish

import promptd


def wait_for(cond: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.005)
    return cond()


def create_release(c: promptd.Client, agent: str, env: str, candidate: int, percent: Any,
                   stickiness: str = "user", **extra: Any) -> dict[str, Any]:
    r = c.http.post(f"/v1/agents/{agent}/envs/{env}/releases",
                    json={"candidate_version": candidate, "percent": percent, "stickiness": stickiness, **extra})
    assert r.status_code == 201, r.text
    out: dict[str, Any] = r.json()
    return out


def set_percent(c: promptd.Client, rid: str, percent: Any) -> dict[str, Any]:
    rel = c.get_release(rid)
    r = c.http.patch(f"/v1/releases/{rid}", json={"percent": percent, "expected_revision": rel.revision})
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


def rollback(c: promptd.Client, rid: str) -> None:
    rel = c.get_release(rid)
    r = c.http.post(f"/v1/releases/{rid}/rollback", json={"expected_revision": rel.revision, "reason": "test"})
    assert r.status_code == 200, r.text


@pytest.fixture
def with_bundle(shared_server: Promptd) -> Promptd:
    return shared_server


def test_localPrompts_afterWarmUp_makesNoNetworkCallPerResolveOrAssemble(with_bundle: Promptd) -> None:
    agent = uid()
    with admin(with_bundle) as c:
        publish(c, agent)
    t = Recording()
    with promptd.Client(with_bundle.url, RUNTIME, retry=FAST, transport=t) as rt:
        with promptd.LocalPrompts(rt, agents=[agent], flush_interval=3600) as lp:
            assert wait_for(lp.stream_up.is_set)
            before = len(t.requests)
            for i in range(2000):
                lp.resolve(agent, "prod", user_id=f"u{i}")
                lp.assemble(agent, "prod", {"persona": "bot"}, user_id=f"u{i}")
            assert len(t.requests) == before
            local = lp.assemble(agent, "prod", {"persona": "a <b> & c"}, user_id="u1")
            remote = rt.assemble(agent, "prod", {"persona": "a <b> & c"}, user_id="u1")
            assert local.body == remote.body


def test_localPrompts_followsPointerPercentAndRollback_throughTheStream(with_bundle: Promptd) -> None:
    agent = uid()
    with admin(with_bundle) as c, promptd.Client(with_bundle.url, RUNTIME, retry=FAST) as rt:
        publish(c, agent)
        v2 = c.create_version(agent, dict(CONFIG, system="two {{persona}}"), 1).version
        with promptd.LocalPrompts(rt, agents=[agent], flush_interval=3600, poll_interval=60) as lp:
            assert wait_for(lp.stream_up.is_set)
            env = c.get_env(agent, "prod")
            c.set_env(agent, "prod", v2, env.revision)
            assert wait_for(lambda: lp.resolve(agent, "prod").version == v2, 3)
            c.set_env(agent, "prod", 1, env.revision + 1)
            assert wait_for(lambda: lp.resolve(agent, "prod").version == 1, 3)
            rel = create_release(c, agent, "prod", v2, 0)
            assert wait_for(lambda: lp.resolve(agent, "prod", user_id="u1").release is not None, 3)
            set_percent(c, rel["id"], 100)
            assert wait_for(lambda: lp.resolve(agent, "prod", user_id="u1").version == v2, 3)
            r = lp.resolve(agent, "prod", user_id="u1")
            assert r.release is not None and r.release.arm == "candidate"
            assert r == rt.resolve(agent, "prod", user_id="u1")
            rollback(c, rel["id"])
            assert wait_for(lambda: lp.resolve(agent, "prod", user_id="u1").version == 1, 3)
            assert lp.stats.stream_connects == 1


def test_localPrompts_whenTheStreamIsDown_pollsTheBundleConditionally(with_bundle: Promptd) -> None:
    agent = uid()

    def refuse(r: httpx.Request, n: int) -> Any:
        if r.url.path == "/v1/events":
            return httpx.Response(503, json={"code": "store_unavailable", "status": 503})
        return None

    t = Recording(refuse)
    with admin(with_bundle) as c, promptd.Client(with_bundle.url, RUNTIME, retry=FAST, transport=t) as rt:
        publish(c, agent)
        v2 = c.create_version(agent, CONFIG, 1).version
        with promptd.LocalPrompts(rt, agents=[agent], flush_interval=3600, poll_interval=0.2,
                                  reconnect_max=0.2) as lp:
            time.sleep(0.5)
            assert lp.stats.not_modified >= 1  # polled, answered 304
            c.set_env(agent, "prod", v2, 1)
            assert wait_for(lambda: lp.resolve(agent, "prod").version == v2, 3)
            bundles = [r for r in t.requests if r.url.path == "/v1/bundle"]
            assert any("If-None-Match" in r.headers for r in bundles)


def test_localPrompts_promptdDown_keepsServing_andAFreshOneStartsFromDisk(tmp_path: Path) -> None:
    server = start_promptd(tmp_path)
    try:
        agent = uid()
        cache = str(tmp_path / "bundle.json")
        with admin(server) as c:
            publish(c, agent)
        rt = promptd.Client(server.url, RUNTIME, retry=FAST, timeout=1.0)
        lp = promptd.LocalPrompts(rt, cache_path=cache, flush_interval=3600).start()
        want = lp.assemble(agent, "prod", {"persona": "bot"}, user_id="u1").body
        server.kill()
        assert lp.assemble(agent, "prod", {"persona": "bot"}, user_id="u1").body == want
        cold = promptd.LocalPrompts(promptd.Client(server.url, RUNTIME, retry=FAST, timeout=1.0), cache_path=cache,
                                    flush_interval=3600).start()
        assert cold.core.from_disk
        assert cold.assemble(agent, "prod", {"persona": "bot"}, user_id="u1").body == want
        start = time.monotonic()
        lp.close()
        cold.close()
        assert time.monotonic() - start < 15
        fresh = promptd.LocalPrompts(promptd.Client(server.url, RUNTIME, timeout=1.0))
        with pytest.raises(promptd.TransportError):
            fresh.start()  # no disk copy: nothing to serve
    finally:
        server.kill()


def test_localPrompts_sessions_pinnedLocally_revokedPinAskedOfPromptd(with_bundle: Promptd) -> None:
    agent = uid()
    with admin(with_bundle) as c, promptd.Client(with_bundle.url, RUNTIME, retry=FAST) as rt:
        publish(c, agent)
        s = rt.create_session(agent, "prod", user_id="u1")
        v2 = c.create_version(agent, CONFIG, 1).version
        c.set_env(agent, "prod", v2, 1)
        with promptd.LocalPrompts(rt, agents=[agent], flush_interval=3600) as lp:
            r = lp.resolve(agent, "prod", session_id=s.session_id)
            assert r.version == 1 and r.pinned  # the pin and its version, read once
            assert lp.stats.server_resolves == 0 and lp.resolve(agent, "prod", session_id=s.session_id) == r
            c.revoke(agent, "prod", 1, "bad")
            assert wait_for(lambda: 1 in lp.core.bundle["agents"][agent]["envs"]["prod"]["revoked"], 3)
            r = lp.resolve(agent, "prod", session_id=s.session_id)
            assert r.version == v2 and r.repinned_from == 1 and lp.stats.server_resolves == 1
            assert lp.resolve(agent, "prod", session_id=s.session_id).version == v2
            assert lp.stats.server_resolves == 1


def test_exposures_afterLocalResolves_theServerCountsEqualWhatWasResolved(with_bundle: Promptd) -> None:
    agent = uid()
    n = 3333
    with admin(with_bundle) as c, promptd.Client(with_bundle.url, RUNTIME, retry=FAST) as rt:
        publish(c, agent)
        v2 = c.create_version(agent, CONFIG, 1).version
        create_release(c, agent, "prod", v2, 30)
        want: dict[tuple[int, str], int] = {}
        with promptd.LocalPrompts(rt, agents=[agent], flush_interval=3600) as lp:
            for i in range(n):
                r = lp.resolve(agent, "prod", user_id=f"user-{i}")
                assert r.release is not None
                k = (r.version, r.release.arm)
                want[k] = want.get(k, 0) + 1
        assert lp.core.exposures.sent == n and lp.core.exposures.empty()
        frm = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
        got: dict[tuple[int, str], int] = {}
        for it in rt.get_exposures(agent, "prod", frm=frm):
            k = (int(it["version"]), str(it["arm"]))
            got[k] = got.get(k, 0) + int(it["count"])
        assert got == want, (got, want)
        assert sum(want.values()) == n and len(want) == 2


def test_asyncLocalPrompts_resolvesLocally_andFollowsTheStream(with_bundle: Promptd) -> None:
    agent = uid()
    with admin(with_bundle) as c:
        publish(c, agent)
        v2 = c.create_version(agent, CONFIG, 1).version

        async def main() -> None:
            async with promptd.AsyncClient(with_bundle.url, RUNTIME, retry=FAST) as rt:
                async with promptd.AsyncLocalPrompts(rt, agents=[agent], flush_interval=3600) as lp:
                    assert (await lp.resolve(agent, "prod")).version == 1
                    await asyncio.wait_for(lp.stream_up.wait(), 5)
                    await asyncio.to_thread(c.set_env, agent, "prod", v2, 1)
                    for _ in range(300):
                        if (await lp.resolve(agent, "prod")).version == v2:
                            break
                        await asyncio.sleep(0.01)
                    a = await lp.assemble(agent, "prod", {"persona": "x"})
                    assert a.version == v2

        asyncio.run(main())


def test_asyncLocalPrompts_promptdDown_aFreshOneStartsFromDisk(tmp_path: Path) -> None:
    server = start_promptd(tmp_path)
    agent = uid()
    cache = str(tmp_path / "bundle.json")
    try:
        with admin(server) as c:
            publish(c, agent)

        async def main() -> None:
            async with promptd.AsyncClient(server.url, RUNTIME, retry=FAST, timeout=1.0) as rt:
                async with promptd.AsyncLocalPrompts(rt, cache_path=cache, flush_interval=3600) as lp:
                    want = (await lp.assemble(agent, "prod", {"persona": "bot"})).body
                server.kill()
                async with promptd.AsyncLocalPrompts(rt, cache_path=cache, flush_interval=3600) as cold:
                    assert cold.core.from_disk
                    assert (await cold.assemble(agent, "prod", {"persona": "bot"})).body == want

        asyncio.run(main())
    finally:
        server.kill()
