"""Board batches, merges and writes under an intent against a real promptd:
a batch under an intent and its commit proof (read back by id), an
all_or_nothing batch with a failing item writes nothing, a partial one
writes the rest, a stale update of disjoint fields merges and an
overlapping one raises MergeConflict with the paths, a write outside the
intent's scope raises OutsideIntent, after release StaleFence."""

from __future__ import annotations

import asyncio

import pytest
from conftest import RUNTIME, Promptd, uid
from test_client import FAST, runtime

import promptd
from promptd import ABSENT, create_item, errors, update_item


def test_batch_underAnIntent_answersItsCommitProof_readableById(shared_server: Promptd) -> None:
    board = uid("crm")
    with runtime(shared_server) as rt:
        with rt.intent("importer", {"records": [{"board": board, "prefixes": ["eu-"]}]}, ttl_ms=10000) as it:
            proof = it.apply_batch(board, [create_item({"name": "Ada"}, id="eu-1"),
                                           create_item({"name": "Bob"}, id="eu-2", priority=5)])
            print(f"proof: id={proof.id} fingerprint={proof.batch_fingerprint} summary={proof.summary}")
            assert proof.board == board and proof.mode == "all_or_nothing" and proof.intent_id == it.id
            assert proof.batch_fingerprint.startswith("sha256:") and proof.summary.created == 2
            assert [(r.index, r.op, r.id, r.status, r.revision_before, r.revision_after) for r in proof.results] == [
                (0, "create", "eu-1", "created", 0, 1), (1, "create", "eu-2", "created", 0, 1)]
            assert all(r.written and r.content_hash and r.content_hash.startswith("sha256:") for r in proof.results)
            # An update chained on the proof's revision, and a retried create that is "exists".
            again = it.apply_batch(board, [update_item("eu-1", 1, payload={"name": "Ada L."}),
                                           create_item({"name": "Ada"}, id="eu-1")], mode="partial")
            assert [(r.status, r.revision_before, r.revision_after) for r in again.results] == [
                ("updated", 1, 2), ("exists", 2, 2)]
            assert again.summary.updated == 1 and again.summary.exists == 1
        stored = rt.get_batch(board, proof.id)
        assert stored.results == proof.results and stored.batch_fingerprint == proof.batch_fingerprint
        assert rt.get_record(board, "eu-1").payload == {"name": "Ada L."}
        with pytest.raises(errors.BatchNotFound):
            rt.get_batch(board, "bat_" + uid("nope"))


def test_batch_allOrNothing_withAFailingItem_writesNothing_andRaisesBatchRejected(shared_server: Promptd) -> None:
    board = uid("b")
    with runtime(shared_server) as rt:
        rec = rt.create_record(board, {"n": 1}, id="r1")
        with pytest.raises(promptd.BatchRejected) as rejected:
            rt.apply_batch(board, [create_item({"n": 2}, id="r2"),
                                   update_item("r1", rec.revision + 4, payload={"n": 9})])
        err = rejected.value
        print(f"rejected: {err.detail!r} summary={err.summary}")
        assert err.status == 409 and err.batch_fingerprint and err.batch_fingerprint.startswith("sha256:")
        ok, bad = err.results
        assert ok.id == "r2" and not bad.written and bad.status == "conflict" and bad.conflict is not None
        assert bad.conflict.code == "revision_conflict" and bad.conflict.current_revision == rec.revision
        assert bad.conflict.content_hash and bad.conflict.content_hash.startswith("sha256:")
        assert err.summary.conflicts == 1
        with pytest.raises(errors.RecordNotFound):  # the good item was not written either
            rt.get_record(board, "r2")
        assert rt.get_record(board, "r1").payload == {"n": 1}
        # partial: the good item is written, the proof tells which failed
        part = rt.apply_batch(board, [create_item({"n": 2}, id="r2"),
                                      update_item("r1", rec.revision + 4, payload={"n": 9})], mode="partial")
        assert [r.status for r in part.results] == ["created", "conflict"]
        assert rt.get_record(board, "r2").payload == {"n": 2}


