// Two A2A server replicas sharing their tasks through one promptd board.
//
//   PROMPTD_URL=http://127.0.0.1:8080 PROMPTD_ADMIN_TOKEN=... PROMPTD_TOKEN=... npm run example
//
// A client starts a task on replica A (it stops at input-required), then asks
// replica B about it and answers it there: B finds the task A made and completes it.

import type { AddressInfo } from "node:net";
import express from "express";
import { AgentCard, Message, TaskState, type Task } from "@a2a-js/sdk";
import { AgentEvent, DefaultRequestHandler, type AgentExecutor } from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import { ClientFactory } from "@a2a-js/sdk/client";
import { Client } from "@promptd/client";
import { PromptdTaskStore, defineTaskBoard } from "@promptd/a2a";

const env = (k: string): string => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};
const board = "a2a-example";

// The agent: a first message asks a question, the answer completes the task.
const agent = (replica: string): AgentExecutor => ({
  execute: (rc, bus) => {
    const status = (state: TaskState, text?: string): Task["status"] => ({
      state, timestamp: new Date().toISOString(),
      message: text === undefined ? undefined : Message.fromJSON({ messageId: crypto.randomUUID(), role: "ROLE_AGENT", taskId: rc.taskId, contextId: rc.contextId, parts: [{ text }] }),
    });
    if (rc.task === undefined) {
      bus.publish(AgentEvent.task({ id: rc.taskId, contextId: rc.contextId, status: status(TaskState.TASK_STATE_SUBMITTED), history: [rc.userMessage], artifacts: [], metadata: { startedOn: replica } }));
      bus.publish(AgentEvent.statusUpdate({ taskId: rc.taskId, contextId: rc.contextId, status: status(TaskState.TASK_STATE_INPUT_REQUIRED, `${replica}: which language?`), metadata: undefined }));
    } else {
      bus.publish(AgentEvent.task(rc.task));
      bus.publish(AgentEvent.statusUpdate({ taskId: rc.taskId, contextId: rc.contextId, status: status(TaskState.TASK_STATE_COMPLETED, `${replica}: done`), metadata: { finishedOn: replica } }));
    }
    bus.finished();
    return Promise.resolve();
  },
  cancelTask: () => Promise.resolve(),
});

async function serve(name: string): Promise<{ url: string; close: () => void }> {
  const app = express();
  const server = await new Promise<import("node:http").Server>((res) => { const s = app.listen(0, "127.0.0.1", () => { res(s); }); });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const card = AgentCard.fromJSON({
    name: `example-${name}`, description: "asks, then answers", version: "1.0.0",
    supportedInterfaces: [{ url: `${url}/a2a/jsonrpc`, protocolBinding: "JSONRPC", protocolVersion: "1.0" }],
    capabilities: { streaming: true }, defaultInputModes: ["text/plain"], defaultOutputModes: ["text/plain"], skills: [],
  });
  // each replica has its own store and promptd client; the board is what they share
  const store = new PromptdTaskStore({ client: new Client({ baseUrl: env("PROMPTD_URL"), token: env("PROMPTD_TOKEN") }), board });
  const handler = new DefaultRequestHandler(card, store, agent(name));
  app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: handler }));
  app.use("/a2a/jsonrpc", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  return { url, close: () => { server.closeAllConnections(); server.close(); } };
}

const text = (t: Task): string => (t.status?.message?.parts[0]?.content?.$case === "text" ? t.status.message.parts[0].content.value : "");

async function main(): Promise<void> {
  // once, with an admin token: the board and its A2A state machine
  await defineTaskBoard(new Client({ baseUrl: env("PROMPTD_URL"), token: env("PROMPTD_ADMIN_TOKEN") }), board);
  const [a, b] = [await serve("A"), await serve("B")];
  try {
    const factory = new ClientFactory();
    const [toA, toB] = [await factory.createFromUrl(a.url), await factory.createFromUrl(b.url)];
    const msg = (s: string, task?: Task): Message => Message.fromJSON({ messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text: s }], ...(task ? { taskId: task.id, contextId: task.contextId } : {}) });

    const started = await toA.sendMessage({ tenant: "", message: msg("translate 'hello'"), configuration: undefined, metadata: undefined }) as Task;
    console.log(`replica A: task ${started.id} is ${TaskState[started.status?.state ?? 0]} (${text(started)})`);
    const seen = await toB.getTask({ tenant: "", id: started.id });
    console.log(`replica B: finds it ${TaskState[seen.status?.state ?? 0]}, started on ${String(seen.metadata?.["startedOn"])}`);
    const done = await toB.sendMessage({ tenant: "", message: msg("French", started), configuration: undefined, metadata: undefined }) as Task;
    console.log(`replica B: ${TaskState[done.status?.state ?? 0]} (${text(done)})`);
    const back = await toA.getTask({ tenant: "", id: started.id });
    console.log(`replica A: reads ${TaskState[back.status?.state ?? 0]}, finished on ${String(back.metadata?.["finishedOn"])}, ${back.history.length} messages`);
  } finally {
    a.close(); b.close();
  }
}

await main();
