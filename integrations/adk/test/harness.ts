// Test fixtures: a real promptd (@promptd/testkit) with an agent published
// for the ADK app, a local model for ADK's Runner (a BaseLlm subclass: no
// network), a counter tool that reads state, waits at a barrier, then writes
// what it read + 1.

import { BaseLlm, FunctionTool, LlmAgent, type BaseLlmConnection, type Context, type LlmRequest, type LlmResponse } from "@google/adk";
import { Client } from "@promptd/client";
import { startPromptd as startProcess, uniq } from "@promptd/testkit";
import { PromptdSessionService } from "../src/index.js";

export { uniq };

export interface Fixture {
  url: string;
  runtimeToken: string;
  /** The ADK app name, also the promptd agent (published, env "test" points at it). */
  app: string;
  env: string;
  /** A new service (a new client: as another worker process would have). */
  service: () => PromptdSessionService;
  stop: () => Promise<void>;
}

export async function start(): Promise<Fixture> {
  const p = await startProcess();
  const admin = new Client({ baseUrl: p.url, token: p.adminToken });
  const app = uniq("adkapp");
  const env = "test";
  const v = await admin.createVersion(app, { baseVersion: 0, config: { system: "You count." } });
  await admin.putEnv(app, env, v.version, 0);
  return {
    url: p.url, runtimeToken: p.runtimeToken, app, env,
    service: () => new PromptdSessionService({ client: new Client({ baseUrl: p.url, token: p.runtimeToken }), env }),
    stop: p.stop,
  };
}

/** A model that calls the `bump` tool once, then answers "done" (a local BaseLlm: ADK's own extension point). */
export class ScriptedLlm extends BaseLlm {
  constructor() {
    super({ model: "scripted-local" });
  }
  // eslint-disable-next-line @typescript-eslint/require-await -- an async generator with nothing to await
  override async *generateContentAsync(req: LlmRequest): AsyncGenerator<LlmResponse, void> {
    const last = req.contents.at(-1);
    const answered = last?.parts?.some((p) => p.functionResponse !== undefined) ?? false;
    if (answered) yield { content: { role: "model", parts: [{ text: "done" }] }, turnComplete: true };
    else yield { content: { role: "model", parts: [{ functionCall: { name: "bump", args: {} } }] }, turnComplete: true };
  }
  override connect(_req: LlmRequest): Promise<BaseLlmConnection> {
    return Promise.reject(new Error("ScriptedLlm has no live connection"));
  }
}

/** Both arrivals wait for each other, up to timeoutMs; met says whether they did. */
export class Barrier {
  met = false;
  private waiting: (() => void)[] = [];
  constructor(private readonly parties: number, private readonly timeoutMs: number) {}
  async arrive(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.waiting.push(resolve);
      if (this.waiting.length >= this.parties) {
        this.met = true;
        for (const w of this.waiting) w();
        this.waiting = [];
      } else {
        // Gone when the wait ends: a later arrival does not count as met.
        setTimeout(() => { this.waiting = this.waiting.filter((w) => w !== resolve); resolve(); }, this.timeoutMs);
      }
    });
  }
}

/**
 * An agent whose `bump` tool reads counter, visits, user:runs and app:total,
 * waits at the barrier (so two concurrent runs both read before either
 * writes, when nothing serializes them), then writes each + 1 (and its name
 * appended to visits, and a temp: key).
 */
export function counterAgent(who: string, barrier: Barrier): LlmAgent {
  const bump = new FunctionTool({
    name: "bump",
    description: "Adds one to the counter in session state.",
    execute: async (_input: unknown, ctx?: Context) => {
      if (!ctx) throw new Error("no tool context");
      const n = ctx.state.get<number>("counter", 0) ?? 0;
      const visits = ctx.state.get<string[]>("visits", []) ?? [];
      const runs = ctx.state.get<number>("user:runs", 0) ?? 0;
      const total = ctx.state.get<number>("app:total", 0) ?? 0;
      await barrier.arrive();
      ctx.state.set("counter", n + 1);
      ctx.state.set("visits", [...visits, who]);
      ctx.state.set("user:runs", runs + 1);
      ctx.state.set("app:total", total + 1);
      ctx.state.set("temp:scratch", who);
      return { counter: n + 1 };
    },
  });
  return new LlmAgent({ name: "counter", model: new ScriptedLlm(), instruction: "Count.", tools: [bump] });
}

/** How many times the events' invocation id changes from one event to the next (1 for two runs one after the other). */
export function invocationSwitches(events: { invocationId: string }[]): number {
  let n = 0;
  for (let i = 1; i < events.length; i++) if (events[i]!.invocationId !== events[i - 1]!.invocationId) n++;
  return n;
}
