// Starts real promptd processes for the tests through @promptd/testkit
// (integrations/testkit), with an admin and a runtime client each.

import { startPromptd as startProcess } from "@promptd/testkit";
import { Client } from "../src/index.js";
import type { PromptConfig } from "../src/index.js";

export { ADMIN_SECRET, RUNTIME_SECRET, promptdBinary, repoRoot, requireIntegration, uniq } from "@promptd/testkit";

export interface Promptd {
  url: string;
  admin: Client;
  runtime: Client;
  stop(): Promise<void>;
  /** SIGSTOP / SIGCONT. */
  pause(): void;
  resume(): void;
  log(): string;
}

/** A promptd process (@promptd/testkit) with an admin and a runtime client. */
export async function startPromptd(vars: Record<string, string> = {}): Promise<Promptd> {
  const p = await startProcess(vars);
  return {
    url: p.url,
    admin: new Client({ baseUrl: p.url, token: p.adminToken }),
    runtime: new Client({ baseUrl: p.url, token: p.runtimeToken }),
    log: p.log,
    pause: p.pause,
    resume: p.resume,
    stop: p.stop,
  };
}

/** Publishes config as the agent's next version and points env at it. */
export async function publish(admin: Client, agent: string, env: string, config: PromptConfig): Promise<number> {
  let base = 0;
  try { base = (await admin.listVersions(agent)).items[0]?.version ?? 0; } catch { base = 0; }
  const v = await admin.createVersion(agent, { baseVersion: base, config, message: "test" });
  let rev = 0;
  try { rev = (await admin.getEnv(agent, env)).revision; } catch { rev = 0; }
  await admin.putEnv(agent, env, v.version, rev);
  return v.version;
}
