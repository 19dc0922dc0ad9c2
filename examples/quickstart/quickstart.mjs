// The TypeScript SDK's quick start, as plain JavaScript (Node 20+, ESM): publish a
// prompt, point an env at it, resolve and assemble it the way a runtime does.
//
//   npm install ./promptd-client-<version>.tgz
//   PROMPTD_URL=http://127.0.0.1:8080 PROMPTD_ADMIN_TOKEN=... PROMPTD_TOKEN=... node quickstart.mjs [AGENT]
//
// PROMPTD_ADMIN_TOKEN is an admin token (publishes, moves env pointers), PROMPTD_TOKEN a
// runtime token (resolves, assembles). AGENT defaults to quickstart-node and must be new.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Client, PromptdError } from "@promptd/client";

const require = createRequire(import.meta.url);
const pkg = JSON.parse(readFileSync(require.resolve("@promptd/client/package.json"), "utf8"));
console.log(`${pkg.name} ${pkg.version} (entry ${import.meta.resolve("@promptd/client")})`);

const url = process.env.PROMPTD_URL ?? "http://127.0.0.1:8080";
const admin = new Client({ baseUrl: url, token: process.env.PROMPTD_ADMIN_TOKEN ?? "" });
const rt = new Client({ baseUrl: url, token: process.env.PROMPTD_TOKEN ?? "" });
const agent = process.argv[2] ?? "quickstart-node";

const v = await admin.createVersion(agent, {
  base_version: 0,
  message: "quick start",
  config: {
    system: "You are {{persona}} for {{company}}.",
    variables: { persona: { required: true }, company: { default: "ACME" } },
    model: { name: "gpt-4o", temperature: 0.2 },
  },
});
console.log(`published ${agent} version ${v.version}`);

const env = await admin.putEnv(agent, "prod", v.version, 0);
console.log(`${agent}/prod -> version ${env.version} (revision ${env.revision})`);

const r = await rt.resolve(agent, "prod", { userId: "u1" });
console.log(`resolved: version ${r.version}, pinned ${r.pinned}, system ${JSON.stringify(r.config.system)}`);

const plain = await rt.assemble(agent, "prod", { userId: "u1", variables: { persona: "a support bot" } });
console.log("assembled:", JSON.stringify(plain.body.messages), "Promptd-Version:", plain.promptdVersion);

const openai = await rt.assemble(agent, "prod", { userId: "u1", variables: { persona: "a support bot" } }, "openai");
console.log("openai body:", JSON.stringify(openai.body));

try {
  await rt.assemble(agent, "prod", { userId: "u1", variables: {} }); // persona is required
} catch (e) {
  if (!(e instanceof PromptdError)) throw e;
  console.log(`refused: ${e.status} ${e.code}`);
}
