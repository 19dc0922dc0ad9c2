// Intents, board batches and merges against a real promptd: an exclusive
// overlap refused naming the other's holder and scope, advisory overlaps
// reported, renew/release fenced (stale_fence after), withIntent renewing
// past the TTL and releasing at the end, and when the intent is released
// under the work: no more renewals, the signal aborts, writes reject
// without a call, withIntent rejects with StaleFenceError. A batch under an
// intent with its proof, an all_or_nothing batch that writes nothing, a
// merge of disjoint changes and the typed conflict of overlapping ones,
// writes outside the intent's scope; a version create merged from a stale base.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import {
  BatchNotFoundError, BatchRejectedError, Client, IntentConflictError, IntentNotFoundError, MergeConflictError,
  OutsideIntentError, RecordNotFoundError, RevisionConflictError, StaleFenceError, VersionConflictError, withIntent,
  type PromptConfig,
} from "../src/index.js";
import { RUNTIME_SECRET, startPromptd, uniq, type Promptd } from "./harness.js";

let pd: Promptd;
before(async () => { pd = await startPromptd(); });
after(async () => { await pd?.stop(); });

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A client whose every request is recorded (method and path). */
function recording(): { client: Client; calls: string[] } {
  const calls: string[] = [];
  const f: typeof fetch = (input, init) => {
    calls.push(`${init?.method ?? "GET"} ${new URL(input instanceof Request ? input.url : String(input)).pathname}`);
    return fetch(input, init);
  };
  return { client: new Client({ baseUrl: pd.url, token: RUNTIME_SECRET, fetch: f }), calls };
}

test("Intents_exclusiveOverlap_isRefusedNamingTheOthersHolderAndScope", async () => {
  const board = uniq("crm");
  const a = await pd.runtime.registerIntent({ holder: "importer-a", scope: { records: [{ board, prefixes: ["eu-"] }] }, ttlMs: 60_000, description: "EU rows" });
  assert.equal(a.state, "active");
  assert.equal(a.mode, "exclusive");
  assert.deepEqual(a.overlaps, []);
  assert.deepEqual(a.scope, { records: [{ board, prefixes: ["eu-"] }] });
  const err = await pd.runtime.registerIntent({ holder: "importer-b", scope: { records: [{ board, ids: ["eu-7"] }] } }).then(
    () => assert.fail("registered"), (e: unknown) => e);
  assert.ok(err instanceof IntentConflictError, String(err));
  assert.equal(err.status, 409);
  const [other] = err.fields.conflicts;
  console.log(`# conflict: ${err.detail}`);
  assert.equal(other?.id, a.id);
  assert.equal(other.holder, "importer-a");
  assert.equal(other.description, "EU rows");
  assert.deepEqual(other.scope, { records: [{ board, prefixes: ["eu-"] }] });
  // The overlap query: by a record it covers, by one it does not, by several.
  assert.deepEqual((await pd.runtime.listIntents({ record: `${board}/eu-1` })).items.map((i) => i.id), [a.id]);
  assert.deepEqual((await pd.runtime.listIntents({ record: `${board}/us-1` })).items, []);
  assert.deepEqual((await pd.runtime.listIntents({ record: [`${board}/us-1`, `${board}/eu-*`] })).items.map((i) => i.id), [a.id]);
});

test("Intents_advisory_reportsItsOverlaps_andAnExclusiveOneMeetsThemAsAConflict", async () => {
  const board = uniq("b");
  const first = await pd.runtime.registerIntent({ holder: "planner-1", mode: "advisory", scope: { boards: [board] } });
  const second = await pd.runtime.registerIntent({ holder: "planner-2", mode: "advisory", scope: { records: [{ board, ids: ["r1"] }] } });
  assert.deepEqual(first.overlaps, []);
  assert.deepEqual(second.overlaps.map((o) => [o.id, o.holder, o.mode]), [[first.id, "planner-1", "advisory"]]);
  await assert.rejects(pd.runtime.registerIntent({ holder: "writer", scope: { records: [{ board, ids: ["r1"] }] } }),
    (e: unknown) => e instanceof IntentConflictError && e.fields.conflicts.map((c) => c.holder).sort().join() === "planner-1,planner-2");
});

