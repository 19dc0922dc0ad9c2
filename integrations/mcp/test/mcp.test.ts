// promptd's MCP server, tested with the official TypeScript MCP client
// (@modelcontextprotocol/sdk) against a real promptd: over streamable
// HTTP, and over stdio through `promptctl mcp`.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { PromptListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { Client, type BoardRecord, type PromptConfig } from "@promptd/client";
import { startPromptd, uniq, repoRoot, type PromptdProcess } from "@promptd/testkit";
import { connectPromptd } from "../src/index.js";

let pd: PromptdProcess;
let admin: Client;
const open: McpClient[] = [];

before(async () => {
  pd = await startPromptd();
  admin = new Client({ baseUrl: pd.url, token: pd.adminToken });
});

after(async () => {
  for (const c of open) await c.close();
  await pd.stop();
});

/** Publishes a version of agent and points env at it; returns its number. */
async function publish(agent: string, env: string, config: PromptConfig): Promise<number> {
  let base = 0;
  try {
    base = (await admin.listVersions(agent)).items[0]?.version ?? 0;
  } catch { /* a new agent */ }
  const v = await admin.createVersion(agent, { baseVersion: base, config, message: "test" });
  let revision = 0;
  try {
    revision = (await admin.getEnv(agent, env)).revision;
  } catch { /* a new pointer */ }
  await admin.putEnv(agent, env, v.version, revision);
  return v.version;
}

/** A change counter: how many list_changed, and a wait for the next. */
function changes(): { onChanged: () => void; next: (ms: number) => Promise<boolean>; drain: () => Promise<void> } {
  let waiters: (() => void)[] = [];
  let count = 0;
  return {
    onChanged: () => { count++; const w = waiters; waiters = []; for (const f of w) f(); },
    next: (ms) => new Promise((res) => {
      const t = setTimeout(() => { res(false); }, ms);
      waiters.push(() => { clearTimeout(t); res(true); });
    }),
    // Notices of the commits made just before connecting (the feed
    // position a server starts from may lag them) arrive now.
    drain: async () => { let c = -1; while (c !== count) { c = count; await new Promise((r) => setTimeout(r, 400)); } },
  };
}

function text(content: unknown): string {
  const c = content as { type: string; text?: string };
  assert.equal(c.type, "text");
  return c.text ?? "";
}

test("lists an env's agents as prompts with their arguments, and gets the assembled messages", async () => {
  const agent = uniq("mcp-support");
  await publish(agent, "prod", {
    system: "You help {{customer}} in {{lang}}.",
    messages: [{ role: "assistant", content: "Hello {{customer}}!" }],
    variables: { customer: { required: true, description: "the customer's name" }, lang: { default: "English", description: "the language" } },
  });
  const client = await connectPromptd({ url: pd.url, token: pd.runtimeToken, env: "prod" });
  open.push(client);
  const { prompts } = await client.listPrompts();
  const p = prompts.find((x) => x.name === agent);
  assert.ok(p, `${agent} is listed`);
  assert.deepEqual(p.arguments?.map((a) => [a.name, a.required ?? false, a.description]),
    [["customer", true, "the customer's name"], ["lang", false, 'the language; default "English"']]);
  const got = await client.getPrompt({ name: agent, arguments: { customer: "Ada" } });
  assert.deepEqual(got.messages.map((m) => [m.role, text(m.content)]),
    [["user", "[system]\nYou help Ada in English."], ["assistant", "Hello Ada!"]]);
  assert.deepEqual(got._meta?.["promptd/roles"], ["system", "assistant"]);
  await assert.rejects(client.getPrompt({ name: agent, arguments: {} }), (e: Error) =>
    e.message.includes("missing_variable") && e.message.includes("customer"));
});

test("list_changed arrives within 1 s of a pointer switch", async () => {
  const agent = uniq("mcp-switch");
  await publish(agent, "prod", { system: "one" });
  const v2 = (await admin.createVersion(agent, { baseVersion: 1, config: { system: "two" }, message: "two" })).version;
  const ch = changes();
  const client = await connectPromptd({ url: pd.url, token: pd.runtimeToken, env: "prod", onPromptsChanged: ch.onChanged });
  open.push(client);
  await client.listPrompts();
  await ch.drain();
  const start = performance.now();
  const heard = ch.next(1000);
  const env = await admin.getEnv(agent, "prod");
  await admin.putEnv(agent, "prod", v2, env.revision);
  assert.ok(await heard, "list_changed within 1 s of the pointer switch");
  const ms = performance.now() - start;
  console.log(`list_changed latency after a pointer switch (streamable HTTP): ${ms.toFixed(1)} ms`);
  assert.ok(ms < 1000);
  const got = await client.getPrompt({ name: agent });
  assert.equal(text(got.messages[0]?.content), "[system]\ntwo");
});

