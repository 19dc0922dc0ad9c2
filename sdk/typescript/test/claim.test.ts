// HeldClaim / withClaim / claimLoop against a real promptd: the heartbeat
// keeps a claim past its TTL, a claim taken away aborts the work's signal
// and fences its writes out without a call, work that throws gives the
// record back, and a loop takes each record exactly once.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import {
  Client, ClaimEndedError, LeaseLostError, StaleFenceError, BoardNotFoundError, InvalidTransitionError, claimAndHold, claimLoop, withClaim,
  type HeldClaim,
} from "../src/index.js";
import { startPromptd, uniq, RUNTIME_SECRET, type Promptd } from "./harness.js";

let pd: Promptd;
before(async () => { pd = await startPromptd(); });
after(async () => { await pd?.stop(); });

const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const aborted = (s: AbortSignal): Promise<unknown> =>
  s.aborted ? Promise.resolve(s.reason) : new Promise((r) => s.addEventListener("abort", () => r(s.reason), { once: true }));

/** A client whose calls are counted. */
function counted(): { c: Client; calls: () => number } {
  let n = 0;
  const f: typeof fetch = (input, init) => { n++; return fetch(input, init); };
  return { c: new Client({ baseUrl: pd.url, token: RUNTIME_SECRET, fetch: f }), calls: () => n };
}

test("withClaim_heartbeatKeepsTheClaimPastItsTTL_writesCarryTheFence_andDoneEndsTheClaim", async () => {
  const board = uniq("hold");
  await pd.runtime.createRecord(board, { id: "r1", payload: { n: 1 } });
  let endedWith: unknown;
  let heartbeats = 0;
  let claim: HeldClaim | undefined;
  const out = await withClaim(pd.runtime, board, { holder: "worker-a", ttlMs: 600 }, async (c, signal) => {
    claim = c;
    assert.equal(c.ttlMs, 600);
    assert.equal(c.record.owner, "worker-a");
    await delay(1500); // 2.5 TTLs: without a heartbeat the claim would have expired
    assert.equal(signal.aborted, false, "still held after 1.5 s on a 600 ms TTL");
    heartbeats = c.heartbeats;
    const running = await c.update({ state: "running" });
    assert.equal(running.owner, "worker-a");
    assert.equal(c.held, true, "running keeps the claim");
    const done = await c.update({ state: "done", payload: { summary: "ok" } });
    assert.equal(done.state, "done");
    endedWith = await aborted(signal);
    return done.revision;
  });
  console.log(`# withClaim: ${heartbeats} heartbeats in 1.5 s (ttl 600 ms), signal reason ${(endedWith as Error).name}`);
  assert.ok(heartbeats >= 3, `heartbeats: ${heartbeats}`);
  assert.ok(endedWith instanceof ClaimEndedError, "ended, not lost");
  assert.ok(claim?.ended && !claim.lost && claim.lostError === undefined);
  const rec = await pd.runtime.getRecord(board, "r1");
  assert.equal(rec.state, "done");
  assert.equal(rec.owner, null);
  assert.equal(rec.revision, out);
  assert.deepEqual(rec.payload, { summary: "ok" });
});

test("HeldClaim_takenAway_abortsTheSignalWithinTheTTL_writesRejectWithoutACall_andWithClaimRejectsLost", async () => {
  const board = uniq("lost");
  await pd.runtime.createRecord(board, { id: "r1", payload: {} });
  const { c, calls } = counted();
  let lostAfterMs = -1;
  let reason: unknown;
  let thiefFence = 0;
  let onLost: unknown;
  const run = withClaim(c, board, { holder: "worker-a", ttlMs: 600, onLost: (e) => { onLost = e; } }, async (claim, signal) => {
    // From outside: the claim is released with its fence and claimed by another.
    await pd.runtime.releaseRecord(board, "r1", claim.fence);
    const t0 = Date.now();
    const thief = await pd.runtime.claimNext(board, { holder: "worker-b", ttlMs: 10_000 });
    assert.ok(thief && thief.fence > claim.fence);
    thiefFence = thief.fence;
    reason = await aborted(signal); // the next heartbeat (ttl/3) hears stale_fence
    lostAfterMs = Date.now() - t0;
    assert.ok(claim.lost);
    const before = calls();
    await assert.rejects(claim.update({ state: "running" }), (e: unknown) => e instanceof LeaseLostError);
    assert.equal(calls(), before, "no call once the claim is known lost");
    return "finished";
  });
  await assert.rejects(run, (e: unknown) => e instanceof LeaseLostError);
  console.log(`# lost: signal aborted ${lostAfterMs} ms after the record was taken (ttl 600 ms), cause ${((reason as Error).cause as Error).name}`);
  assert.ok(lostAfterMs >= 0 && lostAfterMs < 800, `lost after ${lostAfterMs} ms`);
  assert.ok(reason instanceof LeaseLostError);
  assert.ok(reason.cause instanceof StaleFenceError);
  assert.equal(onLost, reason, "onLost called with the same error");
  // The thief's claim is untouched: withClaim did not release it.
  const rec = await pd.runtime.getRecord(board, "r1");
  assert.equal(rec.owner, "worker-b");
  assert.equal(rec.fence, thiefFence);
});

