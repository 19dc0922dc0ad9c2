import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import {
  Client, PromptdError, StaleFenceError, RevisionConflictError, LeaseHeldError, LeaseLostError,
  MissingVariableError, UnauthorizedError, VersionConflictError, withSessionLease, appendOptimistic,
} from "../src/index.js";
import { startPromptd, publish, uniq, RUNTIME_SECRET, type Promptd } from "./harness.js";

let pd: Promptd;
const agent = "support";
const env = "prod";

before(async () => {
  pd = await startPromptd();
  await publish(pd.admin, agent, env, {
    system: "You are {{persona}} for {{company}}.",
    variables: { persona: { required: true }, company: { default: "ACME" } },
    model: { name: "gpt-4o", temperature: 0.2 },
  });
});
after(async () => { await pd?.stop(); });

test("Client_problemJson_isTypedErrorPerCode", async () => {
  const bad = new Client({ baseUrl: pd.url, token: "nope-nope-nope-nope" });
  await assert.rejects(bad.getEnv(agent, env), (e: unknown) => e instanceof UnauthorizedError && e.status === 401 && e.code === "unauthorized");
  await assert.rejects(
    pd.runtime.assemble(agent, env, { variables: {} }),
    (e: unknown) => e instanceof MissingVariableError && e.status === 422 && e.fields.variable === "persona",
  );
  await assert.rejects(
    pd.admin.createVersion(agent, { baseVersion: 0, config: { system: "x" } }),
    (e: unknown) => e instanceof VersionConflictError && e instanceof PromptdError && typeof e.fields.latest_version === "number",
  );
});

test("Client_writeWhoseAnswerIsLost_isRetriedWithTheSameIdempotencyKey_andAppliedOnce", async () => {
  let calls = 0;
  const keys: string[] = [];
  // The first attempt reaches the server, which appends; the answer is then
  // "lost" (the fetch throws), so the client retries with the same key.
  const lossy: typeof fetch = async (input, init) => {
    calls++;
    const h = new Headers(init?.headers);
    if (h.get("idempotency-key")) keys.push(h.get("idempotency-key")!);
    const res = await fetch(input, init);
    if (calls === 1) { await res.text(); throw new TypeError("fetch failed (simulated lost answer)"); }
    return res;
  };
  const s = await pd.runtime.createSession({ agent, env, sessionId: uniq("idem") });
  const c = new Client({ baseUrl: pd.url, token: RUNTIME_SECRET, fetch: lossy, maxRetryWaitMs: 20 });
  const out = await c.appendTurns(s.session_id, [{ role: "user", content: "hi" }], { expectedRevision: 0 });
  assert.equal(calls, 2);
  assert.equal(keys.length, 2);
  assert.equal(keys[0], keys[1], "one key per logical call, reused across retries");
  assert.deepEqual(out.seqs, [1]);
  const got = await pd.runtime.getSession(s.session_id);
  assert.equal(got.revision, 1, "applied once");
  assert.equal(got.turns?.length, 1);
});

test("Client_traceparent_isSent", async () => {
  let seen = "";
  const spy: typeof fetch = (input, init) => { seen = new Headers(init?.headers).get("traceparent") ?? ""; return fetch(input, init); };
  const c = new Client({ baseUrl: pd.url, token: RUNTIME_SECRET, fetch: spy });
  const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  await c.resolve(agent, env, { userId: "u1" }, { traceparent: tp });
  assert.equal(seen, tp);
});

test("Client_abortSignal_cancelsTheCall", async () => {
  const ac = new AbortController();
  ac.abort(new Error("caller gave up"));
  await assert.rejects(pd.runtime.resolve(agent, env, {}, { signal: ac.signal }), /caller gave up/);
});

