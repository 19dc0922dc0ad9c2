// A small real StateGraph for the tests: plan -> act -> report, where act
// can stall on a gate (so two runs overlap), and helpers over a thread's
// checkpoint history.
import { StateGraph, Annotation, START, END } from "@langchain/langgraph";
import type { LangGraphRunnableConfig } from "@langchain/langgraph";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";

export const State = Annotation.Root({
  log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});
export type S = typeof State.State;

export interface Gate { reached: Promise<void>; arrive: () => void; open: () => void; opened: Promise<void> }
export function gate(): Gate {
  let arrive!: () => void;
  let open!: () => void;
  const reached = new Promise<void>((r) => { arrive = r; });
  const opened = new Promise<void>((r) => { open = r; });
  return { reached, arrive, open, opened };
}

/** Nodes read configurable.run (the run's name) and, for act, wait on stalls.get(run) or sleep actMs. */
export function buildGraph(saver: BaseCheckpointSaver, o: { stalls?: Map<string, Gate>; actMs?: number } = {}) {
  const run = (c: LangGraphRunnableConfig): string => String(c.configurable?.["run"]);
  return new StateGraph(State)
    .addNode("plan", (s: S, c: LangGraphRunnableConfig) => ({ log: [`plan ${run(c)} (saw ${String(s.log.length)})`] }))
    .addNode("act", async (_s: S, c: LangGraphRunnableConfig) => {
      const g = o.stalls?.get(run(c));
      if (g) {
        g.arrive();
        await g.opened;
      } else if (o.actMs) {
        await new Promise((r) => setTimeout(r, o.actMs));
      }
      return { log: [`act ${run(c)}`] };
    })
    .addNode("report", (_s: S, c: LangGraphRunnableConfig) => ({ log: [`report ${run(c)}`] }))
    .addEdge(START, "plan").addEdge("plan", "act").addEdge("act", "report").addEdge("report", END)
    .compile({ checkpointer: saver });
}

export interface History {
  /** parent checkpoint id -> child ids (root checkpoints under ""). */
  children: Map<string, string[]>;
  ids: string[];
  /** The newest checkpoint's log. */
  headLog: string[];
}

export async function history(saver: BaseCheckpointSaver, threadId: string): Promise<History> {
  const children = new Map<string, string[]>();
  const ids: string[] = [];
  let headLog: string[] = [];
  for await (const t of saver.list({ configurable: { thread_id: threadId, checkpoint_ns: "" } })) {
    if (ids.length === 0) headLog = (t.checkpoint.channel_values["log"] as string[] | undefined) ?? [];
    ids.push(t.checkpoint.id);
    const parent = (t.parentConfig?.configurable?.["checkpoint_id"] as string | undefined) ?? "";
    children.set(parent, [...(children.get(parent) ?? []), t.checkpoint.id]);
  }
  return { children, ids, headLog };
}

/** The most children any checkpoint (or the root) has. */
export function maxChildren(h: History): number {
  return Math.max(0, ...[...h.children.values()].map((c) => c.length));
}
