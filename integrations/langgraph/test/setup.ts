// Shared test setup: a real promptd (via @promptd/testkit) with an agent and
// an env pointer, so sessions can be created.
import { Client } from "@promptd/client";
import { startPromptd, type PromptdProcess } from "@promptd/testkit";

export interface Env {
  pd: PromptdProcess;
  admin: Client;
  rt: Client;
  agent: string;
  env: string;
}

export async function publish(admin: Client, agent: string, env: string): Promise<void> {
  const v = await admin.createVersion(agent, { baseVersion: 0, config: { system: "You are a graph." }, message: "test" });
  await admin.putEnv(agent, env, v.version, 0);
}

export async function startEnv(agent = "graph-agent", env = "prod"): Promise<Env> {
  const pd = await startPromptd();
  const admin = new Client({ baseUrl: pd.url, token: pd.adminToken });
  const rt = new Client({ baseUrl: pd.url, token: pd.runtimeToken });
  await publish(admin, agent, env);
  return { pd, admin, rt, agent, env };
}
