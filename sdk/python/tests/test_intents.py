"""Intents against a real promptd: an exclusive overlap refused naming the
other's holder and scope, advisory overlaps reported, the overlap query,
renew and release with their fence (stale_fence after), and the held
intent: renewed past its TTL, released at the end, and on loss (another
released it) renewing stops and the block raises StaleFence; the async one
also cancels its body."""

from __future__ import annotations

import asyncio
import time

import pytest
from conftest import RUNTIME, Promptd, uid
from test_client import FAST, Recording, runtime

import promptd
from promptd import errors


def test_registerIntent_exclusiveOverlap_isRefusedNamingTheOthersHolderAndScope(shared_server: Promptd) -> None:
    board = uid("crm")
    with runtime(shared_server) as rt:
        a = rt.register_intent("importer-a", {"records": [{"board": board, "prefixes": ["eu-"]}]}, ttl_ms=60000,
                               description="EU rows")
        assert a.state == "active" and a.mode == "exclusive" and a.fence > 0 and a.overlaps == []
        assert a.scope == promptd.IntentScope(records=[promptd.RecordScope(board=board, prefixes=["eu-"])])
        with pytest.raises(promptd.IntentConflict) as ic:
            rt.register_intent("importer-b", promptd.IntentScope(records=[promptd.RecordScope(board, ids=["eu-7"])]))
        err = ic.value
        assert isinstance(err, errors.Conflict) and err.status == 409 and err.code == "intent_conflict"
        [other] = err.conflicts
        print(f"conflict: {err.detail!r}; other={other.id} holder={other.holder} scope={other.scope}")
        assert other.id == a.id and other.holder == "importer-a" and other.description == "EU rows"
        assert other.scope.records == [promptd.RecordScope(board=board, prefixes=["eu-"])]
        assert other.expires_at == a.expires_at
        # The overlap query finds it by a record it covers, not by one it does not.
        page = rt.list_intents(record=f"{board}/eu-1")
        assert [i.id for i in page.items] == [a.id] and page.next is None
        assert rt.list_intents(record=f"{board}/us-1").items == []
        assert [i.id for i in rt.list_intents(record=[f"{board}/us-1", f"{board}/eu-*"]).items] == [a.id]


def test_registerIntent_advisory_reportsItsOverlaps_andMeetsAnExclusiveOneAsAConflict(shared_server: Promptd) -> None:
    board = uid("b")
    with runtime(shared_server) as rt:
        first = rt.register_intent("planner-1", {"boards": [board]}, mode="advisory")
        second = rt.register_intent("planner-2", {"records": [{"board": board, "ids": ["r1"]}]}, mode="advisory")
        assert first.overlaps == [] and second.mode == "advisory"
        assert [(o.id, o.holder, o.mode) for o in second.overlaps] == [(first.id, "planner-1", "advisory")]
        with pytest.raises(promptd.IntentConflict) as ic:  # exclusive meets the advisory ones
            rt.register_intent("writer", {"records": [{"board": board, "ids": ["r1"]}]})
        assert {c.holder for c in ic.value.conflicts} == {"planner-1", "planner-2"}
        elsewhere = rt.register_intent("writer", {"records": [{"board": uid("b"), "ids": ["r1"]}]})
        assert elsewhere.overlaps == []


def test_intent_renewAndRelease_takeTheFence_andAfterReleaseAreStale(shared_server: Promptd) -> None:
    with runtime(shared_server) as rt:
        it = rt.register_intent("agent-1", {"agents": [uid("support-")]}, ttl_ms=5000)
        with pytest.raises(promptd.StaleFence) as wrong:
            rt.renew_intent(it.id, it.fence + 1)
        assert wrong.value.intent_id == it.id and wrong.value.current_fence == it.fence
        renewed = rt.renew_intent(it.id, it.fence, ttl_ms=20000)
        assert renewed.ttl_ms == 20000 and renewed.expires_at > it.expires_at
        released = rt.release_intent(it.id, it.fence)
        assert released.state == "released" and released.ended_at
        assert rt.get_intent(it.id).state == "released"
        with pytest.raises(promptd.StaleFence) as sf:
            rt.renew_intent(it.id, it.fence)
        print(f"renew after release: {sf.value.code} state={sf.value.state} ended_at={sf.value.ended_at}")
        assert sf.value.intent_id == it.id and sf.value.state == "released"
        with pytest.raises(errors.IntentNotFound) as nf:
            rt.get_intent("int_" + uid("nope"))
        assert isinstance(nf.value, errors.NotFound)


