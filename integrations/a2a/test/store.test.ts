// The store on its own against a real promptd: a full task's round trip,
// the machine's transitions, an illegal one refused with a typed error.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Task, TaskState } from "@a2a-js/sdk";
import { uniq } from "@promptd/testkit";
import { BoardMachineError, IllegalTransitionError, PromptdTaskStore, defineTaskBoard } from "../src/index.js";
import { ctx, promptd, type Promptd } from "./helpers.js";

let pd: Promptd;
before(async () => { pd = await promptd(); });
after(async () => { await pd.proc.stop(); });

async function newBoard(): Promise<string> {
  const board = uniq("a2a");
  await defineTaskBoard(pd.admin, board);
  return board;
}

/** A task with everything a task carries: a history of user and agent messages (text, bytes, data parts), artifacts, metadata. */
function fullTask(id: string): Task {
  return Task.fromJSON({
    id, contextId: "ctx-1",
    status: { state: "TASK_STATE_SUBMITTED", timestamp: "2026-01-02T03:04:05.000Z", message: { messageId: "m-status", role: "ROLE_AGENT", parts: [{ text: "queued" }] } },
    history: [
      { messageId: "m1", role: "ROLE_USER", contextId: "ctx-1", taskId: id, parts: [{ text: "summarize this" }, { raw: Buffer.from([0, 1, 2, 250, 255]).toString("base64"), filename: "blob.bin", mediaType: "application/octet-stream" }], metadata: { lang: "en" } },
      { messageId: "m2", role: "ROLE_AGENT", contextId: "ctx-1", taskId: id, parts: [{ data: { plan: ["read", "write"], n: 2 } }], referenceTaskIds: ["other-task"], extensions: ["https://example.com/ext"] },
    ],
    artifacts: [
      { artifactId: "a1", name: "summary", description: "the summary", parts: [{ text: "short" }, { url: "https://example.com/x.pdf", mediaType: "application/pdf" }], metadata: { pages: 3 } },
      { artifactId: "a2", name: "table", parts: [{ data: { rows: [[1, "a"], [2, "b"]] } }] },
    ],
    metadata: { priority: "high", nested: { list: [1, { deep: true }], none: null } },
  });
}

const json = (t: Task | undefined): unknown => (t === undefined ? undefined : Task.toJSON(t));

test("store: a full task (history, artifacts, metadata) round-trips through the board, read by another replica's store", async () => {
  const board = await newBoard();
  const a = new PromptdTaskStore({ client: pd.runtime, board });
  const b = new PromptdTaskStore({ client: pd.runtime, board });
  const t = fullTask(uniq("task"));
  await a.save(t, ctx());
  const got = await b.load(t.id, ctx());
  assert.ok(got, "replica B's store finds the task");
  assert.deepEqual(json(got), json(t));
  const raw = got.history[0]?.parts[1]?.content;
  assert.equal(raw?.$case, "raw");
  assert.deepEqual([...raw.value], [0, 1, 2, 250, 255]);
  const rec = await pd.runtime.getRecord(board, a.recordId(t.id, ctx()));
  assert.equal(rec.state, "submitted");
  assert.equal(rec.revision, 1);
  assert.equal(await b.load(uniq("missing"), ctx()), undefined);
  console.log(`round trip: record ${rec.id} rev ${rec.revision} state ${rec.state}, ${got.history.length} messages, ${got.artifacts.length} artifacts`);
});

test("store: each status change is a transition of the board's machine, the record's state follows the task", async () => {
  const board = await newBoard();
  const s = new PromptdTaskStore({ client: pd.runtime, board });
  const t = fullTask(uniq("task"));
  const seen: string[] = [];
  const path = [TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_WORKING,
    TaskState.TASK_STATE_AUTH_REQUIRED, TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED];
  let revisions = 0;
  for (const state of path) {
    const cur = (await s.load(t.id, ctx())) ?? t;
    cur.status = { state, message: undefined, timestamp: new Date().toISOString() };
    await s.save(cur, ctx());
    const rec = await pd.runtime.getRecord(board, s.recordId(t.id, ctx()));
    seen.push(rec.state);
    revisions = rec.revision;
    assert.equal((await s.load(t.id, ctx()))?.status?.state, state);
  }
  assert.deepEqual(seen, ["submitted", "working", "input-required", "working", "auth-required", "working", "completed"]);
  assert.equal(revisions, path.length, "one write per step (the first a create)");
  // saving the unchanged task writes nothing
  const done = await s.load(t.id, ctx());
  assert.ok(done);
  await s.save(done, ctx());
  assert.equal((await pd.runtime.getRecord(board, s.recordId(t.id, ctx()))).revision, revisions);
  console.log(`transitions: ${seen.join(" -> ")}`);
});

