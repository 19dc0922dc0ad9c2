// Test helpers: a real promptd per test file, an agent to pin sessions to,
// and a local model object implementing the Agents SDK's Model interface
// (the SDK's extension point for model providers), so run() goes through
// the SDK's real runner without calling OpenAI.

import { Client } from "@promptd/client";
import { startPromptd, uniq, type PromptdProcess } from "@promptd/testkit";
import {
  Agent, Runner, Usage, setTracingDisabled, tool,
  type AgentInputItem, type Model, type ModelRequest, type ModelResponse, type StreamEvent,
} from "@openai/agents";
import { z } from "zod";
import { PromptdSession } from "../src/index.js";

setTracingDisabled(true);

export interface Promptd {
  proc: PromptdProcess;
  admin: Client;
  runtime: Client;
  /** An agent with env "prod", for sessions to pin. */
  agent: string;
}

/** Starts promptd with an agent published to prod; the caller stops it (after()). */
export async function promptd(): Promise<Promptd> {
  const proc = await startPromptd();
  const admin = new Client({ baseUrl: proc.url, token: proc.adminToken });
  const runtime = new Client({ baseUrl: proc.url, token: proc.runtimeToken });
  const agent = uniq("oa-agent");
  const v = await admin.createVersion(agent, { baseVersion: 0, config: { system: "You add numbers." }, message: "test" });
  await admin.putEnv(agent, "prod", v.version, 0);
  return { proc, admin, runtime, agent };
}

/** A PromptdSession on its own Client (as another replica would have). */
export function session(pd: Promptd, sessionId: string, holder?: string): PromptdSession {
  const client = new Client({ baseUrl: pd.proc.url, token: pd.proc.runtimeToken });
  return new PromptdSession({ client, sessionId, agent: pd.agent, env: "prod", ...(holder ? { holder } : {}) });
}

/** Resolves once n callers are waiting (or after timeoutMs, so a run that never arrives cannot hang a test). */
export function barrier(n: number, timeoutMs = 5000): () => Promise<void> {
  let waiting = 0;
  let open!: () => void;
  const opened = new Promise<void>((r) => { open = r; });
  const t = setTimeout(() => { open(); }, timeoutMs);
  return () => {
    if (++waiting >= n) { clearTimeout(t); open(); }
    return opened;
  };
}

const usage = (): Usage => new Usage();

const asItems = (input: string | AgentInputItem[]): AgentInputItem[] =>
  typeof input === "string" ? [{ type: "message", role: "user", content: input }] : input;

/**
 * A scripted model: a turn first calls the `add` tool, then (seeing the
 * tool's result) answers with a text naming the model and how many user
 * messages it was given. Every input it got is kept; `gate`, when set,
 * is awaited before the first answer of each run (to make runs overlap).
 */
export class FakeModel implements Model {
  readonly inputs: AgentInputItem[][] = [];
  private n = 0;
  constructor(readonly label: string, readonly gate?: () => Promise<void>) {}

  private async answer(req: ModelRequest): Promise<ModelResponse> {
    const input = asItems(req.input);
    this.inputs.push(structuredClone(input));
    const last = input.at(-1) as Record<string, unknown> | undefined;
    const id = `${this.label}-${String(++this.n)}`;
    if (last?.["type"] === "function_call_result") {
      const users = input.filter((i) => (i as Record<string, unknown>)["role"] === "user").length;
      return {
        usage: usage(), responseId: `resp-${id}`,
        output: [{ type: "message", role: "assistant", status: "completed", id: `msg-${id}`, content: [{ type: "output_text", text: `${this.label} saw ${String(users)} user messages` }] }],
      };
    }
    if (this.gate) await this.gate();
    return {
      usage: usage(), responseId: `resp-${id}`,
      output: [{ type: "function_call", id: `fc-${id}`, callId: `call-${id}`, name: "add", arguments: JSON.stringify({ a: 2, b: 3 }), status: "completed" }],
    };
  }

  getResponse(req: ModelRequest): Promise<ModelResponse> {
    return this.answer(req);
  }

  async *getStreamedResponse(req: ModelRequest): AsyncIterable<StreamEvent> {
    const r = await this.answer(req);
    yield { type: "response_done", response: { id: r.responseId ?? "resp", usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 }, output: r.output as never } };
  }
}

export const addTool = tool({
  name: "add", description: "Adds two numbers.",
  parameters: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => String(a + b),
});

/** An agent on the model. */
export function agentOn(model: Model): Agent {
  return new Agent({ name: "adder", instructions: "You add numbers.", model, tools: [addTool] });
}

/** A new Runner (one per simulated replica). */
export function replica(): Runner {
  return new Runner();
}

/** Items as JSON (promptd stores JSON: members that are undefined are not kept). */
export const asJSON = (items: unknown): unknown => JSON.parse(JSON.stringify(items)) as unknown;

/** The kinds of items, `role` for messages and `type` for the rest. */
export const kinds = (items: AgentInputItem[]): string[] =>
  items.map((i) => {
    const r = i as { type?: string; role?: string };
    return r.type === "message" || r.type === undefined ? String(r.role) : r.type;
  });

/** The texts of the user messages, in order. */
export const userTexts = (items: AgentInputItem[]): string[] =>
  items.filter((i) => (i as Record<string, unknown>)["role"] === "user").map((i) => String((i as Record<string, unknown>)["content"]));

export { uniq };