test("Intents_renewAndRelease_takeTheFence_andAfterReleaseAreStale", async () => {
  const it = await pd.runtime.registerIntent({ holder: "agent-1", scope: { agents: [uniq("support")] }, ttlMs: 5000 });
  await assert.rejects(pd.runtime.renewIntent(it.id, it.fence + 1),
    (e: unknown) => e instanceof StaleFenceError && e.fields.intent_id === it.id && e.fields.current_fence === it.fence);
  const renewed = await pd.runtime.renewIntent(it.id, it.fence, 20_000);
  assert.equal(renewed.ttl_ms, 20_000);
  assert.ok(renewed.expires_at > it.expires_at);
  const released = await pd.runtime.releaseIntent(it.id, it.fence);
  assert.equal(released.state, "released");
  assert.ok(released.ended_at);
  assert.equal((await pd.runtime.getIntent(it.id)).state, "released");
  await assert.rejects(pd.runtime.renewIntent(it.id, it.fence),
    (e: unknown) => e instanceof StaleFenceError && e.fields.state === "released" && e.fields.ended_at === released.ended_at);
  await assert.rejects(pd.runtime.getIntent("int_" + uniq("nope").replace(/-/g, "")), IntentNotFoundError);
});

test("withIntent_renewsPastItsTTL_batchesCarryItsRef_andReleasesAtTheEnd", async () => {
  const board = uniq("b");
  let id = "";
  const out = await withIntent(pd.runtime, { holder: "importer", scope: { boards: [board] }, ttlMs: 1000 }, async (it, signal) => {
    id = it.id;
    await sleep(2500); // 2.5 TTLs: only the renewals hold it
    assert.ok(it.renewals >= 2, `renewals ${it.renewals}`);
    assert.equal(signal.aborted, false);
    assert.equal((await pd.runtime.getIntent(it.id)).state, "active");
    await assert.rejects(pd.runtime.registerIntent({ holder: "intruder", scope: { boards: [board] } }), IntentConflictError);
    return it.applyBatch(board, { items: [{ op: "create", id: "r1", payload: { n: 1 } }] });
  });
  assert.equal(out.intent_id, id);
  assert.equal(out.summary.created, 1);
  assert.equal((await pd.runtime.getIntent(id)).state, "released");
  await pd.runtime.registerIntent({ holder: "next", scope: { boards: [board] } }); // free again
});

test("withIntent_releasedByAnother_stopsRenewing_abortsTheWork_andRejectsWithStaleFence", async () => {
  const board = uniq("b");
  const { client, calls } = recording();
  let id = "";
  const reached: string[] = [];
  const err = await withIntent(client, { holder: "importer", scope: { boards: [board] }, ttlMs: 1000 }, async (it, signal) => {
    id = it.id;
    await pd.runtime.releaseIntent(it.id, it.fence); // an operator ends it
    reached.push("released");
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(resolve, 5000);
      signal.addEventListener("abort", () => { clearTimeout(t); reject(signal.reason as Error); }, { once: true });
    });
    reached.push("slept"); // never reached
  }).then(() => assert.fail("withIntent resolved"), (e: unknown) => e);
  console.log(`# withIntent rejected: ${String(err)}; reached ${reached.join()}`);
  assert.ok(err instanceof StaleFenceError, String(err));
  assert.equal(err.status, 409);
  assert.equal(err.fields.intent_id, id);
  assert.equal(err.fields.state, "released");
  assert.deepEqual(reached, ["released"]);
  const renews = calls.filter((c) => c.endsWith("/renew")).length;
  await sleep(800); // more than two renewal periods: none is tried any more
  assert.equal(calls.filter((c) => c.endsWith("/renew")).length, renews);
  assert.equal(calls.filter((c) => c.endsWith("/release")).length, 0, "not released again");
});

test("withIntent_afterItEnded_writesThroughItRejectWithoutACall", async () => {
  const board = uniq("b");
  const { client, calls } = recording();
  await assert.rejects(withIntent(client, { holder: "importer", scope: { boards: [board] }, ttlMs: 1000 }, async (it) => {
    await pd.runtime.releaseIntent(it.id, it.fence);
    await new Promise((r) => it.signal.addEventListener("abort", r, { once: true }));
    const before = calls.length;
    await assert.rejects(it.applyBatch(board, { items: [{ op: "create", payload: { late: true } }] }), StaleFenceError);
    assert.equal(calls.length, before, "refused without calling promptd");
  }), StaleFenceError);
});

