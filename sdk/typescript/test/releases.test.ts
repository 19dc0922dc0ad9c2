// The named release calls (createRelease, rampRelease, pauseRelease, resumeRelease,
// promoteRelease, rollbackRelease: the Python SDK's names) against a real promptd:
// each sends the route and body its older spelling (setReleasePercent,
// transitionRelease) sends, and answers the release.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Client, type Release } from "../src/index.js";
import { startPromptd, publish, uniq, ADMIN_SECRET, type Promptd } from "./harness.js";

let pd: Promptd;
before(async () => { pd = await startPromptd(); });
after(async () => { await pd?.stop(); });

/** An admin client that records every request's method, path and JSON body. */
function recording(): { c: Client; sent: { method: string; path: string; body: unknown }[] } {
  const sent: { method: string; path: string; body: unknown }[] = [];
  const f: typeof fetch = (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    sent.push({ method: init?.method ?? "GET", path: url.pathname, body: typeof init?.body === "string" ? JSON.parse(init.body) : undefined });
    return fetch(input, init);
  };
  return { c: new Client({ baseUrl: pd.url, token: ADMIN_SECRET, fetch: f }), sent };
}

async function twoVersions(c: Client): Promise<{ agent: string; v1: number; v2: number }> {
  const agent = uniq("nrel");
  const v1 = await publish(c, agent, "prod", { system: "one" });
  const v2 = (await c.createVersion(agent, { baseVersion: v1, config: { system: "two" } })).version;
  return { agent, v1, v2 };
}

test("releases_namedCalls_createRampPauseResumePromote", async () => {
  const { c, sent } = recording();
  const { agent, v1, v2 } = await twoVersions(c);
  const rel = await c.createRelease(agent, "prod", { candidateVersion: v2, percent: 10, stickiness: "user", message: "try v2" });
  assert.deepEqual([rel.state, rel.baseline_version, rel.candidate_version, rel.percent], ["running", v1, v2, 10]);

  let r: Release = await c.rampRelease(rel.id, 50, { expectedRevision: rel.revision, reason: "looks fine" });
  assert.deepEqual(sent.at(-1), { method: "PATCH", path: `/v1/releases/${rel.id}`, body: { percent: 50, expected_revision: rel.revision, reason: "looks fine" } });
  assert.equal(r.percent, 50);
  const ramped = r.revision;
  r = await c.pauseRelease(rel.id, { expectedRevision: ramped, reason: "lunch" });
  assert.deepEqual(sent.at(-1), { method: "POST", path: `/v1/releases/${rel.id}/pause`, body: { expected_revision: ramped, reason: "lunch" } });
  assert.equal(r.state, "paused");
  r = await c.resumeRelease(rel.id);
  assert.deepEqual(sent.at(-1), { method: "POST", path: `/v1/releases/${rel.id}/resume`, body: {} });
  assert.equal(r.state, "running");
  r = await c.promoteRelease(rel.id, { reason: "ship it" });
  assert.deepEqual(sent.at(-1), { method: "POST", path: `/v1/releases/${rel.id}/promote`, body: { reason: "ship it" } });
  assert.equal(r.state, "promoted");
  assert.equal((await c.getEnv(agent, "prod")).version, v2);
  assert.ok((await c.getRelease(rel.id)).history?.length, "the promoted release's history");
});

test("releases_namedCalls_rollbackKeepsTheBaseline", async () => {
  const { c, sent } = recording();
  const { agent, v1, v2 } = await twoVersions(c);
  const rel = await c.createRelease(agent, "prod", { candidateVersion: v2, percent: 25, stickiness: "session" });
  const r = await c.rollbackRelease(rel.id, { expectedRevision: rel.revision, reason: "bad" });
  assert.deepEqual(sent.at(-1), { method: "POST", path: `/v1/releases/${rel.id}/rollback`, body: { expected_revision: rel.revision, reason: "bad" } });
  assert.equal(r.state, "rolled_back");
  assert.equal((await c.getEnv(agent, "prod")).version, v1);
});

test("releases_rampRelease_staleRevision_isARevisionConflict", async () => {
  const { c } = recording();
  const { agent, v2 } = await twoVersions(c);
  const rel = await c.createRelease(agent, "prod", { candidateVersion: v2, percent: 10 });
  await c.rampRelease(rel.id, 20, { expectedRevision: rel.revision });
  await assert.rejects(c.rampRelease(rel.id, 30, { expectedRevision: rel.revision }), (e: unknown) => (e as { code?: string }).code === "revision_conflict");
});