test("appendOptimistic_whenAnotherWriterAppendsFirst_rereadsAndAppends", async () => {
  const s = await pd.runtime.createSession({ agent, env, sessionId: uniq("opt") });
  const seen: number[] = [];
  const out = await appendOptimistic(pd.runtime, s.session_id, async (cur) => {
    seen.push(cur.revision);
    if (seen.length === 1) {
      // Another writer appends between our read and our write.
      await pd.runtime.appendTurns(s.session_id, [{ role: "user", content: "theirs" }], { expectedRevision: cur.revision });
    }
    return [{ role: "user", content: `mine after revision ${cur.revision}` }];
  }, { maxAttempts: 3 });
  assert.deepEqual(seen, [0, 1], "read again after the conflict");
  assert.equal(out.revision, 2);
  await assert.rejects(pd.runtime.appendTurns(s.session_id, [{ role: "user", content: "x" }], { expectedRevision: 0 }),
    (e: unknown) => e instanceof RevisionConflictError && e.fields.current_revision === 2);
});

test("withSessionLease_writesCarryTheFence_andTheLeaseIsFreedAtTheEnd", async () => {
  const s = await pd.runtime.createSession({ agent, env, sessionId: uniq("lease") });
  const fence = await withSessionLease(pd.runtime, s.session_id, "worker-a", { ttlMs: 1000 }, async (lease) => {
    await lease.appendTurns([{ role: "user", content: "fenced" }], 0);
    // An unfenced write while the lease is held is refused.
    await assert.rejects(pd.runtime.appendTurns(s.session_id, [{ role: "user", content: "unfenced" }], { expectedRevision: 1 }),
      (e: unknown) => e instanceof LeaseHeldError && e.fields.holder === "worker-a");
    // Outlive several TTLs: the keepalive renews.
    await new Promise((r) => setTimeout(r, 1500));
    await lease.appendTurns([{ role: "user", content: "still mine" }], 1);
    return lease.fence;
  });
  const got = await pd.runtime.getSession(s.session_id);
  assert.equal(got.lease, null, "released at the end");
  assert.equal(got.revision, 2);
  assert.equal(got.fence, fence);
});

test("withSessionLease_whenPreempted_abortsTheSignal_rejectsWritesWithoutACall_andRejectsLeaseLost", async () => {
  const s = await pd.runtime.createSession({ agent, env, sessionId: uniq("lost") });
  let calls = 0;
  const counting: typeof fetch = (input, init) => { calls++; return fetch(input, init); };
  const c = new Client({ baseUrl: pd.url, token: RUNTIME_SECRET, fetch: counting });
  let abortedWith: unknown;
  const run = withSessionLease(c, s.session_id, "worker-a", { ttlMs: 600 }, async (lease, signal) => {
    await lease.appendTurns([{ role: "user", content: "a1" }], 0);
    const other = await pd.runtime.acquireSessionLease(s.session_id, { holder: "worker-b", mode: "preempt", ttlMs: 10_000 });
    assert.ok(other.fence > lease.fence);
    // Within a renewal period (ttl/3 = 200 ms) the keepalive hears lease_lost.
    await new Promise<void>((res) => signal.addEventListener("abort", () => res(), { once: true }));
    abortedWith = signal.reason;
    const before = calls;
    await assert.rejects(lease.appendTurns([{ role: "user", content: "a2" }], 1), (e: unknown) => e instanceof LeaseLostError);
    assert.equal(calls, before, "no call once the lease is known lost");
    return "finished";
  });
  await assert.rejects(run, (e: unknown) => e instanceof LeaseLostError);
  assert.ok(abortedWith instanceof LeaseLostError);
});

test("HeldLease_staleFenceAnswer_marksTheLeaseLost", async () => {
  const s = await pd.runtime.createSession({ agent, env, sessionId: uniq("stale") });
  await assert.rejects(withSessionLease(pd.runtime, s.session_id, "worker-a", { ttlMs: 30_000 }, async (lease, signal) => {
    await pd.runtime.acquireSessionLease(s.session_id, { holder: "worker-b", mode: "preempt" });
    // The keepalive will not notice for 10 s; the write itself is refused by the server.
    await assert.rejects(lease.appendTurns([{ role: "user", content: "late" }], 0),
      (e: unknown) => e instanceof StaleFenceError && e.fields.current_fence > lease.fence);
    assert.ok(signal.aborted);
  }), (e: unknown) => e instanceof LeaseLostError);
});
