// The local renderer against the real server: the same configs and
// variables assembled by promptd and by assemblePlain give the same answer,
// byte for byte (system message strings compared exactly).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { assemblePlain, render, MissingVariableError, InvalidVariableError, type PromptConfig } from "../src/index.js";
import { startPromptd, publish, type Promptd } from "./harness.js";

let pd: Promptd;
before(async () => { pd = await startPromptd(); });
after(async () => { await pd?.stop(); });

const cases: { name: string; config: PromptConfig; variables: Record<string, string> }[] = [
  {
    name: "skills-memory-spaces",
    config: {
      system: "You are {{persona}} for {{ company }}. {{bad {{ also bad}} {{{persona}}} }}{{",
      skills: [{ name: "refunds", instructions: "Refunds within {{refund_days}} days." }, { name: "tone", instructions: "Be {{ tone\t}}." }],
      memory: ["Customer prefers email.", "Name: {{persona}}"],
      tools: [{ type: "function", function: { name: "lookup_order", description: "Find an order", parameters: { type: "object" } } }],
      model: { name: "gpt-4o", temperature: 0.2 },
      variables: { persona: { required: true }, company: { default: "ACME" }, refund_days: { default: "30" }, tone: { default: "kind" } },
    },
    variables: { persona: "{{company}} ünïcødé 🚀", extra: "ignored" },
  },
  {
    name: "plain-no-placeholders",
    config: { system: "Just text with } and { and {{ 1 }} and {{-x}}." },
    variables: {},
  },
];

for (const c of cases) {
  test(`assemblePlain_equalsTheServersAssemble_${c.name}`, async () => {
    const agent = `asm-${c.name}`;
    await publish(pd.admin, agent, "prod", c.config);
    const server = (await pd.runtime.assemble(agent, "prod", { variables: c.variables })).body;
    const r = await pd.runtime.resolve(agent, "prod");
    const local = assemblePlain({ version: r.version, content_hash: r.content_hash, config: r.config, release: r.release, pinned: r.pinned }, c.variables);
    assert.equal(local.messages[0]?.content, server.messages[0]?.content, "system message byte for byte");
    assert.deepEqual(local, server);
  });
}

test("bind_errors_matchTheServersCodes", async () => {
  const agent = "asm-bind";
  const config: PromptConfig = { system: "Hi {{who}}", variables: { who: { required: true } } };
  await publish(pd.admin, agent, "prod", config);
  const r = await pd.runtime.resolve(agent, "prod");
  const p = { version: r.version, content_hash: r.content_hash, config: r.config, release: null, pinned: false };
  await assert.rejects(pd.runtime.assemble(agent, "prod", { variables: {} }), MissingVariableError);
  assert.throws(() => assemblePlain(p, {}), (e: unknown) => e instanceof MissingVariableError && e.fields.variable === "who");
  await assert.rejects(pd.runtime.assemble(agent, "prod", { variables: { who: 3 } }), InvalidVariableError);
  assert.throws(() => assemblePlain(p, { who: 3 }), InvalidVariableError);
});

test("render_isOnePass", () => {
  assert.equal(render("{{a}}{{b}}", { a: "{{b}}", b: "x" }), "{{b}}x");
});
