// The Session interface on a real promptd: round-trips of every kind of
// item, limit, pop, clear, and what promptd's own view of the turns is.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import type { AgentInputItem } from "@openai/agents";
import { SessionConflictError } from "../src/index.js";
import { asJSON, promptd, session, uniq, agentOn, FakeModel, replica, kinds, type Promptd } from "./harness.js";

let pd: Promptd;
before(async () => { pd = await promptd(); });
after(() => pd.proc.stop());

const sample: AgentInputItem[] = [
  { type: "message", role: "system", content: "Be brief." },
  { type: "message", role: "user", content: "What is 2 + 3?" },
  { role: "user", content: [{ type: "input_text", text: "parts, " }, { type: "input_text", text: "too" }] },
  { type: "function_call", id: "fc_1", callId: "call_1", name: "add", arguments: "{\"a\":2,\"b\":3}", status: "completed", providerData: { k: [1, 2] } },
  { type: "function_call_result", callId: "call_1", name: "add", status: "completed", output: { type: "text", text: "5" } },
  { type: "reasoning", id: "rs_1", content: [{ type: "input_text", text: "adding" }] },
  { type: "message", role: "assistant", status: "completed", id: "msg_1", content: [{ type: "output_text", text: "It is 5." }] },
];

test("items of every kind come back exactly, with limit, from any session object", async () => {
  const id = uniq("s");
  const s = session(pd, id);
  assert.deepEqual(await s.getItems(), []);
  await s.addItems(sample.slice(0, 3));
  await s.addItems(sample.slice(3));
  assert.deepEqual(await s.getItems(), asJSON(sample));
  assert.deepEqual(await s.getItems(2), asJSON(sample.slice(-2)));
  assert.deepEqual(await s.getItems(100), asJSON(sample));
  assert.deepEqual(await s.getItems(0), []);
  // Another object (another replica) reads the same history.
  assert.deepEqual(await session(pd, id).getItems(), asJSON(sample));
  assert.equal(await s.getSessionId(), id);

  // promptd's own view: one turn per item, in chat roles, the tool turn answering its call.
  const turns = (await pd.runtime.getSession(id)).turns ?? [];
  assert.deepEqual(turns.map((t) => t.role), ["system", "user", "user", "assistant", "tool", "assistant", "assistant"]);
  assert.equal(turns[2]?.content, "parts, too");
  assert.equal(turns[3]?.tool_calls?.[0]?.id, "call_1");
  assert.equal(turns[4]?.tool_call_id, "call_1");
  assert.equal(turns[4]?.content, "5");
  assert.equal(turns[6]?.content, "It is 5.");
});

test("popItem removes the newest item for every reader; clearSession empties the history", async () => {
  const id = uniq("s");
  const s = session(pd, id);
  assert.equal(await s.popItem(), undefined);
  await s.addItems(sample);
  assert.deepEqual(await s.popItem(), asJSON(sample.at(-1)));
  assert.deepEqual(await session(pd, id).popItem(), asJSON(sample.at(-2)));
  assert.deepEqual(await s.getItems(), asJSON(sample.slice(0, -2)));
  assert.deepEqual(await session(pd, id).getItems(), asJSON(sample.slice(0, -2)));

  await s.clearSession();
  assert.deepEqual(await s.getItems(), []);
  assert.deepEqual(await session(pd, id).getItems(), []);
  assert.equal(await s.popItem(), undefined);
  await s.addItems([sample[1]!]);
  assert.deepEqual(await session(pd, id).getItems(), asJSON([sample[1]]));
  // Nothing was deleted in promptd: 7 items, 2 pops, a clear, 1 item.
  assert.equal((await pd.runtime.getSession(id)).turns?.length, 11);
});

test("concurrent pops on three replicas remove three distinct items", async () => {
  const id = uniq("s");
  await session(pd, id).addItems(sample.slice(0, 5));
  const popped = await Promise.all([session(pd, id).popItem(), session(pd, id).popItem(), session(pd, id).popItem()]);
  const sortKey = (v: unknown): string => JSON.stringify(v);
  assert.deepEqual(popped.map(sortKey).sort(), sample.slice(2, 5).map((i) => sortKey(asJSON(i))).sort());
  assert.deepEqual(await session(pd, id).getItems(), asJSON(sample.slice(0, 2)));
});

