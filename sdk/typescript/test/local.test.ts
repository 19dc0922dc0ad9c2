// LocalPrompts against a real promptd: local answers equal the server's,
// no network call after warm-up, changes arrive over the stream, the disk
// copy serves a cold start while promptd is down, exposures add up.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, LocalPrompts, type Bundle } from "../src/index.js";
import { startPromptd, publish, uniq, RUNTIME_SECRET, type Promptd } from "./harness.js";

let pd: Promptd;
const env = "prod";
before(async () => { pd = await startPromptd(); });
after(async () => { await pd?.stop(); });

function counting(): { fetch: typeof fetch; calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    fetch: (input, init) => {
      calls.push(`${init?.method ?? "GET"} ${new URL(input instanceof Request ? input.url : input).pathname}`);
      return fetch(input, init);
    },
  };
}

function waitFor(lp: LocalPrompts, ok: (b: Bundle) => boolean, ms = 5000): Promise<void> {
  return new Promise((res, rej) => {
    const t = setTimeout(() => rej(new Error(`no update within ${ms} ms`)), ms);
    lp.onUpdate((b) => { if (ok(b)) { clearTimeout(t); res(); } });
  });
}

const config = (tag: string) => ({
  system: `You are {{persona}} (${tag}).`,
  skills: [{ name: "refunds", instructions: "Within {{days}} days." }],
  memory: ["Prefers email."],
  model: { name: "gpt-4o", temperature: 0.2 },
  variables: { persona: { required: true }, days: { default: "30" } },
});

test("LocalPrompts_afterWarmUp_resolvesAndAssemblesLikeTheServer_withNoNetworkCall", async () => {
  const agent = uniq("lp-eq");
  const v1 = await publish(pd.admin, agent, env, config("v1"));
  const v2 = (await pd.admin.createVersion(agent, { baseVersion: v1, config: config("v2") })).version;
  await pd.admin.createRelease(agent, env, { candidateVersion: v2, percent: 37.5, stickiness: "user" });
  const c = counting();
  const lp = await new LocalPrompts({ client: new Client({ baseUrl: pd.url, token: RUNTIME_SECRET, fetch: c.fetch }), agents: [agent], exposures: false }).start();
  try {
    const server = pd.runtime;
    let candidates = 0;
    const users = Array.from({ length: 40 }, (_, i) => `user-${i}`);
    const local = users.map((u) => lp.pick(agent, env, { userId: u }));
    for (const [i, u] of users.entries()) {
      const want = await server.resolve(agent, env, { userId: u });
      const got = local[i];
      assert.ok(got, "decided locally");
      assert.deepEqual({ version: got.version, content_hash: got.content_hash, release: got.release },
        { version: want.version, content_hash: want.content_hash, release: want.release }, u);
      const wantA = (await server.assemble(agent, env, { userId: u, variables: { persona: "Ada" } })).body;
      assert.deepEqual(await lp.assemble(agent, env, { userId: u, variables: { persona: "Ada" } }), wantA);
      if (want.release?.arm === "candidate") candidates++;
    }
    assert.ok(candidates > 0 && candidates < users.length, `both arms seen (${candidates} candidates)`);
    const before = c.calls.filter((x) => !x.endsWith("/v1/events")).length;
    for (let i = 0; i < 1000; i++) await lp.resolve(agent, env, { userId: `u-${i}` });
    for (let i = 0; i < 100; i++) await lp.assemble(agent, env, { userId: `u-${i}`, variables: { persona: "x" } }, "openai");
    const afterCalls = c.calls.filter((x) => !x.endsWith("/v1/events")).length;
    assert.equal(afterCalls - before, 0, "no network call after warm-up");
    console.log(`local: 1100 resolves/assembles after warm-up, ${afterCalls - before} network calls; ${candidates}/40 users in the candidate arm at 37.5%`);
  } finally {
    await lp.close();
  }
});

test("LocalPrompts_pointerSwitch_arrivesOverTheStream", async () => {
  const agent = uniq("lp-stream");
  const v1 = await publish(pd.admin, agent, env, config("v1"));
  const lp = await new LocalPrompts({ client: pd.runtime, agents: [agent], exposures: false, pollMs: 60_000 }).start();
  try {
    for (let i = 0; i < 50 && !lp.streaming; i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok(lp.streaming, "stream up");
    const v2 = (await pd.admin.createVersion(agent, { baseVersion: v1, config: config("v2") })).version;
    const seen = waitFor(lp, (b) => b.agents[agent]?.envs[env]?.version === v2);
    const rev = (await pd.admin.getEnv(agent, env)).revision;
    const t0 = performance.now();
    await pd.admin.putEnv(agent, env, v2, rev);
    await seen;
    const ms = performance.now() - t0;
    assert.equal((await lp.resolve(agent, env)).version, v2);
    console.log(`local: pointer switch seen by LocalPrompts over the stream after ${ms.toFixed(1)} ms (polling every 60 s)`);
  } finally {
    await lp.close();
  }
});

test("LocalPrompts_whenPromptdIsDown_keepsServing_andAFreshOneStartsFromTheDiskCopy", async () => {
  const own = await startPromptd();
  const agent = uniq("lp-disk");
  try {
    await publish(own.admin, agent, env, config("v1"));
    const cachePath = join(mkdtempSync(join(tmpdir(), "promptd-ts-cache-")), "bundle.json");
    const lp = await new LocalPrompts({ client: own.runtime, cachePath, exposures: false, pollMs: 200 }).start();
    const want = await lp.resolve(agent, env, { userId: "u1" });
    const saved = JSON.parse(readFileSync(cachePath, "utf8")) as { bundle: Bundle };
    assert.ok(saved.bundle.agents[agent], "the bundle is on disk");
    await own.stop();
    await new Promise((r) => setTimeout(r, 500)); // the stream and the poller notice
    assert.deepEqual(await lp.resolve(agent, env, { userId: "u1" }), want, "keeps serving");
    await lp.close();
    const cold = await new LocalPrompts({ client: own.runtime, cachePath, exposures: false, stream: false, pollMs: 60_000 }).start();
    assert.ok(cold.stats.fromDisk);
    assert.deepEqual(await cold.resolve(agent, env, { userId: "u1" }), want, "cold start from disk");
    await cold.close();
  } finally {
    await own.stop();
  }
});
