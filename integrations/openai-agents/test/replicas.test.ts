// One conversation continued by two "replicas": each has its own Client,
// Runner, PromptdSession object and model, and only promptd in common.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { promptd, session, uniq, agentOn, FakeModel, replica, userTexts, kinds, asJSON, type Promptd } from "./harness.js";

let pd: Promptd;
before(async () => { pd = await promptd(); });
after(() => pd.proc.stop());

test("a conversation run on replica A, then B, then A again continues the same history", async () => {
  const id = uniq("s");
  const [runnerA, runnerB] = [replica(), replica()];
  const [sa, sb] = [session(pd, id, "replica-a"), session(pd, id, "replica-b")];
  const [ma, mb] = [new FakeModel("A"), new FakeModel("B")];

  assert.equal(await sa.withHold(async () => String((await runnerA.run(agentOn(ma), "one", { session: sa })).finalOutput)), "A saw 1 user messages");
  assert.equal(await sb.withHold(async () => String((await runnerB.run(agentOn(mb), "two", { session: sb })).finalOutput)), "B saw 2 user messages");
  // A's object reads on from what it had (the turns after its last seq) and sees B's turn.
  assert.equal(await sa.withHold(async () => String((await runnerA.run(agentOn(ma), "three", { session: sa })).finalOutput)), "A saw 3 user messages");

  assert.deepEqual(userTexts(mb.inputs[0]!), ["one", "two"], "B's model got A's turn");
  assert.deepEqual(userTexts(ma.inputs[2]!), ["one", "two", "three"], "A's model got B's turn");
  const stored = await session(pd, id).getItems();
  assert.equal(stored.length, 12);
  assert.deepEqual(kinds(stored.slice(4, 8)), ["user", "function_call", "function_call_result", "assistant"]);
  assert.deepEqual(await sa.getItems(), await sb.getItems());
  assert.deepEqual(asJSON(await sb.getItems()), asJSON(stored));
});

test("a replica that died holding the session: the next one waits for its lease to run out, then continues", async () => {
  const id = uniq("s");
  await replica().run(agentOn(new FakeModel("A")), "one", { session: session(pd, id, "replica-a") });
  // Replica A takes the lease and dies: nobody renews nor releases it.
  await pd.runtime.acquireSessionLease(id, { holder: "replica-a", ttlMs: 1000 });
  const sb = session(pd, id, "replica-b");
  const started = Date.now();
  const out = await sb.withHold(async () => String((await replica().run(agentOn(new FakeModel("B")), "two", { session: sb })).finalOutput), { waitMs: 10_000 });
  assert.equal(out, "B saw 2 user messages");
  assert.ok(Date.now() - started >= 500, "B waited for the dead holder's lease");
  assert.deepEqual(userTexts(await session(pd, id).getItems()), ["one", "two"]);
});

test("a long history is read page by page, and on from the last seq by an object that read it before", async () => {
  const id = uniq("s");
  const items = (from: number, n: number): { type: "message"; role: "user"; content: string }[] =>
    Array.from({ length: n }, (_, i) => ({ type: "message", role: "user", content: `m${String(from + i)}` }));
  const s = session(pd, id);
  await s.addItems(items(0, 320)); // 4 appends of up to 100 turns
  assert.equal((await s.getItems()).length, 320);
  await session(pd, id).addItems(items(320, 300));
  const all = await session(pd, id).getItems(); // 620 turns: two pages
  assert.deepEqual(all.map((i) => (i as { content: string }).content), items(0, 620).map((i) => i.content));
  assert.deepEqual(await s.getItems(), all);
  assert.deepEqual(await s.getItems(3), all.slice(-3));
});
