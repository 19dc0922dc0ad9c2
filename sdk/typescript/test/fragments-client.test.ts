// The fragment routes through the client against a real promptd: versions (a
// stale base is VersionConflictError with latest_version), a check and a
// proposal that write nothing, env pointers (a stale revision is
// RevisionConflictError), the list and used-by of an agent version that pins one.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { ForbiddenError, NotFoundError, PromptdError, RevisionConflictError, VersionConflictError, type FragmentSummary } from "../src/index.js";
import { startPromptd, uniq, type Promptd } from "./harness.js";

let pd: Promptd;
before(async () => { pd = await startPromptd(); });
after(async () => { await pd?.stop(); });

test("fragments_versionsEnvsUsedBy", async () => {
  const name = uniq("frag"), agent = uniq("agent");
  const c = pd.admin, rt = pd.runtime;
  const text = "Never share secrets of {{company}}.";
  const v1 = await c.createFragmentVersion(name, { baseVersion: 0, fragment: { text }, variables: { company: { default: "ACME" } }, message: "first" });
  assert.equal(v1.version, 1);
  assert.equal(v1.fragment.text, text);
  assert.deepEqual(v1.variables, { company: { default: "ACME" } });
  assert.match(v1.content_hash, /^sha256:[0-9a-f]{64}$/);

  await assert.rejects(c.createFragmentVersion(name, { baseVersion: 0, fragment: { text: "x" } }),
    (e: unknown) => e instanceof VersionConflictError && e.fields["latest_version"] === 1);
  const chk = await c.checkFragmentVersion(name, { baseVersion: 1, fragment: { text }, variables: { company: { default: "ACME" } } });
  assert.equal(chk.dry_run, true);
  assert.equal(chk.version, 2);
  assert.equal(chk.content_hash, v1.content_hash);

  const e = await c.putFragmentEnv(name, "prod", 1, 0);
  assert.deepEqual([e.env, e.version, e.revision], ["prod", 1, 1]);
  await assert.rejects(c.putFragmentEnv(name, "prod", 1, 0), RevisionConflictError);
  await assert.rejects(rt.putFragmentEnv(name, "prod", 1, 1), ForbiddenError); // writes are admin-only
  const got = await rt.getFragmentEnv(name, "prod");
  assert.deepEqual([got.version, got.revision], [1, 1]);
  await assert.rejects(rt.getFragmentEnv(name, "staging"), (err: unknown) => err instanceof PromptdError && err.status === 404);

  await c.createVersion(agent, { baseVersion: 0, config: { system: "You help. {{> safety}}", fragments: { safety: { name, env: "prod" } } } });
  const prop = await c.createFragmentVersion(name, { baseVersion: 1, fragment: { text: "Never share anything." }, propose: true });
  assert.equal(prop.dry_run, true);
  assert.deepEqual(prop.proposal, [{ agent, version: 1, alias: "safety", env: "prod" }]);
  assert.deepEqual((await rt.listFragmentVersions(name)).items.map((v) => v.version), [1]); // the proposal wrote nothing

  const used = await rt.fragmentUsedBy(name, 1);
  assert.deepEqual(used.items, [{ agent, version: 1, envs: [] }]);
  assert.equal((await rt.getFragmentVersion(name, 1)).content_hash, v1.content_hash);
  await assert.rejects(rt.getFragmentVersion(name, 9), (err: unknown) => err instanceof NotFoundError || (err instanceof PromptdError && err.status === 404));

  const msgs = await c.createFragmentVersion(name + "m", { baseVersion: 0, fragment: { messages: [{ role: "user", content: "hi" }] } });
  assert.deepEqual(msgs.fragment, { messages: [{ role: "user", content: "hi" }] });

  const listed = new Map<string, FragmentSummary>();
  let cursor: string | undefined;
  for (;;) {
    const page = await rt.listFragments(cursor === undefined ? { limit: 1 } : { limit: 1, cursor });
    for (const f of page.items) listed.set(f.name, f);
    if (page.next === null) break;
    cursor = page.next;
  }
  assert.deepEqual(listed.get(name), { name, latest_version: 1, latest_content_hash: v1.content_hash, envs: { prod: 1 } });
  assert.equal(listed.get(name + "m")?.latest_version, 1);
});
