// A runnable example against a real promptd:
//   PROMPTD_URL=http://127.0.0.1:8080 PROMPTD_TOKEN=<runtime token> [PROMPTD_ADMIN_TOKEN=<admin token>] \
//     node dist/examples/quickstart.js
// With PROMPTD_ADMIN_TOKEN it first publishes a version of agent "planner" to env "prod"
// (sessions need an env pointer). It runs a real StateGraph on PromptdSaver with plain
// graph.invoke, two overlapping runs on one thread, runThread with "enqueue", and a
// conditional store put.
import { StateGraph, Annotation, START, END } from "@langchain/langgraph";
import { Client } from "@promptd/client";
import { PromptdSaver, PromptdStore, runThread, ThreadLeaseError, StoreRevisionConflictError } from "../src/index.js";

const url = process.env["PROMPTD_URL"] ?? "http://127.0.0.1:8080";
const token = process.env["PROMPTD_TOKEN"] ?? "";
const adminToken = process.env["PROMPTD_ADMIN_TOKEN"];
const agent = "planner";
const env = "prod";

if (adminToken) {
  const admin = new Client({ baseUrl: url, token: adminToken });
  const envExists = await admin.getEnv(agent, env).then(() => true, () => false);
  if (!envExists) {
    const v = await admin.createVersion(agent, { baseVersion: 0, config: { system: "You plan." }, message: "example" });
    await admin.putEnv(agent, env, v.version, 0);
  }
}

const client = new Client({ baseUrl: url, token });
const saver = new PromptdSaver({ client, agent, env, holder: "example-worker" });
const store = new PromptdStore({ client, agent, env, sessionId: `example-store-${String(Date.now())}` });

const State = Annotation.Root({ log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) });
const graph = new StateGraph(State)
  .addNode("think", async (s: typeof State.State) => {
    await new Promise((r) => setTimeout(r, 300)); // a slow model call: runs overlap here
    return { log: [`thought #${String(s.log.length)}`] };
  })
  .addEdge(START, "think").addEdge("think", END)
  .compile({ checkpointer: saver, store });

const thread = { configurable: { thread_id: `example-${String(Date.now())}` } };

// 1. Plain invoke: the saver takes the thread's session lease at the first write.
console.log("run 1:", (await graph.invoke({ log: ["hello"] }, thread)).log);

// 2. Two overlapping runs on the same thread: one is refused, the chain does not fork.
const [a, b] = await Promise.allSettled([graph.invoke({ log: ["A"] }, thread), graph.invoke({ log: ["B"] }, thread)]);
for (const [name, r] of [["A", a], ["B", b]] as const) {
  if (r.status === "fulfilled") console.log(`run ${name}: ok`, r.value.log);
  else console.log(`run ${name}: refused, ${r.reason instanceof ThreadLeaseError ? `${r.reason.name} (${r.reason.code})` : String(r.reason)}`);
}
let maxChildren = 0;
const children = new Map<string, number>();
let count = 0;
for await (const t of saver.list(thread)) {
  count++;
  const p = String(t.parentConfig?.configurable?.["checkpoint_id"] ?? "");
  children.set(p, (children.get(p) ?? 0) + 1);
  maxChildren = Math.max(maxChildren, children.get(p) ?? 0);
}
console.log(`history: ${String(count)} checkpoints, at most ${String(maxChildren)} child per checkpoint`);

// 3. Double-texting: "enqueue" waits for the running run, then runs on its result.
const first = runThread(graph, { log: ["first"] }, { threadId: thread.configurable.thread_id, multitask: "enqueue" });
const second = runThread(graph, { log: ["second"] }, { threadId: thread.configurable.thread_id, multitask: "enqueue" });
await first;
console.log("enqueued run:", (await second).log.slice(-4));

// 4. The store: a put conditional on the item's revision.
await store.put(["prefs", "ann"], "theme", { value: "dark" });
const item = await store.get(["prefs", "ann"], "theme");
console.log("store item revision:", item?.revision);
await store.put(["prefs", "ann"], "theme", { value: "light" }, { expectedRevision: item?.revision ?? 0 });
try {
  await store.put(["prefs", "ann"], "theme", { value: "blue" }, { expectedRevision: item?.revision ?? 0 });
} catch (err) {
  if (!(err instanceof StoreRevisionConflictError)) throw err;
  console.log("stale put refused:", err.message);
}
await saver.close();