test("HeldClaim_control_nothingTakesItAway_theSignalDoesNotAbort", async () => {
  const board = uniq("control");
  await pd.runtime.createRecord(board, { id: "r1", payload: {} });
  const held = await claimAndHold(pd.runtime, board, { holder: "worker-a", ttlMs: 600 });
  assert.ok(held);
  await delay(1000);
  console.log(`# control: after 1 s, aborted=${held.signal.aborted}, heartbeats=${held.heartbeats}`);
  assert.equal(held.signal.aborted, false);
  assert.equal(held.lost, false);
  const released = await held.release();
  assert.ok(released);
  assert.equal(released.state, "pending");
  assert.ok(held.signal.reason instanceof ClaimEndedError, "release ends the claim, not a loss");
});

test("withClaim_workThrows_theRecordIsReleased_andAnotherHolderClaimsItAtOnce", async () => {
  const board = uniq("throws");
  await pd.runtime.createRecord(board, { id: "r1", payload: {} });
  let fence = 0;
  await assert.rejects(withClaim(pd.runtime, board, { holder: "worker-a", ttlMs: 30_000 }, async (claim) => {
    fence = claim.fence;
    await claim.update({ state: "running" });
    throw new Error("boom");
  }), /boom/);
  const rec = await pd.runtime.getRecord(board, "r1");
  assert.equal(rec.state, "pending");
  assert.equal(rec.owner, null);
  // 30 s TTL: only the release can make it claimable now.
  const next = await pd.runtime.claimNext(board, { holder: "worker-b", waitMs: 0 });
  assert.ok(next, "claimable at once");
  assert.ok(next.fence > fence);
  assert.equal(next.record.owner, "worker-b");
  // And nothing to claim: null, no work run.
  let ran = false;
  assert.equal(await withClaim(pd.runtime, board, { holder: "worker-c" }, () => { ran = true; return Promise.resolve(1); }), null);
  assert.equal(ran, false);
});

test("HeldClaim_noHeartbeatGetsThrough_isLostAtItsDeadline", async () => {
  const own = await startPromptd();
  try {
    const board = uniq("deadline");
    await own.runtime.createRecord(board, { id: "r1", payload: {} });
    const held = await claimAndHold(own.runtime, board, { holder: "worker-a", ttlMs: 600 });
    assert.ok(held);
    const t0 = Date.now();
    own.pause(); // SIGSTOP: heartbeats time out, promptd never says no
    const reason = await aborted(held.signal);
    const ms = Date.now() - t0;
    own.resume();
    console.log(`# deadline: lost ${ms} ms after promptd stopped answering (ttl 600 ms, deadline ttl - ttl/5)`);
    assert.ok(reason instanceof LeaseLostError);
    assert.ok(!(reason.cause instanceof StaleFenceError));
    assert.ok(ms <= 600, `lost after ${ms} ms: must be before the TTL ran out`);
  } finally {
    own.resume();
    await own.stop();
  }
});

test("claimLoop_twoWorkersTakeEachRecordExactlyOnce_andResolveWhenTheSignalAborts", async () => {
  const board = uniq("loop");
  const n = 8;
  for (let i = 0; i < n; i++) await pd.runtime.createRecord(board, { id: `r${i}`, payload: { i } });
  const seen: string[] = [];
  const ac = new AbortController();
  const work = (holder: string) => async (claim: HeldClaim): Promise<void> => {
    seen.push(claim.id);
    await claim.update({ state: "running" });
    await delay(20);
    await claim.update({ state: "done", payload: { by: holder } });
    if (seen.length === n) ac.abort();
  };
  const t0 = Date.now();
  await Promise.all([
    claimLoop(pd.runtime, board, { holder: "loop-a", ttlMs: 5000, signal: ac.signal }, work("loop-a")),
    claimLoop(pd.runtime, board, { holder: "loop-b", ttlMs: 5000, signal: ac.signal }, work("loop-b")),
  ]);
  const by: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    const rec = await pd.runtime.getRecord(board, `r${i}`);
    assert.equal(rec.state, "done");
    const who = (rec.payload as { by: string }).by;
    by[who] = (by[who] ?? 0) + 1;
  }
  console.log(`# claimLoop: ${n} records in ${Date.now() - t0} ms, ${JSON.stringify(by)}, seen ${seen.length}`);
  assert.equal(seen.length, n);
  assert.equal(new Set(seen).size, n, "each record once");
});