test("an append after another writer changed the history is refused and writes nothing", async () => {
  const id = uniq("s");
  const a = session(pd, id);
  const b = session(pd, id);
  await a.addItems(sample.slice(0, 2));
  assert.equal((await a.getItems()).length, 2); // a has seen revision 1
  await b.addItems([sample[2]!]); // b never read: a blind append, at the current revision
  await assert.rejects(a.addItems([sample[6]!]), (err: unknown) => {
    assert.ok(err instanceof SessionConflictError);
    assert.equal(err.expectedRevision, 1);
    assert.equal(err.currentRevision, 2);
    return true;
  });
  assert.deepEqual(await b.getItems(), asJSON(sample.slice(0, 3)));
  // Having read again, a writes.
  await a.getItems();
  await a.addItems([sample[6]!]);
  assert.deepEqual(await b.getItems(), asJSON([...sample.slice(0, 3), sample[6]]));
});

test("a run through the object does not make the object's own next append a conflict", async () => {
  const id = uniq("s");
  const s = session(pd, id);
  assert.deepEqual(await s.getItems(), []);
  await replica().run(agentOn(new FakeModel("m")), "hi", { session: s });
  await s.addItems([sample[0]!]);
  assert.equal((await session(pd, id).getItems()).length, 5);
});

test("a clear that lands before a run's append makes the append fail, not resurrect the history", async () => {
  const id = uniq("s");
  const a = session(pd, id);
  await a.addItems(sample.slice(0, 2));
  await a.getItems();
  await session(pd, id).clearSession();
  await assert.rejects(a.addItems([sample[6]!]), SessionConflictError);
  assert.deepEqual(await session(pd, id).getItems(), []);
});

test("run() through the SDK's runner stores the turn's items and the next run's model gets them", async () => {
  const id = uniq("s");
  const model = new FakeModel("m");
  const r1 = await replica().run(agentOn(model), "add 2 and 3", { session: session(pd, id) });
  assert.equal(r1.finalOutput, "m saw 1 user messages");
  const stored = await session(pd, id).getItems();
  assert.deepEqual(kinds(stored), ["user", "function_call", "function_call_result", "assistant"]);
  const r2 = await replica().run(agentOn(model), "again", { session: session(pd, id) });
  assert.equal(r2.finalOutput, "m saw 2 user messages");
  // The second run's first model call got the stored history, then its input.
  assert.deepEqual(model.inputs[2]?.slice(0, 4), stored.map((i) => asJSON(i)) as AgentInputItem[]);
  assert.equal((await session(pd, id).getItems()).length, 8);
});

test("turns another promptd client wrote are read as the equivalent items, and a run continues from them", async () => {
  const id = uniq("s");
  const s = session(pd, id);
  await s.getSessionId(); // creates the session
  await pd.runtime.appendTurns(id, [
    { role: "user", content: "What is 2 + 3?" },
    { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "add", arguments: "{\"a\":2,\"b\":3}" } }] },
    { role: "tool", content: "5", tool_call_id: "c1", name: "add" },
    { role: "assistant", content: "It is 5." },
  ], { expectedRevision: 0 });
  assert.deepEqual(await s.getItems(), [
    { type: "message", role: "user", content: "What is 2 + 3?" },
    { type: "function_call", callId: "c1", status: "completed", name: "add", arguments: "{\"a\":2,\"b\":3}" },
    { type: "function_call_result", callId: "c1", name: "add", status: "completed", output: { type: "text", text: "5" } },
    { type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "It is 5." }] },
  ]);
  const r = await replica().run(agentOn(new FakeModel("m")), "and 4 + 4?", { session: s });
  assert.equal(r.finalOutput, "m saw 2 user messages");
  assert.equal((await session(pd, id).getItems()).length, 8);
});
