// Exposures of local resolves add up on the server (POST /v1/exposures,
// GET .../exposures). Each batch keeps its Idempotency-Key across retries.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Client, LocalPrompts } from "../src/index.js";
import { startPromptd, publish, uniq, RUNTIME_SECRET, type Promptd } from "./harness.js";

let pd: Promptd;
const env = "prod";
before(async () => { pd = await startPromptd(); });
after(async () => { await pd?.stop(); });

const config = (tag: string) => ({ system: `You are ${tag}.` });

test("LocalPrompts_exposures_afterNLocalResolves_matchWhatWasResolved", async () => {
  const agent = uniq("lp-exp");
  const v1 = await publish(pd.admin, agent, env, config("v1"));
  const v2 = (await pd.admin.createVersion(agent, { baseVersion: v1, config: config("v2") })).version;
  const rel = await pd.admin.createRelease(agent, env, { candidateVersion: v2, percent: 50, stickiness: "user" });
  const lp = await new LocalPrompts({ client: pd.runtime, agents: [agent], exposureFlushMs: 0 }).start();
  const want = new Map<string, number>();
  const N = 3333; // with the Go client's 3,334 and the Python SDK's 3,333: 10,000
  for (let i = 0; i < N; i++) {
    const r = await lp.resolve(agent, env, { userId: `user-${i}` });
    const k = `${r.release?.arm ?? ""}/${r.version}`;
    want.set(k, (want.get(k) ?? 0) + 1);
  }
  await lp.close(); // flushes
  const got = await pd.runtime.request<{ items: { release_id: string | null; version: number; arm: string | null; count: number }[] }>(
    { method: "GET", path: `/v1/agents/${agent}/envs/${env}/exposures` });
  const have = new Map<string, number>();
  for (const it of got.items) {
    assert.equal(it.release_id, rel.id);
    const k = `${it.arm ?? ""}/${it.version}`;
    have.set(k, (have.get(k) ?? 0) + it.count);
  }
  assert.deepEqual(Object.fromEntries([...have].sort()), Object.fromEntries([...want].sort()));
  console.log(`exposures: ${N} local resolves -> ${JSON.stringify(Object.fromEntries(have))} on the server`);
});

test("ExposureBatcher_batchWhoseAnswerIsLost_isRetriedWithItsKey_andCountedOnce", async () => {
  const agent = uniq("lp-exp-retry");
  await publish(pd.admin, agent, env, config("v1"));
  let posts = 0;
  const lossy: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    if ((init?.method ?? "GET") === "POST" && String(input instanceof Request ? input.url : input).endsWith("/v1/exposures") && ++posts === 1) {
      await res.text();
      throw new TypeError("fetch failed (simulated lost answer)");
    }
    return res;
  };
  const client = new Client({ baseUrl: pd.url, token: RUNTIME_SECRET, fetch: lossy, maxRetryWaitMs: 20 });
  const lp = await new LocalPrompts({ client, agents: [agent], exposureFlushMs: 0, stream: false, pollMs: 60_000 }).start();
  for (let i = 0; i < 120; i++) await lp.resolve(agent, env, { userId: `u${i}` });
  await lp.close();
  assert.equal(posts, 2, "sent twice");
  const got = await pd.runtime.request<{ items: { count: number }[] }>({ method: "GET", path: `/v1/agents/${agent}/envs/${env}/exposures` });
  assert.equal(got.items.reduce((n, it) => n + it.count, 0), 120, "counted once");
});
