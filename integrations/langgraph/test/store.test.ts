// PromptdStore: LangGraph's BaseStore on promptd session state entries.
// Its ordinary operations, and the conditional put: two writers from the
// same revision, one wins, the other gets StoreRevisionConflictError naming
// the current revision. Also used as a graph's store by a real StateGraph.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { StateGraph, Annotation, START, END, type LangGraphRunnableConfig } from "@langchain/langgraph";
import { uniq } from "@promptd/testkit";
import { PromptdStore, PromptdSaver, StoreRevisionConflictError } from "../src/index.js";
import { startEnv, type Env } from "./setup.js";

let e: Env;
before(async () => { e = await startEnv(); });
after(async () => { await e.pd.stop(); });

const newStore = () => new PromptdStore({ client: e.rt, agent: e.agent, env: e.env, sessionId: uniq("store") });

test("get, put, search with prefix and filter, delete, listNamespaces", async () => {
  const s = newStore();
  assert.equal(await s.get(["users", "ann"], "prefs"), null);
  await s.put(["users", "ann"], "prefs", { theme: "dark", size: 3 });
  await s.put(["users", "ann"], "memo", { text: "likes tea", size: 1 });
  await s.put(["users", "bob"], "prefs", { theme: "light", size: 5 });
  await s.put(["docs"], "readme", { theme: "dark", size: 9 });
  const got = await s.get(["users", "ann"], "prefs");
  assert.deepEqual(got?.value, { theme: "dark", size: 3 });
  assert.equal(got?.revision, 1);
  assert.ok(got?.createdAt instanceof Date);

  assert.deepEqual((await s.search(["users"])).map((i) => i.key + "@" + i.namespace.join("/")).sort(), ["memo@users/ann", "prefs@users/ann", "prefs@users/bob"]);
  assert.deepEqual((await s.search(["users", "ann"])).map((i) => i.key).sort(), ["memo", "prefs"]);
  assert.deepEqual((await s.search([], { filter: { theme: "dark" } })).map((i) => i.key).sort(), ["prefs", "readme"]);
  assert.deepEqual((await s.search(["users"], { filter: { size: { $gte: 3 } } })).map((i) => i.namespace[1]).sort(), ["ann", "bob"]);
  assert.equal((await s.search([], { limit: 2 })).length, 2);
  assert.equal((await s.search([], { limit: 10, offset: 3 })).length, 1);

  assert.deepEqual(await s.listNamespaces(), [["docs"], ["users", "ann"], ["users", "bob"]]);
  assert.deepEqual(await s.listNamespaces({ prefix: ["users"] }), [["users", "ann"], ["users", "bob"]]);
  assert.deepEqual(await s.listNamespaces({ suffix: ["bob"] }), [["users", "bob"]]);
  assert.deepEqual(await s.listNamespaces({ maxDepth: 1 }), [["docs"], ["users"]]);

  await s.put(["users", "ann"], "prefs", { theme: "light", size: 3 });
  const upd = await s.get(["users", "ann"], "prefs");
  assert.equal(upd?.revision, 2);
  assert.equal(upd?.createdAt.getTime(), got?.createdAt.getTime());
  await s.delete(["users", "ann"], "prefs");
  assert.equal(await s.get(["users", "ann"], "prefs"), null);
  assert.deepEqual((await s.search(["users", "ann"])).map((i) => i.key), ["memo"]);
  // A deleted key can be put again, conditionally on being absent.
  await s.put(["users", "ann"], "prefs", { theme: "blue", size: 1 }, { expectedRevision: 0 });
  assert.deepEqual((await s.get(["users", "ann"], "prefs"))?.value, { theme: "blue", size: 1 });
});

test("conditional put: two writers from the same revision, one wins, the other gets StoreRevisionConflictError naming the current revision", async () => {
  const s1 = newStore();
  const s2 = new PromptdStore({ client: e.rt, agent: e.agent, env: e.env, sessionId: s1.sessionId }); // another process, same store
  await s1.put(["counters"], "c", { n: 0 });
  const rev = (await s1.get(["counters"], "c"))!.revision;
  const results = await Promise.allSettled([
    s1.put(["counters"], "c", { n: 1, by: "one" }, { expectedRevision: rev }),
    s2.put(["counters"], "c", { n: 1, by: "two" }, { expectedRevision: rev }),
  ]);
  const won = results.filter((r) => r.status === "fulfilled");
  const lost = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
  assert.equal(won.length, 1);
  assert.equal(lost.length, 1);
  const err = lost[0]!.reason as unknown;
  assert.ok(err instanceof StoreRevisionConflictError, String(err));
  const now = (await s1.get(["counters"], "c"))!;
  assert.equal(err.expectedRevision, rev);
  assert.equal(err.currentRevision, now.revision);
  assert.equal(now.revision, rev + 1);
  console.log(`conditional put: one won (${String(now.value["by"])}), the other: ${err.message}`);
  // Absent means revision 0; an existing item refuses expectedRevision 0; the batch op carries it too.
  await assert.rejects(s1.put(["counters"], "c", { n: 9 }, { expectedRevision: 0 }), (x) => x instanceof StoreRevisionConflictError && x.currentRevision === now.revision);
  await assert.rejects(s1.batch([{ namespace: ["counters"], key: "c", value: { n: 9 }, expectedRevision: rev }]), StoreRevisionConflictError);
  await s1.batch([{ namespace: ["counters"], key: "c", value: { n: 2 }, expectedRevision: now.revision }]);
  assert.deepEqual((await s1.get(["counters"], "c"))?.value, { n: 2 });
  await assert.rejects(s1.delete(["counters"], "c", { expectedRevision: now.revision }), StoreRevisionConflictError);
});

test("a graph's store: nodes read and write memories through config.store", async () => {
  const store = newStore();
  const saver = new PromptdSaver({ client: e.rt, agent: e.agent, env: e.env, sessionPrefix: uniq("gs").replace(/-/g, "") + "-" });
  const St = Annotation.Root({ seen: Annotation<number>({ reducer: (_a, b) => b, default: () => 0 }) });
  const graph = new StateGraph(St)
    .addNode("remember", async (_s: typeof St.State, c: LangGraphRunnableConfig) => {
      const item = await c.store!.get(["memories", "u1"], "visits");
      const n = ((item?.value["n"] as number | undefined) ?? 0) + 1;
      await c.store!.put(["memories", "u1"], "visits", { n });
      return { seen: n };
    })
    .addEdge(START, "remember").addEdge("remember", END)
    .compile({ checkpointer: saver, store });
  assert.equal((await graph.invoke({}, { configurable: { thread_id: uniq("t") } })).seen, 1);
  assert.equal((await graph.invoke({}, { configurable: { thread_id: uniq("t") } })).seen, 2);
  assert.equal((await store.get(["memories", "u1"], "visits"))?.revision, 2);
  await saver.close();
});
