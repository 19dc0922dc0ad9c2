// Two replicas in two processes (replica B is a child Node process) serving
// one task at once: follow-up messages sent to both at the same time. Within
// one process the SDK serializes a task's writes; across processes only the
// store's revision check does. The control runs the same rounds on a shared
// store without it.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { ClientFactory, type Client as A2AClient } from "@a2a-js/sdk/client";
import type { Task, Message } from "@a2a-js/sdk";
import type { TaskStore } from "@a2a-js/sdk/server";
import { uniq } from "@promptd/testkit";
import { PromptdTaskStore, defineTaskBoard } from "../src/index.js";
import { LastWriteWinsStore } from "./naive.js";
import { NotesAgent, SlowSaves, isTask, promptd, replica, userMessage, type Promptd } from "./helpers.js";

const ROUNDS = 8;
const SAVE_DELAY_MS = 15;

let pd: Promptd;
const children: ChildProcess[] = [];
before(async () => { pd = await promptd(); });
after(async () => {
  for (const c of children) c.kill("SIGKILL");
  await pd.proc.stop();
});

/** Starts replica B in a child process; its URL once it serves. */
async function childReplica(board: string, store: "promptd" | "naive"): Promise<{ url: string }> {
  const child = spawn(process.execPath, [fileURLToPath(new URL("./replica-main.js", import.meta.url))], {
    env: { ...process.env, PROMPTD_URL: pd.proc.url, PROMPTD_TOKEN: pd.proc.runtimeToken, BOARD: board, NAME: "B", STORE: store, SAVE_DELAY_MS: String(SAVE_DELAY_MS) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  const out = child.stdout;
  assert.ok(out);
  const line = await new Promise<string>((res, rej) => {
    createInterface({ input: out }).once("line", res);
    child.once("exit", (code) => { rej(new Error(`replica B exited (${String(code)})`)); });
  });
  return JSON.parse(line) as { url: string };
}

async function send(c: A2AClient, m: Message): Promise<Task> {
  const r = await c.sendMessage({ tenant: "", message: m, configuration: undefined, metadata: undefined });
  assert.ok(isTask(r));
  return r;
}

/** ROUNDS tasks, each made on A then sent one follow-up on A and one on B at once; per round what the task lost. */
async function rounds(storeA: TaskStore, urlB: string): Promise<{ lost: number; details: string[] }> {
  const a = await replica("A", new SlowSaves(storeA, SAVE_DELAY_MS), new NotesAgent("A"));
  try {
    const factory = new ClientFactory();
    const [toA, toB] = [a.client, await factory.createFromUrl(urlB)];
    let lost = 0;
    const details: string[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const t = await send(toA, userMessage(`task ${i}`));
      const ma = userMessage(`to A ${i}`, t.id, t.contextId);
      const mb = userMessage(`to B ${i}`, t.id, t.contextId);
      await Promise.all([send(toA, ma), send(toB, mb)]);
      const final = await toA.getTask({ tenant: "", id: t.id });
      const ids = new Set(final.history.map((m) => m.messageId));
      const arts = new Set(final.artifacts.map((x) => x.artifactId));
      const missing = [ma, mb].filter((m) => !ids.has(m.messageId) || !arts.has(`note-${m.messageId}`)).length;
      lost += missing;
      details.push(`${final.history.length} msgs/${final.artifacts.length} notes`);
    }
    return { lost, details };
  } finally {
    await a.close();
  }
}

test("processes: follow-ups sent at once to replicas in two processes are all kept (the revision check merges)", async () => {
  const board = uniq("a2a");
  await defineTaskBoard(pd.admin, board);
  const b = await childReplica(board, "promptd");
  const storeA = new PromptdTaskStore({ client: pd.runtime, board });
  const { lost, details } = await rounds(storeA, b.url);
  const statsB = await (await fetch(`${b.url}/stats`)).json() as { conflicts: number; merges: number };
  const conflicts = storeA.stats.conflicts + statsB.conflicts;
  console.log(`processes (PromptdTaskStore): ${ROUNDS} rounds, ${lost} follow-ups lost, ${conflicts} conflicts merged (A ${storeA.stats.conflicts}, B ${statsB.conflicts}); per round ${details.join(", ")}`);
  assert.equal(lost, 0, "no follow-up lost");
  assert.ok(conflicts > 0, "the two processes did race (some writes conflicted and were merged)");
});

test("control: the same rounds on a shared store without the revision check lose follow-ups", async () => {
  const board = uniq("naive");
  const b = await childReplica(board, "naive");
  const { lost, details } = await rounds(new LastWriteWinsStore(pd.runtime, board), b.url);
  console.log(`processes (no revision check): ${ROUNDS} rounds, ${lost} follow-ups lost; per round ${details.join(", ")}`);
  assert.ok(lost > 0, "without the check some follow-up's message or note is overwritten");
});