def test_updateRecord_mergeOfAStaleWrite_disjointFieldsMerge_overlappingOnesRaiseMergeConflict(
        shared_server: Promptd) -> None:
    board = uid("b")
    with runtime(shared_server) as rt, runtime(shared_server) as other:
        base = rt.create_record(board, {"title": "draft", "tags": ["a"], "owner": "ada"}, id="doc")
        theirs = other.update_record(board, "doc", base.revision, payload={"title": "final", "tags": ["a"],
                                                                           "owner": "ada"})
        # Ours was written from the base: a plain write is a revision conflict...
        with pytest.raises(promptd.RevisionConflict):
            rt.update_record(board, "doc", base.revision, payload={"title": "draft", "tags": ["a"], "owner": "bob"})
        # ...a merge keeps both sides' changes (disjoint paths).
        merged = rt.update_record(board, "doc", base.revision, merge=True, base_payload=base.payload,
                                  payload={"title": "draft", "tags": ["a"], "owner": "bob"})
        assert merged.revision == theirs.revision + 1
        assert merged.payload == {"title": "final", "tags": ["a"], "owner": "bob"}
        # Both changed the title: the typed conflict, with the path and the three values.
        with pytest.raises(promptd.MergeConflict) as mc:
            rt.update_record(board, "doc", base.revision, merge=True,
                             payload={"title": "mine", "tags": ["a"], "owner": "ada", "note": "x"})
        err = mc.value
        print(f"merge conflict: {err.detail!r} {err.conflicts}")
        assert err.status == 409 and err.current_revision == merged.revision
        assert [(c.path, c.base, c.ours, c.theirs) for c in err.conflicts] == [(["title"], "draft", "mine", "final")]
        assert rt.get_record(board, "doc").payload == merged.payload  # nothing written
        # In a batch the same overlap is a conflict item carrying the paths.
        with pytest.raises(promptd.BatchRejected) as br:
            rt.apply_batch(board, [update_item("doc", base.revision, merge=True,
                                               payload={"title": "mine", "tags": ["a"], "owner": "ada"})])
        conflict = br.value.results[0].conflict
        assert conflict is not None and conflict.code == "merge_conflict"
        assert [c.path for c in conflict.conflicts] == [["title"]]
        # A side that deleted the path is ABSENT, not None.
        rt.create_record(board, {"a": 1, "b": 1}, id="doc2")
        other.update_record(board, "doc2", 1, payload={"b": 1})  # theirs deletes a
        with pytest.raises(promptd.MergeConflict) as gone:
            rt.update_record(board, "doc2", 1, merge=True, payload={"a": 2, "b": 1})
        [c] = gone.value.conflicts
        assert c.path == ["a"] and (c.base, c.ours) == (1, 2) and c.theirs is ABSENT


def test_writeUnderAnIntent_outsideItsScope_raisesOutsideIntent_andAfterRelease_staleFence(
        shared_server: Promptd) -> None:
    board = uid("crm")
    with runtime(shared_server) as rt:
        rt.create_record(board, {"n": 1}, id="eu-1")
        rt.create_record(board, {"n": 1}, id="us-1")
        with rt.intent("importer", {"records": [{"board": board, "prefixes": ["eu-"]}]}) as it:
            inside = it.update_record(board, "eu-1", 1, payload={"n": 2})
            assert inside.revision == 2
            with pytest.raises(promptd.OutsideIntent) as out:
                it.update_record(board, "us-1", 1, payload={"n": 2})
            print(f"outside: {out.value.detail!r} field={out.value.field}")
            assert isinstance(out.value, errors.Unprocessable) and out.value.intent_id == it.id
            with pytest.raises(promptd.OutsideIntent) as batch_out:  # the whole batch: nothing written
                it.apply_batch(board, [update_item("eu-1", 2, payload={"n": 3}),
                                       update_item("us-1", 1, payload={"n": 3})])
            print(f"batch outside: {batch_out.value.detail!r} field={batch_out.value.field}")
            assert batch_out.value.intent_id == it.id
            assert rt.get_record(board, "eu-1").revision == 2
            ref = it.ref
        assert rt.get_record(board, "us-1").payload == {"n": 1}
        with pytest.raises(promptd.StaleFence) as sf:
            rt.update_record(board, "eu-1", 2, payload={"n": 4}, intent=ref)
        assert sf.value.intent_id == ref.id and sf.value.state == "released"
        with pytest.raises(promptd.StaleFence):
            rt.apply_batch(board, [update_item("eu-1", 2, payload={"n": 4})], intent=ref)
        assert rt.get_record(board, "eu-1").revision == 2


def test_asyncClient_batchAndMerge_roundTrip(shared_server: Promptd) -> None:
    board = uid("b")

    async def main() -> None:
        async with promptd.AsyncClient(shared_server.url, RUNTIME, retry=FAST) as rt:
            proof = await rt.apply_batch(board, [create_item({"a": 1, "b": 1}, id="r1")])
            assert proof.summary.created == 1
            await rt.update_record(board, "r1", 1, payload={"a": 2, "b": 1})
            merged = await rt.apply_batch(board, [update_item("r1", 1, payload={"a": 1, "b": 2}, merge=True)])
            [r] = merged.results
            assert (r.status, r.revision_before, r.revision_after) == ("merged", 2, 3)
            assert (await rt.get_record(board, "r1")).payload == {"a": 2, "b": 2}
            assert (await rt.get_batch(board, merged.id)).results == merged.results

    asyncio.run(main())