test("claimLoop_workThatThrows_isReportedToOnWorkError_andItsRecordGoesBack", async () => {
  const board = uniq("loopErr");
  await pd.runtime.createRecord(board, { id: "bad", payload: {} });
  const ac = new AbortController();
  const reported: string[] = [];
  await claimLoop(pd.runtime, board, {
    holder: "loop-e", ttlMs: 5000, waitMs: 200, signal: ac.signal,
    onWorkError: (err, claim) => {
      reported.push(`${claim.id}: ${(err as Error).message}`);
      ac.abort();
      throw new Error("a callback that throws does not end the loop with the record held");
    },
  }, () => Promise.reject(new Error("model timed out")));
  console.log(`# claimLoop onWorkError: ${JSON.stringify(reported)}`);
  assert.deepEqual(reported, ["bad: model timed out"]);
  const rec = await pd.runtime.getRecord(board, "bad");
  assert.equal(rec.state, "pending");
  assert.equal(rec.owner ?? "", "");
});

test("claimLoop_anAnswerARetryCannotFix_rejectsTheLoop", async () => {
  const ac = new AbortController();
  const t = setTimeout(() => ac.abort(), 5000);
  try {
    await assert.rejects(claimLoop(pd.runtime, uniq("nosuch"), { holder: "w", signal: ac.signal }, () => Promise.resolve()),
      (e: unknown) => e instanceof BoardNotFoundError);
  } finally {
    clearTimeout(t);
  }
});

test("claimLoop_overTheQuota_waitsOutRetryAfter_insteadOfRejectingOrSpinning", async () => {
  const board = uniq("quota");
  await pd.admin.request({
    method: "PUT", path: `/v1/boards/${board}`, body: {
      states: ["pending", "claimed", "done", "failed"], initial: "pending",
      transitions: { pending: ["claimed"], claimed: ["done", "pending"] },
      claim: { from: "pending", to: "claimed", exhausted: "failed" }, terminal: ["done", "failed"],
      quota: { claims_per_minute: 1 }, expected_revision: 0,
    },
  });
  for (const id of ["r1", "r2"]) await pd.runtime.createRecord(board, { id, payload: {} });
  let claims = 0;
  let retryAfterMs: number | undefined;
  const f: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    const url = input instanceof Request ? input.url : String(input);
    if (url.endsWith("/claim")) {
      claims++;
      if (res.status === 429) retryAfterMs ??= Number(res.headers.get("retry-after")) * 1000;
    }
    return res;
  };
  const c = new Client({ baseUrl: pd.url, token: RUNTIME_SECRET, fetch: f });
  // The quota counts per minute of the (SQL, here local) clock: keep both claims in one window.
  const inMinute = Date.now() % 60_000;
  if (inMinute > 58_000) await delay(60_000 - inMinute + 50);
  const ac = new AbortController();
  const done: string[] = [];
  const loop = claimLoop(c, board, { holder: "w", signal: ac.signal, waitMs: 200 }, async (claim) => {
    await claim.update({ state: "done" });
    done.push(claim.id);
  });
  await delay(700);
  ac.abort();
  await loop; // resolves: a 429 is waited out, not an error
  console.log(`# quota: ${claims} claim calls in 0.7 s, done ${JSON.stringify(done)}, Retry-After ${retryAfterMs} ms`);
  assert.deepEqual(done, ["r1"]);
  assert.ok(retryAfterMs !== undefined && retryAfterMs >= 1000, "the second claim was answered 429 with Retry-After");
  assert.equal(claims, 2, "the loop slept on Retry-After instead of trying again");
});

test("HeldClaim_completeFromClaimed_onTheDefaultBoard_stepsThroughRunning_fenced", async () => {
  const board = uniq("steps");
  await pd.runtime.createRecord(board, { id: "r1", payload: {} });
  await pd.runtime.createRecord(board, { id: "r2", payload: {} });
  const done = await withClaim(pd.runtime, board, { holder: "worker-a" }, async (c) => {
    assert.equal(c.record.state, "claimed");
    return c.complete({ ok: true });
  });
  assert.equal(done?.state, "done");
  assert.deepEqual(done?.payload, { ok: true });
  const failed = await withClaim(pd.runtime, board, { holder: "worker-a" }, (c) => c.fail({ why: "boom" }));
  assert.equal(failed?.state, "failed");
  assert.equal((await pd.runtime.getRecord(board, "r2")).state, "failed");
});

test("HeldClaim_completeWithNoPathInTheMachine_rejectsNamingTheMissingStep", async () => {
  const board = uniq("nopath");
  await pd.admin.putBoard(board, {
    states: ["pending", "claimed", "done", "failed"], initial: "pending",
    transitions: { pending: ["claimed", "done"], claimed: ["failed", "pending"] },
    claim: { from: "pending", to: "claimed", exhausted: "failed" }, terminal: ["done", "failed"],
  });
  await pd.runtime.createRecord(board, { id: "r1", payload: {} });
  const out = await withClaim(pd.runtime, board, { holder: "worker-a" }, async (c) => {
    await assert.rejects(c.complete({ ok: true }), (e: unknown) =>
      e instanceof InvalidTransitionError && e.message.includes("claimed -> done") && e.fields["state"] === "claimed");
    return c.fail();
  });
  assert.equal(out?.state, "failed");
});
