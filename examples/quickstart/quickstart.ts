// The TypeScript SDK's quick start with its types: the same steps as quickstart.mjs,
// type-checked against the published declarations (tsc --strict) in a project that
// installed the package. tsconfig.json beside it is such a project's configuration.
//
//   npm install ./promptd-client-<version>.tgz typescript @types/node
//   npx tsc -p . && PROMPTD_URL=... PROMPTD_ADMIN_TOKEN=... PROMPTD_TOKEN=... node out/quickstart.js [AGENT]
import {
  Client,
  PromptdError,
  type Assembled,
  type Env,
  type PromptConfig,
  type Resolved,
  type Version,
} from "@promptd/client";

const url: string = process.env["PROMPTD_URL"] ?? "http://127.0.0.1:8080";
const admin = new Client({ baseUrl: url, token: process.env["PROMPTD_ADMIN_TOKEN"] ?? "" });
const rt = new Client({ baseUrl: url, token: process.env["PROMPTD_TOKEN"] ?? "" });
const agent: string = process.argv[2] ?? "quickstart-ts";

const config: PromptConfig = {
  system: "You are {{persona}} for {{company}}.",
  variables: { persona: { required: true }, company: { default: "ACME" } },
  model: { name: "gpt-4o", temperature: 0.2 },
};
const v: Version = await admin.createVersion(agent, { base_version: 0, message: "quick start", config });
console.log(`published ${agent} version ${v.version}`);

const env: Env = await admin.putEnv(agent, "prod", v.version, 0);
console.log(`${agent}/prod -> version ${env.version} (revision ${env.revision})`);

const r: Resolved = await rt.resolve(agent, "prod", { userId: "u1" });
console.log(`resolved: version ${r.version}, pinned ${r.pinned}, system ${JSON.stringify(r.config.system)}`);

const plain: Assembled<"plain"> = await rt.assemble(agent, "prod", { userId: "u1", variables: { persona: "a support bot" } });
const first = plain.body.messages[0];
console.log("assembled:", first?.role, JSON.stringify(first?.content));

const openai: Assembled<"openai"> = await rt.assemble(agent, "prod", { userId: "u1", variables: { persona: "a support bot" } }, "openai");
console.log("openai body:", JSON.stringify(openai.body));

try {
  await rt.assemble(agent, "prod", { userId: "u1", variables: {} }); // persona is required
} catch (e: unknown) {
  if (!(e instanceof PromptdError)) throw e;
  const status: number = e.status;
  console.log(`refused: ${status} ${e.code}`);
}
