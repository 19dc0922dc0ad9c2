// Two ADK runs on one session at the same time, on promptd.
//
// A local model (no Gemini key needed) calls a `bump` tool that reads
// `counter` from session state and writes counter + 1. Both runs go through
// runExclusive, so the second reads after the first wrote: counter ends at 2
// (ADK's InMemorySessionService ends at 1: google/adk-python#4751). Then a
// stale Session object tries to append and gets SessionConflictError.
//
//   PROMPTD_URL=http://127.0.0.1:8080 PROMPTD_TOKEN=<admin token> node dist/examples/concurrent-runs.js
//
// The admin token is only needed to publish the demo agent; a runtime token
// does the rest.

import { BaseLlm, FunctionTool, LlmAgent, Runner, createEvent, type BaseLlmConnection, type Context, type LlmRequest, type LlmResponse } from "@google/adk";
import { Client } from "@promptd/client";
import { PromptdSessionService, SessionConflictError } from "@promptd/adk";

class LocalModel extends BaseLlm {
  constructor() {
    super({ model: "local" });
  }
  // eslint-disable-next-line @typescript-eslint/require-await -- nothing to await
  override async *generateContentAsync(req: LlmRequest): AsyncGenerator<LlmResponse, void> {
    const answered = req.contents.at(-1)?.parts?.some((p) => p.functionResponse !== undefined) ?? false;
    yield { content: { role: "model", parts: [answered ? { text: "bumped" } : { functionCall: { name: "bump", args: {} } }] } };
  }
  override connect(): Promise<BaseLlmConnection> {
    return Promise.reject(new Error("no live mode"));
  }
}

const bump = new FunctionTool({
  name: "bump",
  description: "Adds one to the counter.",
  execute: async (_input: unknown, ctx?: Context) => {
    const n = ctx?.state.get<number>("counter", 0) ?? 0;
    await new Promise((r) => setTimeout(r, 200)); // a slow tool: the window where updates get lost
    ctx?.state.set("counter", n + 1);
    return { counter: n + 1 };
  },
});

const url = process.env["PROMPTD_URL"] ?? "http://127.0.0.1:8080";
const client = new Client({ baseUrl: url, token: process.env["PROMPTD_TOKEN"] ?? "" });
const app = "adk-demo";
const env = "dev";

// The ADK app is a promptd agent: publish a version and point env at it (once).
try {
  await client.getEnv(app, env);
} catch {
  const v = await client.createVersion(app, { baseVersion: 0, config: { system: "You count." } });
  await client.putEnv(app, env, v.version, 0);
}

const sessions = new PromptdSessionService({ client, env });
const agent = new LlmAgent({ name: "counter", model: new LocalModel(), instruction: "Count.", tools: [bump] });
const runner = new Runner({ appName: app, agent, sessionService: sessions });

const s = await sessions.createSession({ appName: app, userId: "ada", state: { counter: 0 } });
const run = (text: string) => sessions.runExclusive(s.id, async () => {
  for await (const e of runner.runAsync({ userId: "ada", sessionId: s.id, newMessage: { role: "user", parts: [{ text }] } })) {
    const t = e.content?.parts?.[0]?.text;
    if (t) console.log(`  ${e.author ?? "?"}: ${t}`);
  }
});
await Promise.all([run("bump please"), run("bump again")]);

const after = await sessions.getSession({ appName: app, userId: "ada", sessionId: s.id });
console.log(`counter after two concurrent runs: ${String(after?.state["counter"])}`);
console.log(`events: ${after?.events.map((e) => `${e.author ?? "?"}@${e.invocationId.slice(-4)}`).join(" ") ?? ""}`);

// A Session read before another run is stale: its append is refused, not applied.
const stale = (await sessions.getSession({ appName: app, userId: "ada", sessionId: s.id }))!;
await run("one more");
try {
  await sessions.appendEvent({ session: stale, event: createEvent({ author: "counter", actions: { stateDelta: { counter: 100 } } }) });
} catch (err) {
  if (!(err instanceof SessionConflictError)) throw err;
  console.log(`stale append refused: ${err.message}`);
}
