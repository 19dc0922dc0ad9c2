// Two concurrent runs on one LangGraph thread (langchain-ai/langgraph#8796).
// Run 1 stalls inside a node; run 2 takes the thread's lease over (preempt)
// and runs to the end; run 1 then wakes up. With promptd's fence, run 1's
// next checkpoint write is refused with stale_fence and the thread's history
// stays linear. The CONTROL runs the same scenario with the saver writing
// without lease or fence: the thread forks (two checkpoints, one parent).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { StateGraph, Annotation, START, END } from "@langchain/langgraph";
import type { LangGraphRunnableConfig } from "@langchain/langgraph";
import { LeaseLostError, StaleFenceError } from "../src/index.js";
import { PromptdCheckpointSaver } from "../src/langgraph.js";
import { startPromptd, publish, uniq, type Promptd } from "./harness.js";

let pd: Promptd;
const agent = "graph-agent";
const env = "prod";

before(async () => {
  pd = await startPromptd();
  await publish(pd.admin, agent, env, { system: "You plan." });
});
after(async () => { await pd?.stop(); });

const State = Annotation.Root({
  log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

interface Gate { reached: Promise<void>; open: () => void }
function gate(): Gate & { arrive: () => void } {
  let arrive!: () => void;
  let open!: () => void;
  const reached = new Promise<void>((r) => { arrive = r; });
  const opened = new Promise<void>((r) => { open = r; });
  const g = { reached, open, arrive, opened };
  return Object.assign(g, { wait: () => opened });
}

function buildGraph(saver: PromptdCheckpointSaver, stall: Map<string, ReturnType<typeof gate>>) {
  return new StateGraph(State)
    .addNode("plan", (s: typeof State.State, config: LangGraphRunnableConfig) => ({ log: [`plan by ${String(config.configurable?.["run"])} (saw ${s.log.length})`] }))
    .addNode("act", async (_s: typeof State.State, config: LangGraphRunnableConfig) => {
      const g = stall.get(String(config.configurable?.["run"]));
      if (g) {
        g.arrive();
        await (g as unknown as { wait: () => Promise<void> }).wait();
      }
      return { log: [`act by ${String(config.configurable?.["run"])}`] };
    })
    .addNode("report", (_s: typeof State.State, config: LangGraphRunnableConfig) => ({ log: [`report by ${String(config.configurable?.["run"])}`] }))
    .addEdge(START, "plan").addEdge("plan", "act").addEdge("act", "report").addEdge("report", END)
    .compile({ checkpointer: saver });
}

/** parent checkpoint id -> children, over the whole thread. */
async function children(saver: PromptdCheckpointSaver, threadId: string): Promise<Map<string, string[]>> {
  const m = new Map<string, string[]>();
  for await (const t of saver.list({ configurable: { thread_id: threadId } })) {
    const parent = t.parentConfig?.configurable?.["checkpoint_id"] as string | undefined;
    const id = t.config.configurable?.["checkpoint_id"] as string;
    if (parent) m.set(parent, [...(m.get(parent) ?? []), id]);
  }
  return m;
}

async function doubleRun(unfenced: boolean): Promise<{ threadId: string; saver: PromptdCheckpointSaver; run1: unknown; run2: unknown }> {
  const threadId = uniq(unfenced ? "control" : "fenced");
  // Two savers, as two worker processes would have.
  const saver1 = new PromptdCheckpointSaver({ client: pd.runtime, agent, env, holder: "worker-1", ttlMs: 30_000, unfenced });
  const saver2 = new PromptdCheckpointSaver({ client: pd.runtime, agent, env, holder: "worker-2", ttlMs: 30_000, unfenced });
  const stall = new Map([["r1", gate()]]);
  const g1 = buildGraph(saver1, stall);
  const g2 = buildGraph(saver2, new Map());
  const cfg = (run: string, signal: AbortSignal) => ({ configurable: { thread_id: threadId, run }, signal, durability: "sync" as const });

  const run1 = saver1.run(threadId, (signal) => g1.invoke({ log: ["input 1"] }, cfg("r1", signal))).then((v) => v, (e: unknown) => e);
  await stall.get("r1")!.reached; // run 1 is inside "act", its lease still valid for 30 s
  const run2 = await saver2.run(threadId, (signal) => g2.invoke({ log: ["input 2"] }, cfg("r2", signal)), { mode: "preempt" }).then((v) => v, (e: unknown) => e);
  stall.get("r1")!.open(); // run 1 wakes up and writes its next checkpoint
  return { threadId, saver: saver1, run1: await run1, run2 };
}

test("PromptdCheckpointSaver_twoConcurrentRunsOnOneThread_staleRunFailsWithStaleFence_historyStaysLinear", async () => {
  const { threadId, saver, run1, run2 } = await doubleRun(false);
  assert.ok(!(run2 instanceof Error), `run 2 completed: ${String(run2)}`);
  assert.ok(run1 instanceof LeaseLostError, `run 1 rejected with LeaseLostError, got ${String(run1)}`);
  assert.ok(run1.cause instanceof StaleFenceError, "the server refused run 1's write with stale_fence");
  const forks = [...(await children(saver, threadId))].filter(([, c]) => c.length > 1);
  assert.deepEqual(forks, [], "no two checkpoints with the same parent");
  const latest = await saver.getTuple({ configurable: { thread_id: threadId } });
  const log = (latest?.checkpoint.channel_values as { log?: string[] })["log"] ?? [];
  assert.ok(log.includes("report by r2") && !log.includes("act by r1"), `the thread holds run 2's work only: ${JSON.stringify(log)}`);
  console.log(`langgraph fenced: run 1 -> ${(run1 as Error).name} (cause ${((run1 as Error).cause as Error).name}), forks: ${forks.length}`);
});

test("PromptdCheckpointSaver_CONTROL_withoutLeaseOrFence_twoConcurrentRunsForkTheThread", async () => {
  const { threadId, saver, run1, run2 } = await doubleRun(true);
  assert.ok(!(run1 instanceof Error), `run 1 completed: ${String(run1)}`);
  assert.ok(!(run2 instanceof Error), `run 2 completed: ${String(run2)}`);
  const forks = [...(await children(saver, threadId))].filter(([, c]) => c.length > 1);
  assert.ok(forks.length >= 1, "without the fence the thread forks: two checkpoints with one parent");
  console.log(`langgraph CONTROL (unfenced): both runs completed, forks: ${forks.length} (parent ${forks[0]?.[0]} -> ${forks[0]?.[1].length} children)`);
});
