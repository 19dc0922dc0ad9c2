// Drop-in: the same graphs run on PromptdSaver and on LangGraph's MemorySaver
// give the same results: a subgraph (checkpoint_ns), an interrupt resumed with
// Command (pending writes), a Send fan-out (pending sends), getState and
// getStateHistory, updateState, and time travel (a run from an older
// checkpoint, which branches the thread on purpose).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { StateGraph, Annotation, START, END, Command, Send, interrupt } from "@langchain/langgraph";
import { MemorySaver, type BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { uniq } from "@promptd/testkit";
import { PromptdSaver } from "../src/index.js";
import { startEnv, type Env } from "./setup.js";

let e: Env;
before(async () => { e = await startEnv(); });
after(async () => { await e.pd.stop(); });

const St = Annotation.Root({
  log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  items: Annotation<string[]>({ reducer: (_a, b) => b, default: () => [] }),
});
type S = typeof St.State;

function build(saver: BaseCheckpointSaver) {
  const sub = new StateGraph(St)
    .addNode("inner", (s: S) => ({ log: [`inner saw ${String(s.log.length)}`] }))
    .addEdge(START, "inner").addEdge("inner", END).compile();
  return new StateGraph(St)
    .addNode("split", () => ({ items: ["a", "b", "c"], log: ["split"] }))
    .addNode("work", (s: { item: string }) => ({ log: [`work ${s.item}`] }))
    .addNode("sub", sub)
    .addNode("ask", () => {
      const answer = interrupt<string, string>("approve?");
      return { log: [`answer ${answer}`] };
    })
    .addEdge(START, "split")
    .addConditionalEdges("split", (s: S) => s.items.map((item) => new Send("work", { item })))
    .addEdge("work", "sub")
    .addEdge("sub", "ask")
    .addEdge("ask", END)
    .compile({ checkpointer: saver });
}

async function scenario(saver: BaseCheckpointSaver) {
  const g = build(saver);
  const config = { configurable: { thread_id: uniq("dropin") } };
  const first = await g.invoke({ log: ["in"] }, config);
  const paused = await g.getState(config);
  const resumed = await g.invoke(new Command({ resume: "yes" }), config);
  await g.updateState(config, { log: ["edited"] });
  const afterUpdate = await g.getState(config);
  const hist: { step: unknown; next: string[]; log: string[] }[] = [];
  for await (const s of g.getStateHistory(config)) hist.push({ step: s.metadata?.step, next: [...s.next], log: (s.values as S).log });
  // Time travel: run again from the checkpoint before "ask" (a deliberate branch).
  const beforeAsk = (await (async () => { for await (const s of g.getStateHistory(config)) if (s.next.includes("ask")) return s; return undefined; })())!;
  const branched = await g.invoke(new Command({ resume: "no" }), beforeAsk.config);
  const branchedAgain = await g.invoke(null, beforeAsk.config);
  return {
    first: first.log, interrupts: (first as { __interrupt__?: unknown[] }).__interrupt__?.length,
    pausedNext: paused.next, resumed: resumed.log, afterUpdate: (afterUpdate.values as S).log,
    hist, branched: branched.log, branchedAgain: (branchedAgain as { __interrupt__?: unknown[] }).__interrupt__?.length,
  };
}

test("the same graphs give the same results on PromptdSaver and MemorySaver (subgraph, Send, interrupt + Command, updateState, history, time travel)", async () => {
  const saver = new PromptdSaver({ client: e.rt, agent: e.agent, env: e.env, sessionPrefix: uniq("d").replace(/-/g, "") + "-" });
  const onPromptd = await scenario(saver);
  const onMemory = await scenario(new MemorySaver());
  console.log(JSON.stringify({ resumed: onPromptd.resumed, historyLength: onPromptd.hist.length, branched: onPromptd.branched }));
  assert.deepEqual(onPromptd, onMemory);
  // The subgraph shares the parent's state schema: its output (its whole log) goes through the reducer again, on both savers.
  const toSub = ["in", "split", "work a", "work b", "work c"];
  assert.deepEqual(onPromptd.resumed, [...toSub, ...toSub, "inner saw 5", "answer yes"]);
  assert.equal(onPromptd.interrupts, 1);
  assert.deepEqual(onPromptd.pausedNext, ["ask"]);
  await saver.close();
});
