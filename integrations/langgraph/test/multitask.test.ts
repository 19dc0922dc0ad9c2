// Double-texting with runThread, one test per strategy, each asserting the
// thread's checkpoint history afterwards. Run "first" stalls in act (a gate)
// while run "second" arrives on the same thread.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { uniq } from "@promptd/testkit";
import { PromptdSaver, runThread, ThreadBusyError, CheckpointFencedError } from "../src/index.js";
import { startEnv, type Env } from "./setup.js";
import { buildGraph, history, maxChildren, gate, type Gate } from "./graph.js";

let e: Env;
before(async () => { e = await startEnv(); });
after(async () => { await e.pd.stop(); });

function setup() {
  const saver = new PromptdSaver({ client: e.rt, agent: e.agent, env: e.env, sessionPrefix: uniq("m").replace(/-/g, "") + "-" });
  const stalls = new Map<string, Gate>([["first", gate()]]);
  const graph = buildGraph(saver, { stalls });
  const threadId = uniq("thread");
  const cfg = (run: string) => ({ configurable: { run } });
  return { saver, stalls, graph, threadId, cfg };
}

/** Waits until the thread's head log has the entry (the first run's async writes landed). */
async function until(saver: PromptdSaver, threadId: string, entry: string) {
  for (;;) {
    const h = await history(saver, threadId);
    if (h.headLog.includes(entry)) return h;
    await new Promise((r) => setTimeout(r, 50));
  }
}

test("reject: the second run is refused with ThreadBusyError while the first runs; the history is the first run's alone", async () => {
  const { saver, stalls, graph, threadId, cfg } = setup();
  await runThread(graph, { log: ["base"] }, { threadId, multitask: "reject", config: cfg("base") });
  const first = runThread(graph, { log: ["1"] }, { threadId, multitask: "reject", config: cfg("first") });
  await stalls.get("first")!.reached;
  await assert.rejects(runThread(graph, { log: ["2"] }, { threadId, multitask: "reject", config: cfg("second") }), ThreadBusyError);
  stalls.get("first")!.open();
  const out = await first;
  assert.deepEqual(out.log, ["base", "plan base (saw 1)", "act base", "report base", "1", "plan first (saw 5)", "act first", "report first"]);
  const h = await history(saver, threadId);
  assert.equal(maxChildren(h), 1);
  assert.deepEqual(h.headLog, out.log);
  assert.ok(!h.headLog.some((l) => l.includes("second")) && h.ids.length === 10, `10 checkpoints (5 per run), got ${String(h.ids.length)}`);
});

test("enqueue: the second run waits for the first, then runs on its result", async () => {
  const { saver, stalls, graph, threadId, cfg } = setup();
  const first = runThread(graph, { log: ["1"] }, { threadId, multitask: "enqueue", config: cfg("first") });
  await stalls.get("first")!.reached;
  let secondDone = false;
  const second = runThread(graph, { log: ["2"] }, { threadId, multitask: "enqueue", config: cfg("second") }).then((o) => { secondDone = true; return o; });
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(secondDone, false, "the second run waits while the first holds the thread");
  stalls.get("first")!.open();
  await first;
  const out = await second;
  assert.deepEqual(out.log, ["1", "plan first (saw 1)", "act first", "report first", "2", "plan second (saw 5)", "act second", "report second"]);
  const h = await history(saver, threadId);
  assert.equal(maxChildren(h), 1);
  assert.equal(h.ids.length, 10);
});

test("interrupt: the second run preempts; the first stops with CheckpointFencedError at its next write and its checkpoints stay", async () => {
  const { saver, stalls, graph, threadId, cfg } = setup();
  const first = runThread(graph, { log: ["1"] }, { threadId, multitask: "interrupt", config: cfg("first") });
  await stalls.get("first")!.reached;
  const firstIds = (await until(saver, threadId, "plan first (saw 1)")).ids;
  const out = await runThread(graph, { log: ["2"] }, { threadId, multitask: "interrupt", config: cfg("second") });
  assert.deepEqual(out.log, ["1", "plan first (saw 1)", "2", "plan second (saw 3)", "act second", "report second"]);
  stalls.get("first")!.open();
  await assert.rejects(first, CheckpointFencedError);
  const h = await history(saver, threadId);
  assert.equal(maxChildren(h), 1);
  for (const id of firstIds) assert.ok(h.ids.includes(id), "the interrupted run's checkpoints stay");
  assert.deepEqual(h.headLog, out.log);
});

test("rollback: the second run preempts and the first run's checkpoints are removed; the second starts from the state before the first", async () => {
  const { saver, stalls, graph, threadId, cfg } = setup();
  await runThread(graph, { log: ["base"] }, { threadId, config: cfg("base") });
  const baseIds = (await history(saver, threadId)).ids;
  const first = runThread(graph, { log: ["1"] }, { threadId, multitask: "rollback", config: cfg("first") });
  await stalls.get("first")!.reached;
  const withFirst = (await until(saver, threadId, "plan first (saw 5)")).ids;
  assert.ok(withFirst.length > baseIds.length);
  const out = await runThread(graph, { log: ["2"] }, { threadId, multitask: "rollback", config: cfg("second") });
  assert.deepEqual(out.log, ["base", "plan base (saw 1)", "act base", "report base", "2", "plan second (saw 5)", "act second", "report second"]);
  stalls.get("first")!.open();
  await assert.rejects(first, CheckpointFencedError);
  const h = await history(saver, threadId);
  assert.equal(maxChildren(h), 1);
  for (const id of withFirst.filter((x) => !baseIds.includes(x))) assert.ok(!h.ids.includes(id), "the rolled-back run's checkpoints are gone");
  for (const id of baseIds) assert.ok(h.ids.includes(id));
  assert.equal(h.ids.length, 10);
  assert.deepEqual(h.headLog, out.log);
});
