import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { StaleFenceError, ClaimedError } from "../src/index.js";
import { startPromptd, uniq, type Promptd } from "./harness.js";

let pd: Promptd;
before(async () => { pd = await startPromptd(); });
after(async () => { await pd?.stop(); });

test("Boards_claimHeartbeatComplete_withTheFence_andAFormerClaimIsFencedOut", async () => {
  const board = uniq("tasks");
  await pd.runtime.createRecord(board, { id: "t1", payload: { task: "summarize" } });
  const first = await pd.runtime.claimNext(board, { holder: "worker-a", ttlMs: 10_000 });
  assert.ok(first);
  const hb = await pd.runtime.heartbeat(board, "t1", first.fence, 10_000);
  assert.ok(hb.claim_ttl_ms > 0);
  await assert.rejects(pd.runtime.updateRecord(board, "t1", { expectedRevision: hb.revision, state: "running" }),
    (e: unknown) => e instanceof ClaimedError && e.fields.owner === "worker-a");
  // worker-a gives it back; worker-b claims it with a higher fence.
  const released = await pd.runtime.releaseRecord(board, "t1", first.fence);
  const second = await pd.runtime.claimNext(board, { holder: "worker-b", ttlMs: 10_000 });
  assert.ok(second && second.fence > first.fence);
  await assert.rejects(pd.runtime.updateRecord(board, "t1", { expectedRevision: second.record.revision, state: "running", fence: first.fence }),
    (e: unknown) => e instanceof StaleFenceError && e.fields.current_fence === second.fence);
  const running = await pd.runtime.updateRecord(board, "t1", { expectedRevision: second.record.revision, state: "running", fence: second.fence });
  const done = await pd.runtime.updateRecord(board, "t1", { expectedRevision: running.revision, state: "done", payload: { summary: "ok" }, fence: second.fence });
  assert.equal(done.state, "done");
  assert.ok(released.revision < done.revision);
  assert.equal(await pd.runtime.claimNext(board, { holder: "worker-c", waitMs: 0 }), null, "nothing left: 204");
});
