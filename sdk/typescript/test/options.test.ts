// Options are camelCase everywhere (the wire stays snake_case): each method
// that took a snake_case option sends the same body for its camelCase
// spelling, and the old spelling (deprecated in the types) still works.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Client } from "../src/index.js";
import { startPromptd, uniq, ADMIN_SECRET, type Promptd } from "./harness.js";

let pd: Promptd;
before(async () => { pd = await startPromptd(); });
after(async () => { await pd?.stop(); });

/** An admin client that records the JSON body of every request. */
function recording(): { c: Client; bodies: Record<string, unknown>[] } {
  const bodies: Record<string, unknown>[] = [];
  const f: typeof fetch = (input, init) => {
    if (typeof init?.body === "string") bodies.push(JSON.parse(init.body) as Record<string, unknown>);
    return fetch(input, init);
  };
  return { c: new Client({ baseUrl: pd.url, token: ADMIN_SECRET, fetch: f }), bodies };
}

test("options_camelCase_areSentSnakeCase_onTheWire", async () => {
  const { c, bodies } = recording();
  const agent = uniq("camel");
  const v1 = await c.createVersion(agent, { baseVersion: 0, config: { system: "one" } });
  assert.deepEqual(bodies.at(-1), { base_version: 0, config: { system: "one" } });
  await c.putEnv(agent, "prod", v1.version, 0);
  const v2 = await c.createVersion(agent, { baseVersion: v1.version, config: { system: "two" }, message: "m" });
  const rel = await c.createRelease(agent, "prod", { candidateVersion: v2.version, percent: 10, expectedRevision: 1 });
  assert.deepEqual(bodies.at(-1), { candidate_version: v2.version, percent: 10, expected_revision: 1 });
  assert.equal(rel.candidate_version, v2.version);
  const paused = await c.transitionRelease(rel.id, "pause", { expectedRevision: rel.revision, reason: "r" });
  assert.deepEqual(bodies.at(-1), { expected_revision: rel.revision, reason: "r" });
  assert.equal(paused.state, "paused");

  const sid = uniq("s");
  const s = await c.createSession({ agent, env: "prod", sessionId: sid, userId: "u-1", idleTtlMs: 60_000 });
  assert.deepEqual(bodies.at(-1), { agent, env: "prod", session_id: sid, user_id: "u-1", idle_ttl_ms: 60_000 });
  assert.equal(s.session_id, sid);
  assert.equal(s.user_id, "u-1");

  const board = uniq("b");
  const r = await c.createRecord(board, { id: "r1", payload: { n: 1 }, dedupeKey: "k1" });
  assert.deepEqual(bodies.at(-1), { id: "r1", payload: { n: 1 }, dedupe_key: "k1" });
  assert.equal(r.dedupe_key, "k1");
  const proof = await c.applyBatch(board, { items: [
    { op: "update", id: "r1", expectedRevision: r.revision, payload: { n: 2 }, merge: true, basePayload: { n: 1 } },
    { op: "create", id: "r2", payload: {}, dedupeKey: "k2" },
  ] });
  assert.deepEqual((bodies.at(-1) as { items: unknown }).items, [
    { op: "update", id: "r1", expected_revision: r.revision, payload: { n: 2 }, merge: true, base_payload: { n: 1 } },
    { op: "create", id: "r2", payload: {}, dedupe_key: "k2" },
  ]);
  assert.deepEqual(proof.results.map((x) => x.status), ["updated", "created"]);
});

/* eslint-disable @typescript-eslint/no-deprecated -- this test uses the deprecated spellings on purpose */
test("options_deprecatedSnakeCase_stillWork", async () => {
  const { c, bodies } = recording();
  const agent = uniq("snake");
  const v1 = await c.createVersion(agent, { base_version: 0, config: { system: "one" } });
  assert.deepEqual(bodies.at(-1), { base_version: 0, config: { system: "one" } });
  await c.putEnv(agent, "prod", v1.version, 0);
  const v2 = await c.createVersion(agent, { base_version: v1.version, config: { system: "two" } });
  const rel = await c.createRelease(agent, "prod", { candidate_version: v2.version, percent: 5, expected_revision: 1 });
  assert.deepEqual(bodies.at(-1), { candidate_version: v2.version, percent: 5, expected_revision: 1 });
  assert.equal((await c.transitionRelease(rel.id, "rollback", { expected_revision: rel.revision })).state, "rolled_back");
  const sid = uniq("s");
  await c.createSession({ agent, env: "prod", session_id: sid, user_id: "u-2", idle_ttl_ms: 60_000 });
  assert.deepEqual(bodies.at(-1), { agent, env: "prod", session_id: sid, user_id: "u-2", idle_ttl_ms: 60_000 });
  const board = uniq("b");
  const r = await c.createRecord(board, { id: "r1", payload: {}, dedupe_key: "k1" });
  assert.deepEqual(bodies.at(-1), { id: "r1", payload: {}, dedupe_key: "k1" });
  await c.applyBatch(board, { items: [{ op: "update", id: "r1", expected_revision: r.revision, payload: { n: 1 } }] });
  assert.deepEqual((bodies.at(-1) as { items: unknown }).items, [{ op: "update", id: "r1", expected_revision: r.revision, payload: { n: 1 } }]);
});

/* eslint-enable @typescript-eslint/no-deprecated */

test("lists_recordsAndSessions", async () => {
  const { c } = recording();
  const board = uniq("b");
  await c.createRecord(board, { id: "a", payload: {} });
  await c.createRecord(board, { id: "b", payload: {} });
  assert.ok(await c.claimNext(board, { holder: "w" }));
  assert.deepEqual((await c.listRecords(board, { state: "pending" })).items.map((x) => x.id), ["b"]);
  const agent = uniq("ls");
  await c.putEnv(agent, "prod", (await c.createVersion(agent, { baseVersion: 0, config: { system: "x" } })).version, 0);
  const s = await c.createSession({ agent, env: "prod" });
  assert.deepEqual((await c.listSessions({ agent, state: "open" })).items.map((x) => x.session_id), [s.session_id]);
});

test("releases_startRampPauseResumePromote_getAndList", async () => {
  const { c } = recording();
  const agent = uniq("rel");
  const v1 = await c.createVersion(agent, { baseVersion: 0, config: { system: "one" } });
  await c.putEnv(agent, "prod", v1.version, 0);
  const v2 = await c.createVersion(agent, { baseVersion: v1.version, config: { system: "two" } });
  const rel = await c.createRelease(agent, "prod", { candidateVersion: v2.version, percent: 10, stickiness: "user" });
  const ramped = await c.setReleasePercent(rel.id, 50, rel.revision);
  assert.equal(ramped.percent, 50);
  assert.equal((await c.transitionRelease(rel.id, "pause", { expectedRevision: ramped.revision, reason: "watch" })).state, "paused");
  assert.equal((await c.transitionRelease(rel.id, "resume")).state, "running");
  assert.equal((await c.transitionRelease(rel.id, "promote")).state, "promoted");
  assert.equal((await c.getRelease(rel.id)).state, "promoted");
  assert.deepEqual((await c.listReleases(agent, "prod")).items.map((r) => r.id), [rel.id]);
  assert.equal((await c.getEnv(agent, "prod")).version, v2.version);
});
