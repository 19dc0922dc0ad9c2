// runThread: double-texting for self-hosted graphs, on promptd's session
// lease modes. A run started by runThread takes its thread's lease before
// the graph reads anything and holds it to the end (then releases it):
//   reject    lease mode reject: while another run holds the thread, the new
//             run is refused (ThreadBusyError) and nothing runs.
//   enqueue   lease mode wait: the new run waits for the holder's release
//             (woken by it, not polling), then runs on its result.
//   interrupt lease mode preempt: the new run takes the thread now; the old
//             run is refused at its next write (CheckpointFencedError), what
//             it wrote stays, and the new run continues from there.
//   rollback  as interrupt, and the old run's checkpoints and writes (the
//             entries written with its fence) are removed before the new run
//             reads, so it starts from the state before the old run.

import { RunControl } from "@langchain/langgraph";
import type { RunnableConfig } from "@langchain/core/runnables";
import { PromptdSaver } from "./saver.js";

export type MultitaskStrategy = "reject" | "enqueue" | "interrupt" | "rollback";

export interface RunThreadOptions {
  threadId: string;
  /** What to do when another run holds the thread (default reject). */
  multitask?: MultitaskStrategy;
  /** The saver; default: the graph's checkpointer (it must be a PromptdSaver). */
  saver?: PromptdSaver;
  /** More config for invoke (configurable is merged; thread_id and control are set by runThread). */
  config?: RunnableConfig;
  /** For enqueue: how long to wait for the thread in total, ms (default 60000). */
  waitMs?: number;
}

interface Invokable<I, O> {
  invoke(input: I, config?: RunnableConfig): Promise<O>;
  checkpointer?: unknown;
}

/** Runs graph.invoke(input) on the thread under the multitask strategy. */
export async function runThread<I, O>(graph: Invokable<I, O>, input: I, o: RunThreadOptions): Promise<O> {
  const saver = o.saver ?? graph.checkpointer;
  if (!(saver instanceof PromptdSaver)) throw new Error("runThread: the graph's checkpointer is not a PromptdSaver (pass saver)");
  const strategy = o.multitask ?? "reject";
  const control = new RunControl();
  if (strategy === "enqueue") {
    const deadline = Date.now() + (o.waitMs ?? 60_000);
    for (;;) {
      try {
        await saver.beginRun(o.threadId, control, "wait", Math.max(0, Math.min(30_000, deadline - Date.now())));
        break;
      } catch (err) {
        if (Date.now() >= deadline || (err as { code?: string }).code !== "lease_held") throw err;
      }
    }
  } else {
    const { previousFence } = await saver.beginRun(o.threadId, control, strategy === "reject" ? "reject" : "preempt");
    if (strategy === "rollback" && previousFence !== undefined) {
      await saver.removeEntries(control, o.threadId, (v) => v.f === previousFence);
    }
  }
  try {
    const config: RunnableConfig & { control: RunControl } = {
      ...o.config,
      configurable: { ...o.config?.configurable, thread_id: o.threadId },
      control,
    };
    return await graph.invoke(input, config);
  } finally {
    await saver.endRun(control);
  }
}