test("store: an illegal transition is refused with IllegalTransitionError and changes nothing", async () => {
  const board = await newBoard();
  const s = new PromptdTaskStore({ client: pd.runtime, board });
  const t = fullTask(uniq("task"));
  t.status = { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() };
  await s.save(t, ctx());

  // working -> submitted: not a transition
  const back = await s.load(t.id, ctx());
  assert.ok(back);
  back.status = { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() };
  await assert.rejects(s.save(back, ctx()), (e: unknown) => e instanceof IllegalTransitionError && e.from === "working" && e.to === "submitted");

  // completed, then working: nothing leaves a terminal state
  const cur = await s.load(t.id, ctx());
  assert.ok(cur);
  cur.status = { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() };
  await s.save(cur, ctx());
  const revived = await s.load(t.id, ctx());
  assert.ok(revived);
  revived.status = { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() };
  revived.metadata = { ...revived.metadata, revived: true };
  let err: unknown;
  await assert.rejects(s.save(revived, ctx()).catch((e: unknown) => { err = e; throw e; }), IllegalTransitionError);
  assert.ok(err instanceof IllegalTransitionError);
  assert.equal(err.from, "completed");
  assert.equal(err.to, "working");
  const after_ = await s.load(t.id, ctx());
  assert.equal(after_?.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.equal(after_.metadata?.["revived"], undefined);
  console.log(`illegal: ${err.message}`);
});

test("store: a board without the A2A machine is refused with BoardMachineError", async () => {
  const board = uniq("plain");
  await pd.runtime.createRecord(board, { payload: {} }); // the default machine: pending, claimed, ...
  const s = new PromptdTaskStore({ client: pd.runtime, board });
  await assert.rejects(s.load("x", ctx()), BoardMachineError);
  await assert.rejects(new PromptdTaskStore({ client: pd.runtime, board: uniq("none") }).save(fullTask("y"), ctx()), BoardMachineError);
});

test("store: list filters by context and state, pages like the SDK's InMemoryTaskStore", async () => {
  const board = await newBoard();
  const s = new PromptdTaskStore({ client: pd.runtime, board });
  for (let i = 0; i < 5; i++) {
    const t = fullTask(`task-${i}`);
    t.contextId = i < 3 ? "ctx-a" : "ctx-b";
    t.status = { state: i % 2 === 0 ? TaskState.TASK_STATE_WORKING : TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: `2026-01-0${i + 1}T00:00:00.000Z` };
    await s.save(t, ctx());
  }
  const base = { tenant: "", contextId: "", status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: "", statusTimestampAfter: undefined };
  const all = await s.list(base, ctx());
  assert.equal(all.totalSize, 5);
  assert.deepEqual(all.tasks.map((t) => t.id), ["task-4", "task-3", "task-2", "task-1", "task-0"]);
  assert.deepEqual(all.tasks[0]?.artifacts, [], "artifacts only when asked");
  const ctxA = await s.list({ ...base, contextId: "ctx-a", status: TaskState.TASK_STATE_WORKING, includeArtifacts: true }, ctx());
  assert.deepEqual(ctxA.tasks.map((t) => t.id), ["task-2", "task-0"]);
  assert.equal(ctxA.tasks[0]?.artifacts.length, 2);
  const p1 = await s.list({ ...base, pageSize: 2 }, ctx());
  const p2 = await s.list({ ...base, pageSize: 2, pageToken: p1.nextPageToken }, ctx());
  assert.deepEqual([...p1.tasks, ...p2.tasks].map((t) => t.id), ["task-4", "task-3", "task-2", "task-1"]);
});
