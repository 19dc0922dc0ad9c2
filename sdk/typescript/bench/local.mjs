// Local evaluation cost: LocalPrompts resolve/assemble per call vs a bare
// Map lookup of the same bytes (same run) vs an HTTP assemble.
//   npm run build && PROMPTD_BIN=... node bench/local.mjs
import { LocalPrompts, assemblePlain } from "../dist/src/index.js";
import { startPromptd, publish } from "../dist/test/harness.js";

const pd = await startPromptd();
try {
  const agent = "bench-local";
  await publish(pd.admin, agent, "prod", {
    system: "You are {{persona}} for {{company}}.",
    skills: [{ name: "refunds", instructions: "Refunds within {{refund_days}} days." }],
    memory: ["Customer prefers email."],
    model: { name: "gpt-4o", temperature: 0.2 },
    variables: { persona: { required: true }, company: { default: "ACME" }, refund_days: { default: "30" } },
  });
  const vars = { persona: "Ada" };
  const lp = await new LocalPrompts({ client: pd.runtime, agents: [agent], exposures: false }).start();
  const bytes = JSON.stringify((await pd.runtime.assemble(agent, "prod", { userId: "u", variables: vars })).body);
  const map = new Map([[`${agent}/prod/u`, bytes]]);

  const time = async (n, f) => {
    for (let i = 0; i < Math.min(n, 1000); i++) await f(i); // warm
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) await f(i);
    return Number(process.hrtime.bigint() - t0) / n;
  };
  const timeSync = (n, f) => {
    for (let i = 0; i < Math.min(n, 1000); i++) f(i);
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) f(i);
    return Number(process.hrtime.bigint() - t0) / n;
  };
  const N = 50_000;
  let sink = 0;
  const mapNs = timeSync(N, (i) => { sink += map.get(i >= 0 ? `${agent}/prod/u` : "").length; });
  const resolveNs = timeSync(N, (i) => { sink += lp.pick(agent, "prod", { userId: `u${i & 1023}` }).version; });
  const resolveAsyncNs = await time(N, async (i) => { sink += (await lp.resolve(agent, "prod", { userId: `u${i & 1023}` })).version; });
  const assembleSyncNs = timeSync(N, (i) => { sink += assemblePlain(lp.pick(agent, "prod", { userId: `u${i & 1023}` }), vars).messages.length; });
  const assembleNs = await time(N, async (i) => { sink += (await lp.assemble(agent, "prod", { userId: `u${i & 1023}`, variables: vars })).messages.length; });
  const httpNs = await time(300, async (i) => { sink += (await pd.runtime.assemble(agent, "prod", { userId: `u${i}`, variables: vars })).body.messages.length; });
  const f = (ns) => (ns >= 1e6 ? `${(ns / 1e6).toFixed(2)} ms` : ns >= 1e3 ? `${(ns / 1e3).toFixed(2)} µs` : `${ns.toFixed(0)} ns`);
  console.log(`Map.get of the assembled bytes     ${f(mapNs)}/op`);
  console.log(`LocalPrompts.pick (sync resolve)   ${f(resolveNs)}/op   ${(resolveNs / mapNs).toFixed(1)}x Map`);
  console.log(`LocalPrompts.resolve (async)       ${f(resolveAsyncNs)}/op   ${(resolveAsyncNs / mapNs).toFixed(1)}x Map`);
  console.log(`pick + assemblePlain (sync)        ${f(assembleSyncNs)}/op   ${(assembleSyncNs / mapNs).toFixed(1)}x Map`);
  console.log(`LocalPrompts.assemble (async)      ${f(assembleNs)}/op   ${(assembleNs / mapNs).toFixed(1)}x Map`);
  console.log(`HTTP assemble (same process host)  ${f(httpNs)}/op   ${(httpNs / assembleNs).toFixed(0)}x local assemble`);
  await lp.close();
  if (sink < 0) console.log(sink);
} finally {
  await pd.stop();
}
