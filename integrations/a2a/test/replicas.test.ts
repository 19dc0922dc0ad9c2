// Two A2A server replicas (two DefaultRequestHandlers, each behind the SDK's
// express JSON-RPC handler on 127.0.0.1) sharing one promptd board, driven by
// the SDK's own client; and the controls without promptd's checks.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Role, Task, TaskState, type Message } from "@a2a-js/sdk";
import { InMemoryTaskStore } from "@a2a-js/sdk/server";
import type { Client as A2AClient } from "@a2a-js/sdk/client";
import { uniq } from "@promptd/testkit";
import { PromptdTaskStore, TaskConflictError, TaskHeldError, defineTaskBoard } from "../src/index.js";
import { LastWriteWinsStore } from "./naive.js";
import { artifactTexts, ctx, isTask, promptd, replica, userMessage, type Promptd, type Replica } from "./helpers.js";

let pd: Promptd;
before(async () => { pd = await promptd(); });
after(async () => { await pd.proc.stop(); });

async function newBoard(): Promise<string> {
  const board = uniq("a2a");
  await defineTaskBoard(pd.admin, board);
  return board;
}

async function send(c: A2AClient, m: Message): Promise<Task> {
  const r = await c.sendMessage({ tenant: "", message: m, configuration: undefined, metadata: undefined });
  assert.ok(isTask(r), "the agent answers with a task");
  return r;
}

const getTask = (c: A2AClient, id: string): Promise<Task> => c.getTask({ tenant: "", id });

async function twoReplicas(storeA: () => PromptdTaskStore | InMemoryTaskStore, storeB: () => PromptdTaskStore | InMemoryTaskStore): Promise<[Replica, Replica]> {
  return [await replica("A", storeA()), await replica("B", storeB())];
}

