// A change on instance A reaching a LocalPrompts on instance B (MariaDB +
// Redis, as ./scripts/test.sh's services provide: PROMPTD_TEST_MYSQL_DSN,
// PROMPTD_TEST_REDIS_URL): pointer switches, percent changes, rollbacks.
// Prints p50/p99/max per kind.
//   source scripts/lib/services.sh; start_services; PROMPTD_BIN=... node sdk/typescript/bench/propagation.mjs
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { LocalPrompts } from "../dist/src/index.js";
import { startPromptd, publish } from "../dist/test/harness.js";

const dsn = process.env.PROMPTD_TEST_MYSQL_DSN;
const redis = process.env.PROMPTD_TEST_REDIS_URL;
if (!dsn || !redis) {
  console.error("propagation: PROMPTD_TEST_MYSQL_DSN and PROMPTD_TEST_REDIS_URL are required");
  process.exit(1);
}
// user:pw@tcp(host:port)/db?params -> a fresh database for this run
const m = /^([^:]+):([^@]*)@tcp\(([^:]+):(\d+)\)\/([^?]*)(\?.*)?$/.exec(dsn);
if (!m) throw new Error("cannot parse PROMPTD_TEST_MYSQL_DSN");
const [, user, pw, host, port, , params = ""] = m;
const db = "promptd_ts_" + randomBytes(4).toString("hex");
const sql = (q) => execFileSync("mariadb", ["-h", host, "-P", port, "-u", user, `-p${pw}`, "-e", q]);
sql(`CREATE DATABASE \`${db}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
const vars = { PROMPTD_MYSQL_DSN: `${user}:${pw}@tcp(${host}:${port})/${db}${params}`, PROMPTD_REDIS_URL: redis, PROMPTD_KEY_PREFIX: db };
const a = await startPromptd({ ...vars, PROMPTD_INSTANCE_ID: "A" });
const b = await startPromptd({ ...vars, PROMPTD_INSTANCE_ID: "B" });
const pct = (xs, p) => { const s = [...xs].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]; };
try {
  const agent = "prop";
  const env = "prod";
  let latest = await publish(a.admin, agent, env, { system: "v1" });
  let evAt = 0;
  const lp = await new LocalPrompts({ client: b.runtime, agents: [agent], exposures: false, pollMs: 60_000, onEvent: () => { if (!evAt) evAt = performance.now(); } }).start();
  for (let i = 0; i < 100 && !lp.streaming; i++) await new Promise((r) => setTimeout(r, 20));
  const seen = (pred) => new Promise((res) => { const t0 = performance.now(); lp.onUpdate((bd) => { if (pred(bd.agents[agent]?.envs[env])) res(performance.now() - t0); }); });
  // onUpdate listeners accumulate; keep it simple with one active predicate at a time.
  let current = null;
  const eventMs = [];
  lp.onUpdate((bd) => { if (current && current.pred(bd.agents[agent]?.envs[env])) { if (evAt) eventMs.push(evAt - current.t0); current.res(performance.now() - current.t0); current = null; } });
  const measure = async (pred, act) => {
    const p = new Promise((res) => { current = { pred, res, t0: 0 }; });
    evAt = 0;
    current.t0 = performance.now();
    await act();
    return Promise.race([p, new Promise((r) => setTimeout(() => r(Infinity), 5000))]);
  };
  void seen;
  const N = Number(process.env.N ?? 50);
  const switches = [], percents = [], rollbacks = [];
  const vs = [latest];
  for (let i = 0; i < 4; i++) vs.push((latest = (await a.admin.createVersion(agent, { base_version: latest, config: { system: `v${latest + 1}` } })).version));
  for (let i = 0; i < N; i++) {
    const e = await a.admin.getEnv(agent, env);
    const to = vs[(vs.indexOf(e.version) + 1) % vs.length];
    switches.push(await measure((x) => x?.version === to, () => a.admin.putEnv(agent, env, to, e.revision)));
  }
  for (let r = 0; r < Math.max(1, Math.floor(N / 10)); r++) {
    const e = await a.admin.getEnv(agent, env);
    const cand = vs.find((v) => v !== e.version && !e.revoked.includes(v));
    if (cand === undefined) break;
    let rel = await a.admin.createRelease(agent, env, { candidate_version: cand, percent: 1 });
    for (let i = 0; i < 9; i++) {
      const p = 5 + i * 10;
      const bp = p * 100;
      rel = await a.admin.setReleasePercent(rel.id, p, rel.revision).then(async () => a.admin.getRelease(rel.id)).catch(async () => a.admin.getRelease(rel.id));
      void bp;
    }
    // measure a percent change
    const cur = await a.admin.getRelease(rel.id);
    percents.push(await measure((x) => x?.release?.basis_points === 9900, () => a.admin.setReleasePercent(rel.id, 99, cur.revision)));
    const cur2 = await a.admin.getRelease(rel.id);
    rollbacks.push(await measure((x) => x?.release === null && x?.revoked.includes(cand), () => a.admin.transitionRelease(rel.id, "rollback", { expected_revision: cur2.revision, reason: "bench" })));
    await a.admin.request({ method: "DELETE", path: `/v1/agents/${agent}/envs/${env}/revocations/${cand}` });
  }
  const line = (name, xs) => console.log(`${name.padEnd(16)} n=${xs.length}  p50 ${pct(xs, 50).toFixed(1)} ms  p99 ${pct(xs, 99).toFixed(1)} ms  max ${Math.max(...xs).toFixed(1)} ms`);
  line("pointer switch", switches);
  line("percent change", percents);
  line("rollback", rollbacks);
  line("event on B (all)", eventMs);
  await lp.close();
} finally {
  await a.stop();
  await b.stop();
  sql(`DROP DATABASE IF EXISTS \`${db}\``);
}
