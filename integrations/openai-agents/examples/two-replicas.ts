// Two replicas of an agent service continue one conversation kept in
// promptd. Run: npm run example (PROMPTD_URL, PROMPTD_ADMIN_TOKEN and
// PROMPTD_TOKEN name a running promptd).
//
// The model here is a local object implementing the SDK's Model interface,
// so the example runs without an OpenAI key; with one, drop `model` (or set
// `model: "gpt-4.1"`) and the rest is unchanged.

import { Agent, Runner, Usage, setTracingDisabled, type Model, type ModelRequest, type ModelResponse, type StreamEvent } from "@openai/agents";
import { Client } from "@promptd/client";
import { PromptdSession, SessionBusyError } from "@promptd/openai-agents";

setTracingDisabled(true);
const url = process.env["PROMPTD_URL"] ?? "http://127.0.0.1:8080";
const admin = new Client({ baseUrl: url, token: process.env["PROMPTD_ADMIN_TOKEN"] ?? "" });
const token = process.env["PROMPTD_TOKEN"] ?? "";

// The promptd agent the session pins (any published agent/env will do).
const agentName = `support-${Date.now().toString(36)}`;
const v = await admin.createVersion(agentName, { baseVersion: 0, config: { system: "You are a support agent." }, message: "first" });
await admin.putEnv(agentName, "prod", v.version, 0);

/** Answers with how much of the conversation it was given. */
class CountingModel implements Model {
  constructor(private readonly replica: string) {}
  async getResponse(req: ModelRequest): Promise<ModelResponse> {
    const input = typeof req.input === "string" ? [] : req.input;
    const users = input.filter((i) => "role" in i && i.role === "user").length;
    await new Promise((r) => setTimeout(r, 200)); // a model takes a while
    return {
      usage: new Usage(),
      output: [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: `(${this.replica}) I have ${String(users)} messages of yours` }] }],
    };
  }
  getStreamedResponse(): AsyncIterable<StreamEvent> {
    throw new Error("not streamed in this example");
  }
}

/** One replica: its own promptd client, runner and session object; promptd in common. */
function replica(name: string, sessionId: string) {
  const session = new PromptdSession({ client: new Client({ baseUrl: url, token }), sessionId, agent: agentName, env: "prod", holder: name });
  const agent = new Agent({ name: "support", instructions: "Help.", model: new CountingModel(name) });
  const runner = new Runner();
  return {
    session,
    // The run holds the session's lease: a run on another replica waits (waitMs) or fails at once.
    ask: (text: string, waitMs = 0) => session.withHold(async () => String((await runner.run(agent, text, { session })).finalOutput), { waitMs }),
  };
}

const sessionId = `chat-${Date.now().toString(36)}`;
const a = replica("replica-a", sessionId);
const b = replica("replica-b", sessionId);

console.log(await a.ask("Hi, my order A-1 is late."));
console.log(await b.ask("Any news?"));

// Both at once: B waits for A's run to finish, then sees it.
const [ra, rb] = await Promise.all([a.ask("Please hurry.", 5000), new Promise((r) => setTimeout(r, 50)).then(() => b.ask("Hello?", 5000))]);
console.log(ra);
console.log(rb);

// Both at once, B not willing to wait: a typed error, nothing written.
const slow = a.ask("One more thing.");
await new Promise((r) => setTimeout(r, 50));
await b.ask("Me too!").catch((err: unknown) => {
  if (err instanceof SessionBusyError) console.log(`replica-b: ${err.name}, held by ${String(err.holder)}`);
  else throw err;
});
console.log(await slow);

// The stored history, as any replica (or promptd's console) reads it.
const text = (c: unknown): string => (typeof c === "string" ? c : (c as { text?: string }[]).map((p) => p.text ?? "").join(""));
for (const i of await b.session.getItems()) if ("role" in i) console.log(`  ${i.role}: ${text(i.content)}`);
