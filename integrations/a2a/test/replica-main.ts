// Replica B of the cross-process tests, in its own Node process (the SDK
// serializes writes per task within one process; across processes only the
// store can). Prints {"url"} once it serves; GET /stats answers the store's counts.

import { Client } from "@promptd/client";
import { PromptdTaskStore } from "../src/index.js";
import { LastWriteWinsStore } from "./naive.js";
import { NotesAgent, SlowSaves, replica } from "./helpers.js";

const env = (k: string): string => process.env[k] ?? "";
const client = new Client({ baseUrl: env("PROMPTD_URL"), token: env("PROMPTD_TOKEN") });
const inner = env("STORE") === "naive" ? new LastWriteWinsStore(client, env("BOARD")) : new PromptdTaskStore({ client, board: env("BOARD") });
const store = new SlowSaves(inner, Number(env("SAVE_DELAY_MS")));
const r = await replica(env("NAME"), store, new NotesAgent(env("NAME")), (app) => {
  app.get("/stats", (_req, res) => { res.json(inner instanceof PromptdTaskStore ? inner.stats : {}); });
});
console.log(JSON.stringify({ url: r.url }));
