// Two promptd instances on one MariaDB + Redis (the test script's
// PROMPTD_TEST_MYSQL_DSN / PROMPTD_TEST_REDIS_URL, a database of its own):
// a pointer switch, a percent change and a rollback made on A reach a
// LocalPrompts following B. Fails (not skips) when PROMPTD_REQUIRE_INTEGRATION=1
// and the services are missing.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { LocalPrompts, type BundleEnv } from "../src/index.js";
import { startPromptd, publish, requireIntegration, type Promptd } from "./harness.js";

const dsn = process.env["PROMPTD_TEST_MYSQL_DSN"];
const redis = process.env["PROMPTD_TEST_REDIS_URL"];
const cleanup: (() => Promise<void> | void)[] = [];
after(async () => { for (const f of cleanup.reverse()) await f(); });

async function twoInstances(): Promise<[Promptd, Promptd]> {
  const m = /^([^:]+):([^@]*)@tcp\(([^:]+):(\d+)\)\/([^?]*)(\?.*)?$/.exec(dsn ?? "");
  if (!m) throw new Error("cannot parse PROMPTD_TEST_MYSQL_DSN");
  const [, user = "", pw = "", host = "", port = "", , params = ""] = m;
  const db = "promptd_ts_" + randomBytes(4).toString("hex");
  const sql = (q: string): void => { execFileSync("mariadb", ["-h", host, "-P", port, "-u", user, `-p${pw}`, "-e", q]); };
  sql(`CREATE DATABASE \`${db}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  cleanup.push(() => { sql(`DROP DATABASE IF EXISTS \`${db}\``); });
  const vars = { PROMPTD_MYSQL_DSN: `${user}:${pw}@tcp(${host}:${port})/${db}${params}`, PROMPTD_REDIS_URL: redis ?? "", PROMPTD_KEY_PREFIX: db };
  const a = await startPromptd({ ...vars, PROMPTD_INSTANCE_ID: "A" });
  cleanup.push(() => a.stop());
  const b = await startPromptd({ ...vars, PROMPTD_INSTANCE_ID: "B" });
  cleanup.push(() => b.stop());
  return [a, b];
}

test("LocalPrompts_onInstanceB_seesPointerSwitchPercentChangeAndRollbackMadeOnA", { skip: !dsn || !redis ? (requireIntegration ? false : "PROMPTD_TEST_MYSQL_DSN / PROMPTD_TEST_REDIS_URL not set") : false }, async () => {
  assert.ok(dsn && redis, "PROMPTD_REQUIRE_INTEGRATION=1 but PROMPTD_TEST_MYSQL_DSN / PROMPTD_TEST_REDIS_URL are not set");
  const [a, b] = await twoInstances();
  const agent = "cluster";
  const env = "prod";
  const v1 = await publish(a.admin, agent, env, { system: "v1" });
  const v2 = (await a.admin.createVersion(agent, { baseVersion: v1, config: { system: "v2" } })).version;
  const lp = await new LocalPrompts({ client: b.runtime, agents: [agent], exposures: false, pollMs: 60_000 }).start();
  cleanup.push(() => lp.close());
  const until = (pred: (e: BundleEnv | undefined) => boolean): Promise<void> => new Promise((res, rej) => {
    const t = setTimeout(() => { rej(new Error("not seen on B within 5 s")); }, 5000);
    lp.onUpdate((bd) => { if (pred(bd.agents[agent]?.envs[env])) { clearTimeout(t); res(); } });
  });

  let seen = until((e) => e?.version === v2);
  await a.admin.putEnv(agent, env, v2, (await a.admin.getEnv(agent, env)).revision);
  await seen;
  assert.equal((await lp.resolve(agent, env, { userId: "u" })).version, v2);

  seen = until((e) => e?.release?.basis_points === 1000);
  const rel = await a.admin.createRelease(agent, env, { candidateVersion: v1, percent: 10 });
  await seen;
  seen = until((e) => e?.release?.basis_points === 6000);
  await a.admin.setReleasePercent(rel.id, 60, rel.revision);
  await seen;

  seen = until((e) => e?.release === null && e.revoked.includes(v1));
  await a.admin.transitionRelease(rel.id, "rollback", { expectedRevision: (await a.admin.getRelease(rel.id)).revision, reason: "test" });
  await seen;
  for (let i = 0; i < 50; i++) assert.equal((await lp.resolve(agent, env, { userId: `u${i}` })).version, v2, "rolled back: everyone on the baseline");
});
