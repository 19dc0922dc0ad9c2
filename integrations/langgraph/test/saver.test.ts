// PromptdSaver as a drop-in checkpointer: plain graph.invoke, no wrapper.
// Two concurrent runs on one thread (a node that awaits, so they overlap):
// one is refused with a ThreadLeaseError and the thread's history stays
// linear. The CONTROL runs the same two runs through a saver that writes
// without lease or fence: the thread forks (a checkpoint with two children).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { uniq } from "@promptd/testkit";
import { PromptdSaver, ThreadLeaseError, ThreadBusyError, CheckpointFencedError } from "../src/index.js";
import { startEnv, type Env } from "./setup.js";
import { buildGraph, history, maxChildren, gate } from "./graph.js";

/** CONTROL ONLY: the same saver writing without lease or fence. */
class UnfencedSaver extends PromptdSaver {
  protected override get fenced(): boolean {
    return false;
  }
}

let e: Env;
before(async () => { e = await startEnv(); });
after(async () => { await e.pd.stop(); });

const saverOpts = () => ({ client: e.rt, agent: e.agent, env: e.env, sessionPrefix: uniq("s").replace(/-/g, "") + "-" });

async function twoConcurrentRuns(saver: PromptdSaver) {
  const graph = buildGraph(saver, { actMs: 400 });
  const threadId = uniq("thread");
  // A first run gives the thread a head both concurrent runs start from.
  await graph.invoke({ log: ["start"] }, { configurable: { thread_id: threadId, run: "first" } });
  const settled = await Promise.allSettled([
    graph.invoke({ log: ["A"] }, { configurable: { thread_id: threadId, run: "A" } }),
    graph.invoke({ log: ["B"] }, { configurable: { thread_id: threadId, run: "B" } }),
  ]);
  return { threadId, settled, h: await history(saver, threadId) };
}

test("two concurrent graph.invoke on one thread: one is refused with a ThreadLeaseError, the history stays linear", async () => {
  const saver = new PromptdSaver(saverOpts());
  const { settled, h } = await twoConcurrentRuns(saver);
  const rejected = settled.filter((s) => s.status === "rejected");
  const fulfilled = settled.filter((s) => s.status === "fulfilled");
  console.log(`fenced: ${String(fulfilled.length)} fulfilled, ${String(rejected.length)} rejected (${rejected.map((r) => (r.reason as Error).name).join(",")}); ${String(h.ids.length)} checkpoints, max children ${String(maxChildren(h))}`);
  assert.equal(fulfilled.length, 1);
  assert.equal(rejected.length, 1);
  assert.ok(rejected[0]!.reason instanceof ThreadLeaseError, String(rejected[0]!.reason));
  assert.equal(maxChildren(h), 1, "every checkpoint has at most one child");
  await saver.close();
});

test("CONTROL: the same two runs with the fence disabled fork the thread (a checkpoint with two children)", async () => {
  const saver = new UnfencedSaver(saverOpts());
  const { settled, h } = await twoConcurrentRuns(saver);
  console.log(`unfenced: ${settled.map((s) => s.status).join(",")}; ${String(h.ids.length)} checkpoints, max children ${String(maxChildren(h))}`);
  assert.ok(settled.every((s) => s.status === "fulfilled"));
  assert.equal(maxChildren(h), 2, "a parent with two children: the thread forked");
});

test("sequential runs on one thread continue one chain; a second saver (another process) is refused while a run holds the thread", async () => {
  const saver = new PromptdSaver(saverOpts());
  const other = new PromptdSaver({ ...saverOpts(), sessionPrefix: saver.sessionPrefix, holder: "other-process" });
  const stalls = new Map([["slow", gate()]]);
  const graph = buildGraph(saver, { stalls });
  const otherGraph = buildGraph(other);
  const threadId = uniq("thread");
  await graph.invoke({ log: ["1"] }, { configurable: { thread_id: threadId, run: "one" } });
  const out = await graph.invoke({ log: ["2"] }, { configurable: { thread_id: threadId, run: "two" } });
  assert.deepEqual(out.log, ["1", "plan one (saw 1)", "act one", "report one", "2", "plan two (saw 5)", "act two", "report two"]);
  const slow = graph.invoke({ log: ["3"] }, { configurable: { thread_id: threadId, run: "slow" } });
  await stalls.get("slow")!.reached;
  await assert.rejects(otherGraph.invoke({ log: ["x"] }, { configurable: { thread_id: threadId, run: "x" } }), (err) => {
    assert.ok(err instanceof ThreadBusyError, String(err));
    assert.equal(err.holder, saver.holder);
    return true;
  });
  stalls.get("slow")!.open();
  await slow;
  const h = await history(saver, threadId);
  assert.equal(maxChildren(h), 1);
  assert.equal(h.headLog.at(-1), "report slow");
  // After the idle period the lease is released: the other process can write.
  await new Promise((r) => setTimeout(r, saver.idleReleaseMs + 500));
  const o2 = await otherGraph.invoke({ log: ["4"] }, { configurable: { thread_id: threadId, run: "four" } });
  assert.equal(o2.log.at(-1), "report four");
  assert.equal(maxChildren(await history(saver, threadId)), 1);
  await saver.close();
  await other.close();
});

