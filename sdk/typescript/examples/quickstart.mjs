// node examples/quickstart.mjs  (after npm run build; PROMPTD_URL, PROMPTD_ADMIN_TOKEN, PROMPTD_TOKEN)
import { Client, withSessionLease, StaleFenceError } from "@promptd/client";

const url = process.env.PROMPTD_URL ?? "http://127.0.0.1:8080";
const admin = new Client({ baseUrl: url, token: process.env.PROMPTD_ADMIN_TOKEN });
const promptd = new Client({ baseUrl: url, token: process.env.PROMPTD_TOKEN });

const agent = `support-${Date.now()}`;
const v = await admin.createVersion(agent, {
  baseVersion: 0, message: "first",
  config: {
    system: "You are {{persona}} for {{company}}.",
    variables: { persona: { required: true }, company: { default: "ACME" } },
    model: { name: "gpt-4o", temperature: 0.2 },
  },
});
await admin.putEnv(agent, "prod", v.version, 0);

const { body, promptdVersion } = await promptd.assemble(agent, "prod", { userId: "u-1", variables: { persona: "Ada" } });
console.log(promptdVersion, JSON.stringify(body.messages));

const s = await promptd.createSession({ agent, env: "prod", userId: "u-1" });
await withSessionLease(promptd, s.session_id, "worker-1", { ttlMs: 5000 }, async (lease) => {
  await lease.appendTurns([{ role: "user", content: "Where is my order?" }], 0);
  // Someone takes the session over: our next write is refused.
  await promptd.acquireSessionLease(s.session_id, { holder: "worker-2", mode: "preempt" });
  await lease.appendTurns([{ role: "assistant", content: "late" }], 1).catch((e) => {
    console.log(e instanceof StaleFenceError, e.code, e.fields.current_fence > lease.fence);
  });
}).catch((e) => console.log("withSessionLease:", e.name));