def test_heldIntent_renewsPastItsTTL_writesCarryItsRef_andIsReleasedAtTheEnd(shared_server: Promptd) -> None:
    board = uid("b")
    with runtime(shared_server) as rt, runtime(shared_server) as other:
        with rt.intent("importer", {"boards": [board]}, ttl_ms=1000) as it:
            time.sleep(2.5)  # 2.5 TTLs: only the renewals hold it
            assert it.ka.renewals >= 2 and not it.lost.is_set()
            assert rt.get_intent(it.id).state == "active"
            with pytest.raises(promptd.IntentConflict):
                other.register_intent("intruder", {"boards": [board]})
            proof = it.apply_batch(board, [promptd.create_item({"n": 1}, id="r1")])
            assert proof.intent_id == it.id and proof.summary.created == 1
        assert it.released is not None and it.released.state == "released"
        assert rt.get_intent(it.id).state == "released"
        other.register_intent("next", {"boards": [board]})  # free again


def test_heldIntent_releasedByAnother_stopsRenewing_refusesWritesLocally_andExitRaisesStaleFence(
        shared_server: Promptd) -> None:
    board = uid("b")
    t = Recording()
    with promptd.Client(shared_server.url, RUNTIME, retry=FAST, transport=t) as rt, runtime(shared_server) as other:
        with pytest.raises(promptd.StaleFence) as raised:
            with rt.intent("importer", {"boards": [board]}, ttl_ms=1000) as it:
                other.release_intent(it.id, it.fence)  # an operator ends it
                assert it.lost.wait(2.0), "the renewal did not notice"
                renews = [r for r in t.requests if r.url.path.endswith("/renew")]
                time.sleep(0.8)  # more than two renewal periods: no renewal is tried any more
                assert [r for r in t.requests if r.url.path.endswith("/renew")] == renews
                before = len(t.requests)
                with pytest.raises(promptd.StaleFence):
                    it.apply_batch(board, [promptd.create_item({"late": True})])
                assert len(t.requests) == before  # refused without calling promptd
        err = raised.value
        print(f"exit: {err!r}, cause {err.__cause__!r}")
        assert err.intent_id == it.id and err.state == "released" and err.status == 409
        assert isinstance(err.__cause__, promptd.StaleFence)
        assert it.released is None  # not released again


def test_asyncHeldIntent_whenReleasedByAnother_cancelsTheBodyAndRaisesStaleFence(shared_server: Promptd) -> None:
    board = uid("b")
    reached: list[str] = []

    async def main() -> None:
        async with promptd.AsyncClient(shared_server.url, RUNTIME, retry=FAST) as rt, \
                promptd.AsyncClient(shared_server.url, RUNTIME, retry=FAST) as other:
            # (httpx's anyio leaves a count behind on a connection's first
            # request: open both first, then compare with before)
            await rt.list_intents(board=board)
            await other.list_intents(board=board)
            current = asyncio.current_task()
            assert current is not None
            cancels_before = current.cancelling()
            start = time.monotonic()
            with pytest.raises(promptd.StaleFence) as raised:
                async with rt.intent("importer", {"boards": [board]}, ttl_ms=1000) as it:
                    proof = await it.apply_batch(board, [promptd.create_item({"n": 1}, id="r1")])
                    assert proof.intent_id == it.id
                    await other.release_intent(it.id, it.fence)
                    reached.append("released")
                    await asyncio.sleep(5)  # cancelled by the renewal task
                    reached.append("slept")  # never reached
            took = time.monotonic() - start
            print(f"async: reached={reached} raised={raised.value!r} after {took:.2f}s")
            assert raised.value.intent_id == it.id and raised.value.state == "released"
            assert took < 2.5 and current.cancelling() == cancels_before
            await asyncio.sleep(0.05)  # the task is not cancelled any more

    asyncio.run(main())
    assert reached == ["released"]


def test_asyncHeldIntent_renewsAndReleases(shared_server: Promptd) -> None:
    agent = uid("support-")

    async def main() -> None:
        async with promptd.AsyncClient(shared_server.url, RUNTIME, retry=FAST) as rt:
            async with rt.intent("agent-1", promptd.IntentScope(agents=[agent], envs=["prod"]), ttl_ms=1000,
                                 mode="advisory", description="rewrite prompts") as it:
                await asyncio.sleep(2.5)
                assert it.ka.renewals >= 2 and (await rt.get_intent(it.id)).state == "active"
                page = await rt.list_intents(agent=agent, env="prod")
                assert [i.id for i in page.items] == [it.id] and page.items[0].description == "rewrite prompts"
            assert (await rt.get_intent(it.id)).state == "released"

    asyncio.run(main())