test("a run whose lease was taken over is refused at its next write with CheckpointFencedError, and its checkpoints stay", async () => {
  const saver = new PromptdSaver(saverOpts());
  const other = new PromptdSaver({ ...saverOpts(), sessionPrefix: saver.sessionPrefix, holder: "preempter", leaseMode: "preempt" });
  const stalls = new Map([["slow", gate()]]);
  const graph = buildGraph(saver, { stalls });
  const threadId = uniq("thread");
  const slow = graph.invoke({ log: ["1"] }, { configurable: { thread_id: threadId, run: "slow" } });
  await stalls.get("slow")!.reached;
  // The slow run's checkpoints up to act have landed (durability "async" writes them in the background).
  let before = await history(saver, threadId);
  while (!before.headLog.includes("plan slow (saw 1)")) {
    await new Promise((r) => setTimeout(r, 50));
    before = await history(saver, threadId);
  }
  const fast = await buildGraph(other).invoke({ log: ["2"] }, { configurable: { thread_id: threadId, run: "fast" } });
  assert.equal(fast.log.at(-1), "report fast");
  stalls.get("slow")!.open();
  await assert.rejects(slow, (err) => err instanceof CheckpointFencedError);
  const h = await history(saver, threadId);
  assert.equal(maxChildren(h), 1);
  for (const id of before.ids) assert.ok(h.ids.includes(id), "the fenced run's checkpoints stay");
  await saver.close();
  await other.close();
});

test("keepalive: a node that runs longer than the lease TTL keeps the thread (another process is still refused)", async () => {
  const saver = new PromptdSaver({ ...saverOpts(), ttlMs: 600, idleReleaseMs: 10_000 });
  const other = new PromptdSaver({ ...saverOpts(), sessionPrefix: saver.sessionPrefix, holder: "other-process" });
  const stalls = new Map([["long", gate()]]);
  const threadId = uniq("thread");
  const long = buildGraph(saver, { stalls }).invoke({ log: ["1"] }, { configurable: { thread_id: threadId, run: "long" } });
  await stalls.get("long")!.reached;
  await new Promise((r) => setTimeout(r, 1500)); // 2.5 TTLs: only renewals keep the lease
  await assert.rejects(buildGraph(other).invoke({ log: ["x"] }, { configurable: { thread_id: threadId, run: "x" } }), ThreadBusyError);
  stalls.get("long")!.open();
  assert.equal((await long).log.at(-1), "report long");
  await saver.close();
  await other.close();
});

test("idle release inside a long node: the run takes the lease again and goes on, unless another run wrote meanwhile (CheckpointFencedError)", async () => {
  const saver = new PromptdSaver({ ...saverOpts(), idleReleaseMs: 200 });
  const other = new PromptdSaver({ ...saverOpts(), sessionPrefix: saver.sessionPrefix, holder: "other-process", idleReleaseMs: 200 });
  // Nobody writes in between: the run re-acquires and completes one chain.
  const quiet = uniq("thread");
  const out = await buildGraph(saver, { actMs: 700 }).invoke({ log: ["1"] }, { configurable: { thread_id: quiet, run: "quiet" } });
  assert.equal(out.log.at(-1), "report quiet");
  assert.equal(maxChildren(await history(saver, quiet)), 1);
  // Another process writes while the lease is released: the run's next write is refused.
  const stalls = new Map([["slow", gate()]]);
  const busy = uniq("thread");
  const slow = buildGraph(saver, { stalls }).invoke({ log: ["1"] }, { configurable: { thread_id: busy, run: "slow" } });
  await stalls.get("slow")!.reached;
  await new Promise((r) => setTimeout(r, 600)); // the slow run's lease is released (idle)
  const o = await buildGraph(other).invoke({ log: ["2"] }, { configurable: { thread_id: busy, run: "other" } });
  assert.equal(o.log.at(-1), "report other");
  await new Promise((r) => setTimeout(r, 600)); // and the other run's lease is released too: the thread is free
  stalls.get("slow")!.open();
  await assert.rejects(slow, (err) => err instanceof CheckpointFencedError && /moved on/.test(err.message));
  assert.equal(maxChildren(await history(saver, busy)), 1);
  await saver.close();
  await other.close();
});

test("leaseMode: right after a run in one process, another process's run is refused (reject) or waits for the idle release (wait)", async () => {
  const saver = new PromptdSaver({ ...saverOpts(), idleReleaseMs: 800 });
  const rejecting = new PromptdSaver({ ...saverOpts(), sessionPrefix: saver.sessionPrefix, holder: "rejecting" });
  const waiting = new PromptdSaver({ ...saverOpts(), sessionPrefix: saver.sessionPrefix, holder: "waiting", leaseMode: "wait", waitMs: 5000 });
  const threadId = uniq("thread");
  const cfg = (run: string) => ({ configurable: { thread_id: threadId, run } });
  await buildGraph(saver).invoke({ log: ["1"] }, cfg("one"));
  await assert.rejects(buildGraph(rejecting).invoke({ log: ["x"] }, cfg("x")), ThreadBusyError);
  await buildGraph(saver).invoke({ log: ["2"] }, cfg("two"));
  const t0 = Date.now();
  const out = await buildGraph(waiting).invoke({ log: ["3"] }, cfg("three"));
  const waited = Date.now() - t0;
  assert.equal(out.log.at(-1), "report three");
  assert.equal(out.log.filter((l) => l.startsWith("report")).length, 3, "it ran on both earlier runs' result");
  assert.ok(waited >= 300, `waited ${String(waited)} ms for the idle release`);
  assert.equal(maxChildren(await history(saver, threadId)), 1);
  await Promise.all([saver.close(), rejecting.close(), waiting.close()]);
});