test("Batch_underAnIntent_answersItsCommitProof_readableById", async () => {
  const board = uniq("crm");
  const proof = await withIntent(pd.runtime, { holder: "importer", scope: { records: [{ board, prefixes: ["eu-"] }] } }, async (it) => {
    const p = await it.applyBatch(board, { items: [{ op: "create", id: "eu-1", payload: { name: "Ada" } }, { op: "create", id: "eu-2", payload: { name: "Bob" }, priority: 5 }] });
    const again = await it.applyBatch(board, {
      mode: "partial",
      items: [{ op: "update", id: "eu-1", expected_revision: 1, payload: { name: "Ada L." } }, { op: "create", id: "eu-1", payload: { name: "Ada" } }],
    });
    assert.deepEqual(again.results.map((r) => [r.status, r.revision_before, r.revision_after]), [["updated", 1, 2], ["exists", 2, 2]]);
    return p;
  });
  console.log(`# proof ${proof.id} ${proof.batch_fingerprint} ${JSON.stringify(proof.summary)}`);
  assert.equal(proof.mode, "all_or_nothing");
  assert.ok(proof.intent_id?.startsWith("int_"));
  assert.match(proof.batch_fingerprint, /^sha256:[0-9a-f]{64}$/);
  assert.deepEqual(proof.results.map((r) => [r.index, r.op, r.id, r.status, r.revision_before, r.revision_after]),
    [[0, "create", "eu-1", "created", 0, 1], [1, "create", "eu-2", "created", 0, 1]]);
  assert.ok(proof.results.every((r) => r.content_hash?.startsWith("sha256:")));
  const stored = await pd.runtime.getBatch(board, proof.id);
  assert.deepEqual(stored.results, proof.results);
  assert.deepEqual((await pd.runtime.getRecord(board, "eu-1")).payload, { name: "Ada L." });
  await assert.rejects(pd.runtime.getBatch(board, "bat_nope"), BatchNotFoundError);
});

test("Batch_allOrNothing_withAFailingItem_writesNothing_andRejectsWithEveryResult", async () => {
  const board = uniq("b");
  const rec = await pd.runtime.createRecord(board, { id: "r1", payload: { n: 1 } });
  const items = [
    { op: "create" as const, id: "r2", payload: { n: 2 } },
    { op: "update" as const, id: "r1", expected_revision: rec.revision + 4, payload: { n: 9 } },
  ];
  const err = await pd.runtime.applyBatch(board, { items }).then(() => assert.fail("applied"), (e: unknown) => e);
  assert.ok(err instanceof BatchRejectedError, String(err));
  console.log(`# rejected: ${err.detail} ${JSON.stringify(err.fields.summary)}`);
  assert.match(err.fields.batch_fingerprint, /^sha256:/);
  const [ok, bad] = err.fields.results;
  assert.equal(ok?.id, "r2");
  assert.equal(bad?.status, "conflict");
  assert.equal(bad.conflict?.code, "revision_conflict");
  assert.equal(bad.conflict.current_revision, rec.revision);
  assert.match(bad.conflict.content_hash ?? "", /^sha256:/);
  assert.equal(err.fields.summary.conflicts, 1);
  await assert.rejects(pd.runtime.getRecord(board, "r2"), RecordNotFoundError); // nothing written
  assert.deepEqual((await pd.runtime.getRecord(board, "r1")).payload, { n: 1 });
  const part = await pd.runtime.applyBatch(board, { items, mode: "partial" });
  assert.deepEqual(part.results.map((r) => r.status), ["created", "conflict"]);
  assert.deepEqual((await pd.runtime.getRecord(board, "r2")).payload, { n: 2 });
});

test("Merge_ofAStaleUpdate_disjointFieldsMerge_overlappingOnesRejectWithTheTypedConflict", async () => {
  const board = uniq("b");
  const base = await pd.runtime.createRecord(board, { id: "doc", payload: { title: "draft", tags: ["a"], owner: "ada" } });
  const theirs = await pd.admin.updateRecord(board, "doc", { expectedRevision: base.revision, payload: { title: "final", tags: ["a"], owner: "ada" } });
  await assert.rejects(pd.runtime.updateRecord(board, "doc", { expectedRevision: base.revision, payload: { title: "draft", tags: ["a"], owner: "bob" } }), RevisionConflictError);
  const merged = await pd.runtime.updateRecord(board, "doc", { expectedRevision: base.revision, merge: true, basePayload: base.payload, payload: { title: "draft", tags: ["a"], owner: "bob" } });
  assert.equal(merged.revision, theirs.revision + 1);
  assert.deepEqual(merged.payload, { title: "final", tags: ["a"], owner: "bob" });
  const err = await pd.runtime.updateRecord(board, "doc", { expectedRevision: base.revision, merge: true, payload: { title: "mine", tags: ["a"], owner: "ada", note: "x" } })
    .then(() => assert.fail("merged"), (e: unknown) => e);
  assert.ok(err instanceof MergeConflictError, String(err));
  console.log(`# merge conflict: ${err.detail} ${JSON.stringify(err.fields.conflicts)}`);
  assert.equal(err.fields.current_revision, merged.revision);
  assert.deepEqual(err.fields.conflicts, [{ path: ["title"], base: "draft", ours: "mine", theirs: "final" }]);
  assert.deepEqual((await pd.runtime.getRecord(board, "doc")).payload, merged.payload);
  // In a batch the same overlap is the item's conflict, with the paths.
  await assert.rejects(pd.runtime.applyBatch(board, { items: [{ op: "update", id: "doc", expected_revision: base.revision, merge: true, payload: { title: "mine", tags: ["a"], owner: "ada" } }] }),
    (e: unknown) => e instanceof BatchRejectedError && e.fields.results[0]?.conflict?.code === "merge_conflict" &&
      JSON.stringify(e.fields.results[0].conflict.conflicts?.map((c) => c.path)) === '[["title"]]');
  // A stale batch item of disjoint changes is merged; the proof says so.
  await pd.admin.updateRecord(board, "doc", { expectedRevision: merged.revision, payload: { ...merged.payload as object, note: "theirs" } });
  const ok = await pd.runtime.applyBatch(board, { items: [{ op: "update", id: "doc", expected_revision: merged.revision, merge: true, payload: { title: "final", tags: ["a", "b"], owner: "bob" } }] });
  assert.deepEqual(ok.results.map((r) => [r.status, r.revision_before, r.revision_after]), [["merged", merged.revision + 1, merged.revision + 2]]);
  assert.deepEqual((await pd.runtime.getRecord(board, "doc")).payload, { title: "final", tags: ["a", "b"], owner: "bob", note: "theirs" });
});

