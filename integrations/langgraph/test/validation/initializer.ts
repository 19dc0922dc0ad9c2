// The CheckpointSaverTestInitializer for LangGraph's own conformance suite
// (@langchain/langgraph-checkpoint-validation), run unmodified by its CLI:
// validate-checkpointer ./dist/test/validation/initializer.js (npm run
// test:validation). beforeAll starts a real promptd; every checkpointer gets
// its own session prefix, so instances never see each other's threads.
import type { CheckpointSaverTestInitializer } from "@langchain/langgraph-checkpoint-validation";
import { uniq } from "@promptd/testkit";
import { PromptdSaver } from "../../src/index.js";
import { startEnv, type Env } from "../setup.js";

let env: Env | undefined;

const initializer: CheckpointSaverTestInitializer<PromptdSaver> = {
  checkpointerName: "@promptd/langgraph",
  beforeAllTimeout: 120_000,
  async beforeAll() {
    env = await startEnv();
  },
  async afterAll() {
    await env?.pd.stop();
  },
  createCheckpointer() {
    if (!env) throw new Error("beforeAll did not start promptd");
    return new PromptdSaver({ client: env.rt, agent: env.agent, env: env.env, sessionPrefix: uniq("v").replace(/-/g, "") + "-", idleReleaseMs: 500 });
  },
  async destroyCheckpointer(saver) {
    await saver.close();
  },
};

export default initializer;