test("replicas: a task made on replica A is found, resubscribed and resumed on replica B with its latest state", async () => {
  const board = await newBoard();
  const storeA = new PromptdTaskStore({ client: pd.runtime, board });
  const [a, b] = await twoReplicas(() => storeA, () => new PromptdTaskStore({ client: pd.runtime, board }));
  try {
    const first = await send(a.client, userMessage("write a report"));
    assert.equal(first.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);

    // B finds it, with A's latest state
    const onB = await getTask(b.client, first.id);
    assert.equal(onB.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    assert.deepEqual(artifactTexts(onB), ["draft by A"]);
    assert.equal(onB.metadata?.["startedBy"], "A");

    // B resubscribes: the first event is the task as A left it
    const events = [];
    for await (const ev of b.client.resubscribeTask({ tenant: "", id: first.id })) events.push(ev);
    const firstEv = events[0]?.payload;
    assert.equal(firstEv?.$case, "task");
    assert.equal(firstEv.value.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    assert.equal(firstEv.value.history.length, onB.history.length);

    // B resumes it: the follow-up completes it there
    const done = await send(b.client, userMessage("markdown", first.id, first.contextId));
    assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.deepEqual(artifactTexts(done), ["draft by A", "final by B"]);

    // and A sees what B did
    const onA = await getTask(a.client, first.id);
    assert.equal(onA.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.deepEqual(artifactTexts(onA), ["draft by A", "final by B"]);
    assert.equal(onA.metadata?.["resumedBy"], "B");
    const userTexts = onA.history.filter((m) => m.role === Role.ROLE_USER).map((m) => (m.parts[0]?.content?.$case === "text" ? m.parts[0].content.value : ""));
    assert.deepEqual(userTexts, ["write a report", "markdown"]);
    const rec = await pd.runtime.getRecord(board, storeA.recordId(first.id, ctx()));
    assert.equal(rec.state, "completed");
    console.log(`shared: made on A (${first.id}), resubscribed on B (${events.length} event), completed on B; A reads ${TaskState[onA.status.state]}, artifacts ${artifactTexts(onA).join(" | ")}, record rev ${rec.revision}`);
  } finally {
    await a.close(); await b.close();
  }
});

test("replicas: a cancel on replica B is what replica A then reads, and A cannot revive the task", async () => {
  const board = await newBoard();
  const [a, b] = await twoReplicas(() => new PromptdTaskStore({ client: pd.runtime, board }), () => new PromptdTaskStore({ client: pd.runtime, board }));
  try {
    const t = await send(a.client, userMessage("draft a plan"));
    const canceled = await b.client.cancelTask({ tenant: "", id: t.id, metadata: undefined });
    assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
    assert.equal((await getTask(a.client, t.id)).status?.state, TaskState.TASK_STATE_CANCELED);
    await assert.rejects(send(a.client, userMessage("go on", t.id, t.contextId)), /terminal state/);
  } finally {
    await a.close(); await b.close();
  }
});

test("control: replicas each with an InMemoryTaskStore: replica B cannot find, resubscribe or resume A's task", async () => {
  const [a, b] = await twoReplicas(() => new InMemoryTaskStore(), () => new InMemoryTaskStore());
  try {
    const t = await send(a.client, userMessage("write a report"));
    assert.equal((await getTask(a.client, t.id)).status?.state, TaskState.TASK_STATE_INPUT_REQUIRED, "A has it");
    await assert.rejects(getTask(b.client, t.id), /not found/i);
    await assert.rejects(async () => { for await (const _ of b.client.resubscribeTask({ tenant: "", id: t.id })) { /* none */ } }, /not found/i);
    await assert.rejects(send(b.client, userMessage("markdown", t.id, t.contextId)), /not found/i);
    console.log("control (in-memory): B answered task not found for get, resubscribe and resume");
  } finally {
    await a.close(); await b.close();
  }
});

/** A's change: an artifact and a metadata key. B's: a history message and another key. Each replica read the task before either wrote. */
function changes(ta: Task, tb: Task): void {
  ta.artifacts.push({ artifactId: "from-a", name: "a", description: "", parts: [{ content: { $case: "text", value: "A's result" }, metadata: undefined, filename: "", mediaType: "" }], metadata: undefined, extensions: [] });
  ta.metadata = { ...ta.metadata, a: 1 };
  tb.history.push({ messageId: "from-b", contextId: tb.contextId, taskId: tb.id, role: Role.ROLE_AGENT, parts: [{ content: { $case: "text", value: "B's note" }, metadata: undefined, filename: "", mediaType: "" }], metadata: undefined, extensions: [], referenceTaskIds: [] });
  tb.metadata = { ...tb.metadata, b: 2 };
}

function seed(id: string): Task {
  return Task.fromJSON({ id, contextId: "c", status: { state: "TASK_STATE_WORKING" }, history: [{ messageId: "m0", role: "ROLE_USER", parts: [{ text: "go" }] }], artifacts: [], metadata: { seed: true } });
}

test("replicas: two concurrent updates to one task lose nothing: one write conflicts and is merged over the other", async () => {
  const board = await newBoard();
  const a = new PromptdTaskStore({ client: pd.runtime, board });
  const b = new PromptdTaskStore({ client: pd.runtime, board });
  const id = uniq("task");
  await a.save(seed(id), ctx());
  const [ta, tb] = [await a.load(id, ctx()), await b.load(id, ctx())];
  assert.ok(ta && tb);
  changes(ta, tb);
  await Promise.all([a.save(ta, ctx()), b.save(tb, ctx())]);
  assert.equal(a.stats.conflicts + b.stats.conflicts, 1, "exactly one write was refused by the revision check");
  assert.equal(a.stats.merges + b.stats.merges, 1, "and merged over the other");
  const final = await new PromptdTaskStore({ client: pd.runtime, board }).load(id, ctx());
  assert.ok(final);
  assert.deepEqual(final.artifacts.map((x) => x.artifactId), ["from-a"]);
  assert.deepEqual(final.history.map((m) => m.messageId), ["m0", "from-b"]);
  assert.deepEqual(final.metadata, { seed: true, a: 1, b: 2 });
  const rec = await pd.runtime.getRecord(board, a.recordId(id, ctx()));
  assert.equal(rec.revision, 4, "create, its state, the two writes");
  console.log(`concurrent: conflicts ${a.stats.conflicts + b.stats.conflicts}, merges ${a.stats.merges + b.stats.merges}; final artifacts [${final.artifacts.map((x) => x.artifactId).join(",")}], history [${final.history.map((m) => m.messageId).join(",")}], metadata ${JSON.stringify(final.metadata)}`);
});

test("replicas: with onConflict refuse, the second concurrent write is refused with TaskConflictError, not silently lost", async () => {
  const board = await newBoard();
  const a = new PromptdTaskStore({ client: pd.runtime, board, onConflict: "refuse" });
  const b = new PromptdTaskStore({ client: pd.runtime, board, onConflict: "refuse" });
  const id = uniq("task");
  await a.save(seed(id), ctx());
  const [ta, tb] = [await a.load(id, ctx()), await b.load(id, ctx())];
  assert.ok(ta && tb);
  changes(ta, tb);
  const results = await Promise.allSettled([a.save(ta, ctx()), b.save(tb, ctx())]);
  const refused = results.filter((r) => r.status === "rejected");
  assert.equal(refused.length, 1, "one of the two is refused");
  assert.ok(refused[0]?.status === "rejected" && refused[0].reason instanceof TaskConflictError);
  assert.equal(refused[0].reason.currentRevision, 3);
  const final = await a.load(id, ctx());
  assert.ok(final);
  const aWon = results[0].status === "fulfilled";
  assert.deepEqual(final.metadata, aWon ? { seed: true, a: 1 } : { seed: true, b: 2 }, "the winner's change, and the loser was told");
});

test("control: a shared board store without the revision check loses one of two updates", async () => {
  const board = uniq("naive"); // the default machine: the naive store only writes payloads
  const a = new LastWriteWinsStore(pd.runtime, board);
  const b = new LastWriteWinsStore(pd.runtime, board);
  const id = uniq("task");
  await a.save(seed(id));
  const [ta, tb] = [await a.load(id), await b.load(id)];
  assert.ok(ta && tb);
  changes(ta, tb);
  await a.save(ta);
  await b.save(tb); // B wrote over A's write: no conflict was raised
  const final = await a.load(id);
  assert.ok(final);
  assert.deepEqual(final.artifacts, [], "A's artifact is lost");
  assert.equal(final.metadata?.["a"], undefined, "A's metadata is lost");
  assert.equal(final.metadata?.["b"], 2);

  // the same sequence through PromptdTaskStore keeps both
  const pboard = await newBoard();
  const pa = new PromptdTaskStore({ client: pd.runtime, board: pboard });
  const pb = new PromptdTaskStore({ client: pd.runtime, board: pboard });
  await pa.save(seed(id), ctx());
  const [qa, qb] = [await pa.load(id, ctx()), await pb.load(id, ctx())];
  assert.ok(qa && qb);
  changes(qa, qb);
  await pa.save(qa, ctx());
  await pb.save(qb, ctx());
  const kept = await pa.load(id, ctx());
  assert.deepEqual(kept?.metadata, { seed: true, a: 1, b: 2 });
  assert.deepEqual(kept.artifacts.map((x) => x.artifactId), ["from-a"]);
  console.log(`control (no revision check): final metadata ${JSON.stringify(final.metadata)}, artifacts ${final.artifacts.length}: A's update lost; with PromptdTaskStore: ${JSON.stringify(kept.metadata)}`);
});

test("replicas: a replica holding a task (the board's claim) is the only one that writes it", async () => {
  const board = await newBoard();
  const a = new PromptdTaskStore({ client: pd.runtime, board });
  const b = new PromptdTaskStore({ client: pd.runtime, board });
  const id = uniq("task");
  const t = seed(id);
  t.status = { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: undefined };
  await a.save(t, ctx());
  const { fence } = await a.hold(id, ctx(), "replica-A", 10_000);
  assert.ok(fence > 0);
  const rec = await pd.runtime.getRecord(board, a.recordId(id, ctx()));
  assert.equal(rec.state, "held");
  assert.equal(rec.owner, "replica-A");
  await assert.rejects(b.hold(id, ctx(), "replica-B"), (e: unknown) => e instanceof TaskHeldError && e.owner === "replica-A");

  const tb = await b.load(id, ctx());
  assert.ok(tb);
  assert.equal(tb.status?.state, TaskState.TASK_STATE_SUBMITTED, "a held task is still submitted to A2A");
  tb.status = { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: undefined };
  await assert.rejects(b.save(tb, ctx()), (e: unknown) => e instanceof TaskHeldError && e.owner === "replica-A");

  const ta = await a.load(id, ctx());
  assert.ok(ta);
  ta.status = { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: undefined };
  await a.save(ta, ctx());
  await a.heartbeat(id, ctx());
  const tc = await a.load(id, ctx());
  assert.ok(tc);
  tc.status = { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: undefined };
  await a.save(tc, ctx());
  const end = await pd.runtime.getRecord(board, a.recordId(id, ctx()));
  assert.equal(end.state, "completed");
  assert.equal(end.owner, null, "reaching a terminal state ends the hold");
});

test("replicas: a save prepared from an older read still merges when a later read on the same replica saw another replica's write", async () => {
  const board = await newBoard();
  const a = new PromptdTaskStore({ client: pd.runtime, board });
  const b = new PromptdTaskStore({ client: pd.runtime, board });
  const id = uniq("task");
  await a.save(seed(id), ctx());
  const read = await a.load(id, ctx()); // what A's save is prepared from
  assert.ok(read);
  const tb = await b.load(id, ctx());
  assert.ok(tb);
  tb.metadata = { ...tb.metadata, b: 2 };
  await b.save(tb, ctx()); // B writes meanwhile
  assert.equal((await a.load(id, ctx()))?.metadata?.["b"], 2); // a getTask on A reads B's write
  const ours = structuredClone(read); // a new object (as the SDK's ResultManager makes for a task event)
  ours.metadata = { ...ours.metadata, a: 1 };
  await a.save(ours, ctx());
  assert.deepEqual((await b.load(id, ctx()))?.metadata, { seed: true, a: 1, b: 2 });
  assert.equal(a.stats.conflicts, 1, "A's write was checked against the revision it was prepared from");
});