test("WriteUnderAnIntent_outsideItsScope_rejectsWithOutsideIntent_andAfterRelease_staleFence", async () => {
  const board = uniq("crm");
  await pd.runtime.createRecord(board, { id: "eu-1", payload: { n: 1 } });
  await pd.runtime.createRecord(board, { id: "us-1", payload: { n: 1 } });
  const ref = await withIntent(pd.runtime, { holder: "importer", scope: { records: [{ board, prefixes: ["eu-"] }] } }, async (it) => {
    assert.equal((await it.updateRecord(board, "eu-1", { expectedRevision: 1, payload: { n: 2 } })).revision, 2);
    const out = await it.updateRecord(board, "us-1", { expectedRevision: 1, payload: { n: 2 } }).then(() => assert.fail("written"), (e: unknown) => e);
    assert.ok(out instanceof OutsideIntentError, String(out));
    console.log(`# outside: ${out.detail} field=${out.fields.field ?? ""}`);
    assert.equal(out.status, 422);
    assert.equal(out.fields.intent_id, it.id);
    await assert.rejects(it.applyBatch(board, { items: [{ op: "update", id: "eu-1", expected_revision: 2, payload: { n: 3 } }, { op: "update", id: "us-1", expected_revision: 1, payload: { n: 3 } }] }),
      (e: unknown) => e instanceof OutsideIntentError && e.fields.intent_id === it.id);
    assert.equal((await pd.runtime.getRecord(board, "eu-1")).revision, 2);
    return it.ref;
  });
  assert.deepEqual((await pd.runtime.getRecord(board, "us-1")).payload, { n: 1 });
  await assert.rejects(pd.runtime.updateRecord(board, "eu-1", { expectedRevision: 2, payload: { n: 4 }, intent: ref }),
    (e: unknown) => e instanceof StaleFenceError && e.fields.intent_id === ref.id && e.fields.state === "released");
  await assert.rejects(pd.runtime.applyBatch(board, { items: [{ op: "update", id: "eu-1", expected_revision: 2, payload: { n: 4 } }], intent: ref }), StaleFenceError);
});

test("Merge_versionCreateFromAStaleBase_keepsBothChanges_orRejectsWithTheConflictingPaths", async () => {
  const agent = uniq("support");
  const config: PromptConfig = { system: "You are {{persona}}.", variables: { persona: { default: "Ada" } }, memory: ["Prefers email."], model: { name: "gpt-4o", temperature: 0.2 } };
  await pd.admin.createVersion(agent, { baseVersion: 0, config });
  const theirs = await pd.admin.createVersion(agent, { baseVersion: 1, config: { ...config, model: { name: "gpt-4o", temperature: 0.7 } } });
  const ours: PromptConfig = { ...config, memory: ["Prefers phone."] };
  await assert.rejects(pd.admin.createVersion(agent, { baseVersion: 1, config: ours }), VersionConflictError);
  const merged = await pd.admin.createVersion(agent, { baseVersion: 1, config: ours, merge: true });
  assert.equal(merged.version, theirs.version + 1);
  assert.deepEqual(merged.merge, { base_version: 1, theirs_version: theirs.version });
  assert.deepEqual(merged.config.model, { name: "gpt-4o", temperature: 0.7 });
  assert.deepEqual(merged.config.memory, ["Prefers phone."]);
  const err = await pd.admin.createVersion(agent, { baseVersion: 1, merge: true, config: { ...config, model: { name: "gpt-4o", temperature: 0.1 } } })
    .then(() => assert.fail("merged"), (e: unknown) => e);
  assert.ok(err instanceof MergeConflictError, String(err));
  assert.equal(err.fields.latest_version, merged.version);
  assert.equal(err.fields.base_version, 1);
  assert.deepEqual(err.fields.conflicts, [{ path: ["model", "temperature"], base: 0.2, ours: 0.1, theirs: 0.7 }]);
});
