// (b) REAL assembled bodies from a running promptd (format=openai) are
// written into a generated .ts file as
//   const body: ChatCompletionCreateParamsNonStreaming = <JSON>;
// and compiled with tsc --strict against the openai package's types. The
// CONTROL, an old-shape body with `model` as an object, must fail that check.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { startPromptd, publish, uniq, type Promptd } from "./harness.js";

const pkgRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const outDir = join(pkgRoot, ".typecheck");

let pd: Promptd;
before(async () => { pd = await startPromptd(); });
after(async () => { await pd?.stop(); });

function tsc(file: string): { ok: boolean; out: string } {
  try {
    const out = execFileSync(process.execPath, [join(pkgRoot, "node_modules", "typescript", "bin", "tsc"),
      "--strict", "--noEmit", "--skipLibCheck", "--exactOptionalPropertyTypes", "--target", "ES2022",
      "--module", "NodeNext", "--moduleResolution", "NodeNext", "--types", "node", file], { cwd: pkgRoot, encoding: "utf8" });
    return { ok: true, out };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    return { ok: false, out: (e.stdout ?? "") + (e.stderr ?? "") };
  }
}

function typecheckFile(name: string, bodies: unknown[]): string {
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, name);
  const lines = [
    `import type { ChatCompletionCreateParamsNonStreaming } from "openai/resources/chat/completions";`,
    ...bodies.map((b, i) => `export const body${i}: ChatCompletionCreateParamsNonStreaming = ${JSON.stringify(b, null, 2)};`),
  ];
  writeFileSync(file, lines.join("\n") + "\n");
  return file;
}

test("openai_realAssembledBodies_areAcceptedByTheOpenAIPackagesRequestType_andTheOldShapeIsNot", async () => {
  const full = uniq("oa-full");
  await publish(pd.admin, full, "prod", {
    system: "You are {{persona}} for {{company}}.",
    tools: [{ type: "function", function: { name: "lookup_order", description: "Find an order", parameters: { type: "object", properties: { id: { type: "string" } } } } }],
    skills: [{ name: "refunds", instructions: "Refunds within {{refund_days}} days." }],
    memory: ["Customer prefers email."],
    messages: [{ role: "user", content: "Example: where is order 1?" }, { role: "assistant", content: "Let me look that up for {{company}}." }],
    model: { name: "gpt-4o", temperature: 0.2, max_completion_tokens: 256 },
    variables: { persona: { required: true }, company: { default: "ACME" }, refund_days: { default: "30" } },
  });
  const s = await pd.runtime.createSession({ agent: full, env: "prod", sessionId: uniq("oa-s"), userId: "u-1" });
  await pd.runtime.appendTurns(s.session_id, [
    { role: "user", content: "Where is order 42?" },
    { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "lookup_order", arguments: "{\"id\":\"42\"}" } }] },
    { role: "tool", content: "{\"status\":\"shipped\"}", tool_call_id: "call_1" },
    { role: "assistant", content: "Order 42 has shipped." },
  ], { expectedRevision: 0 });
  const withTools = await pd.runtime.assemble(full, "prod", { sessionId: s.session_id, history: true, variables: { persona: "Ada" } }, "openai");

  const bare = uniq("oa-bare");
  await publish(pd.admin, bare, "prod", { system: "Answer briefly.", model: { name: "gpt-4o-mini" } });
  const noTools = await pd.runtime.assemble(bare, "prod", { userId: "u-2" }, "openai");

  const bodies = [withTools.body, noTools.body];
  assert.equal(withTools.body.model, "gpt-4o");
  assert.equal(withTools.promptdVersion, `${full}/prod/1`);
  assert.equal(withTools.body.temperature, 0.2);
  assert.ok(withTools.body.tools && withTools.body.tools.length === 1);
  assert.ok(withTools.body.messages.some((m) => m.role === "tool"));
  assert.ok(!("tools" in noTools.body), "tools omitted when empty");

  const good = tsc(typecheckFile("real-bodies.ts", bodies));
  assert.ok(good.ok, `tsc --strict rejected the real bodies:\n${good.out}`);

  // CONTROL: the old shape (model as an object) must not type-check.
  const old = { ...noTools.body, model: { name: "gpt-4o-mini" } };
  const bad = tsc(typecheckFile("control-old-shape.ts", [old]));
  assert.ok(!bad.ok, "the old-shape body must fail the check");
  assert.match(bad.out, /TS2322/);
  console.log(`openai type check: ${bodies.length} real bodies accepted by tsc --strict; control (model as object) rejected: ${bad.out.split("\n")[0]}`);
});
