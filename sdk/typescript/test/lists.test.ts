// Every list method of Client against a real promptd: the keys of each item the
// server answers are the members the method's declared answer gives its items
// (read with the TypeScript compiler from src/client.ts, see declared.ts): no key
// the type does not name, and every member the type requires (not `?`) present.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startPromptd, publish, uniq, type Promptd } from "./harness.js";
import { listItemMembers } from "./declared.js";

let pd: Promptd;
before(async () => { pd = await startPromptd(); });
after(async () => { await pd?.stop(); });

/** What the answer's items and the declared item type disagree on. */
function mismatch(method: string, items: readonly unknown[]): string[] {
  const declared = listItemMembers().get(method);
  if (!declared) return [`Client.${method}: not a list method of Client`];
  if (items.length === 0) return [`Client.${method}: the answer has no items to check`];
  const out = new Set<string>();
  for (const item of items) {
    const keys = new Set(Object.keys(item as Record<string, unknown>));
    for (const k of keys) if (!declared.has(k)) out.add(`${method}: the answer has ${k}, the declared item type has no such member`);
    for (const [k, m] of declared) if (!m.optional && !keys.has(k)) out.add(`${method}: the declared item type requires ${k}, the answer has none`);
  }
  return [...out].sort();
}

test("lists_everyListMethodsAnswer_hasTheKeysItsDeclaredItemTypeNames", async () => {
  const c = pd.admin;
  const agent = uniq("lk");
  const v1 = await publish(c, agent, "prod", { system: "one" });
  const v2 = (await c.createVersion(agent, { baseVersion: v1, config: { system: "two" } })).version;
  const rel = await c.createRelease(agent, "prod", { candidateVersion: v2, percent: 10 });
  const s = await c.createSession({ agent, env: "prod", userId: "u-1", metadata: { k: "v" } });
  const held = await c.createSession({ agent, env: "prod" });
  await c.acquireSessionLease(held.session_id, { holder: "w" }); // an item with its lease
  const board = uniq("b");
  await c.createRecord(board, { id: "r1", payload: { n: 1 }, dedupeKey: "d1" });
  await c.createRecord(board, { id: "r2", payload: { n: 2 } });
  assert.ok(await c.claimNext(board, { holder: "w" }));
  const it = await c.registerIntent({ holder: "w", scope: { agents: [agent] }, description: "d" });
  const frag = uniq("f");
  await c.createFragmentVersion(frag, { baseVersion: 0, fragment: { text: "Be kind." }, message: "m" });

  const answers: Record<string, readonly unknown[]> = {
    listVersions: (await c.listVersions(agent)).items,
    listReleases: (await c.listReleases(agent, "prod")).items,
    listSessions: (await c.listSessions({ agent })).items,
    listRecords: (await c.listRecords(board)).items,
    listIntents: (await c.listIntents({ agent })).items,
    listFragments: (await c.listFragments({ limit: 500 })).items.filter((f) => f.name === frag),
    listFragmentVersions: (await c.listFragmentVersions(frag)).items,
  };
  assert.deepEqual(Object.keys(answers).sort(), [...listItemMembers().keys()].sort(), "a list method of Client is not called here");
  assert.deepEqual(new Set((answers["listSessions"] as { session_id: string }[]).map((x) => x.session_id)), new Set([s.session_id, held.session_id]));
  assert.deepEqual((answers["listReleases"] as { id: string }[]).map((x) => x.id), [rel.id]);
  assert.ok((answers["listIntents"] as { id: string }[]).some((x) => x.id === it.id));
  assert.equal(answers["listFragments"]?.length, 1);
  assert.deepEqual(Object.entries(answers).flatMap(([m, items]) => mismatch(m, items)), []);
});

test("lists_mismatch_reportsExtraAndMissingKeys", () => {
  // The check is able to fail: an item with a key the type lacks, and without one it requires.
  const declared = listItemMembers().get("listRecords") ?? new Map<string, unknown>();
  assert.ok(declared.has("payload"));
  const item: Record<string, unknown> = { ...Object.fromEntries([...declared.keys()].map((k) => [k, null])), extra: 1 };
  delete item["payload"];
  assert.deepEqual(mismatch("listRecords", [item]), [
    "listRecords: the answer has extra, the declared item type has no such member",
    "listRecords: the declared item type requires payload, the answer has none",
  ]);
});