test("claims, heartbeats and completes a board record through the tools", async () => {
  const board = uniq("mcp-jobs");
  await admin.createRecord(board, { id: "job-1", payload: { url: "https://example.com" } });
  const client = await connectPromptd({ url: pd.url, token: pd.runtimeToken, env: "prod" });
  open.push(client);
  const { tools } = await client.listTools();
  const claimTool = tools.find((t) => t.name === "claim_record");
  assert.deepEqual(claimTool?.inputSchema.required, ["board", "holder"]);
  assert.equal((claimTool?.inputSchema as { additionalProperties?: unknown }).additionalProperties, false);

  const claim = await client.callTool({ name: "claim_record", arguments: { board, holder: "ts-worker", ttl_ms: 10000 } });
  assert.notEqual(claim.isError, true);
  const c = claim.structuredContent as { claimed: boolean; record_id: string; fence: number; revision: number; claim_expires_at: string; payload: unknown };
  assert.equal(c.claimed, true);
  assert.equal(c.record_id, "job-1");
  assert.deepEqual(c.payload, { url: "https://example.com" });
  assert.ok(Date.parse(c.claim_expires_at) > Date.now());
  const hb = await client.callTool({ name: "heartbeat_record", arguments: { board, record_id: "job-1", fence: c.fence } });
  const h = hb.structuredContent as { revision: number };
  const stale = await client.callTool({ name: "heartbeat_record", arguments: { board, record_id: "job-1", fence: c.fence + 1 } });
  assert.equal(stale.isError, true);
  assert.equal((stale.structuredContent as { code: string }).code, "stale_fence");
  const running = await client.callTool({ name: "complete_record", arguments: { board, record_id: "job-1", fence: c.fence, expected_revision: h.revision, state: "running" } });
  const r = running.structuredContent as { revision: number };
  const done = await client.callTool({ name: "complete_record", arguments: { board, record_id: "job-1", fence: c.fence, expected_revision: r.revision, state: "done", payload: { ok: true } } });
  assert.notEqual(done.isError, true);
  const rec: BoardRecord = await admin.getRecord(board, "job-1");
  assert.equal(rec.state, "done");
  assert.deepEqual(rec.payload, { ok: true });
  const unknown = await client.callTool({ name: "claim_record", arguments: { board, holder: "x", colour: "red" } });
  assert.equal(unknown.isError, true, "an unknown member is refused by the schema");
});

test("a scoped token does not see an out-of-scope agent", async () => {
  const team = uniq("mcp-team");
  const mine = `${team}-a`, theirs = uniq("mcp-other");
  await publish(mine, "prod", { system: "mine" });
  await publish(theirs, "prod", { system: "theirs" });
  const created = await admin.request<{ secret: string }>({ method: "POST", path: "/v1/tokens",
    body: { name: uniq("mcp-scoped"), role: "runtime", scopes: { agents: [`${team}-*`] } } });
  const scoped = await connectPromptd({ url: pd.url, token: created.secret, env: "prod" });
  open.push(scoped);
  const names = (await scoped.listPrompts()).prompts.map((p) => p.name);
  assert.deepEqual(names, [mine]);
  await assert.rejects(scoped.getPrompt({ name: theirs }));
  // The control: the unscoped runtime token lists both.
  const all = await connectPromptd({ url: pd.url, token: pd.runtimeToken, env: "prod" });
  open.push(all);
  const allNames = (await all.listPrompts()).prompts.map((p) => p.name);
  assert.ok(allNames.includes(mine) && allNames.includes(theirs));
});

/** promptctl: PROMPTCTL_BIN, or built from the repository. */
function promptctlBinary(): string {
  const fromEnv = process.env["PROMPTCTL_BIN"];
  if (fromEnv) return fromEnv;
  const out = join(mkdtempSync(join(tmpdir(), "promptctl-mcp-test-")), "promptctl");
  execFileSync("go", ["build", "-o", out, "./cmd/promptctl"], { cwd: repoRoot, stdio: ["ignore", "inherit", "inherit"], env: { ...process.env, GOFLAGS: "-buildvcs=false" } });
  return out;
}

test("promptctl mcp serves the same over stdio, list_changed included", async () => {
  const agent = uniq("mcp-stdio");
  await publish(agent, "prod", { system: "Hi {{who}}.", variables: { who: { required: true } } });
  const v2 = (await admin.createVersion(agent, { baseVersion: 1, config: { system: "Bye." }, message: "two" })).version;
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  Object.assign(env, { PROMPTD_URL: pd.url, PROMPTD_TOKEN: pd.runtimeToken });
  const transport = new StdioClientTransport({ command: promptctlBinary(), args: ["mcp", "--env", "prod"], env, stderr: "inherit" });
  const client = new McpClient({ name: "stdio-test", version: "0.1.0" });
  const ch = changes();
  client.setNotificationHandler(PromptListChangedNotificationSchema, () => { ch.onChanged(); });
  await client.connect(transport);
  open.push(client);
  const p = (await client.listPrompts()).prompts.find((x) => x.name === agent);
  assert.deepEqual(p?.arguments?.map((a) => [a.name, a.required]), [["who", true]]);
  const got = await client.getPrompt({ name: agent, arguments: { who: "Ada" } });
  assert.equal(text(got.messages[0]?.content), "[system]\nHi Ada.");
  await ch.drain();
  const start = performance.now();
  const heard = ch.next(1000);
  await admin.putEnv(agent, "prod", v2, (await admin.getEnv(agent, "prod")).revision);
  assert.ok(await heard, "list_changed within 1 s through promptctl mcp");
  console.log(`list_changed latency after a pointer switch (stdio, promptctl mcp): ${(performance.now() - start).toFixed(1)} ms`);
});
