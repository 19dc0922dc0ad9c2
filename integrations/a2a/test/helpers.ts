// Shared test setup: a real promptd (testkit), real A2A servers (the SDK's
// express integration on 127.0.0.1) and the SDK's own client.

import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { AgentCard, Message, TaskState, type ListTasksRequest, type ListTasksResponse, type Task } from "@a2a-js/sdk";
import {
  AgentEvent, DefaultRequestHandler, ServerCallContext, type AgentExecutor, type ExecutionEventBus, type RequestContext, type TaskStore,
} from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import { ClientFactory, type Client as A2AClient } from "@a2a-js/sdk/client";
import { Client } from "@promptd/client";
import { startPromptd, type PromptdProcess } from "@promptd/testkit";

export interface Promptd {
  proc: PromptdProcess;
  admin: Client;
  runtime: Client;
}

export async function promptd(): Promise<Promptd> {
  const proc = await startPromptd();
  return {
    proc,
    admin: new Client({ baseUrl: proc.url, token: proc.adminToken }),
    runtime: new Client({ baseUrl: proc.url, token: proc.runtimeToken }),
  };
}

/** A server call context of the unauthenticated user (what the express handler builds without auth). */
export function ctx(): ServerCallContext {
  return new ServerCallContext();
}

/**
 * The test agent: the first message makes a task (submitted, working, an artifact
 * named after the replica) and asks for input (input-required); a follow-up
 * message on the task completes it with a second artifact. Each replica signs
 * what it did, so a test sees which replica worked which turn.
 */
export class TwoTurnAgent implements AgentExecutor {
  constructor(readonly replica: string) {}

  execute = (rc: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const { taskId, contextId } = rc;
    const text = (s: string): Message => Message.fromJSON({ messageId: `${this.replica}-${crypto.randomUUID()}`, role: "ROLE_AGENT", taskId, contextId, parts: [{ text: s }] });
    if (rc.task === undefined) {
      bus.publish(AgentEvent.task({
        id: taskId, contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
        history: [rc.userMessage], artifacts: [], metadata: { startedBy: this.replica },
      }));
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() }, metadata: undefined }));
      bus.publish(AgentEvent.artifactUpdate({
        taskId, contextId, append: false, lastChunk: true, metadata: undefined,
        artifact: { artifactId: "draft", name: "draft", description: "", parts: [{ content: { $case: "text", value: `draft by ${this.replica}` }, metadata: undefined, filename: "", mediaType: "text/plain" }], metadata: undefined, extensions: [] },
      }));
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state: TaskState.TASK_STATE_INPUT_REQUIRED, message: text("which format?"), timestamp: new Date().toISOString() }, metadata: undefined }));
    } else {
      bus.publish(AgentEvent.task(rc.task));
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() }, metadata: { resumedBy: this.replica } }));
      bus.publish(AgentEvent.artifactUpdate({
        taskId, contextId, append: false, lastChunk: true, metadata: undefined,
        artifact: { artifactId: "final", name: "final", description: "", parts: [{ content: { $case: "text", value: `final by ${this.replica}` }, metadata: undefined, filename: "", mediaType: "text/plain" }], metadata: undefined, extensions: [] },
      }));
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state: TaskState.TASK_STATE_COMPLETED, message: text("done"), timestamp: new Date().toISOString() }, metadata: undefined }));
    }
    bus.finished();
    return Promise.resolve();
  };

  cancelTask = (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId: "", status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() }, metadata: undefined }));
    bus.finished();
    return Promise.resolve();
  };
}

/** One A2A server replica: a DefaultRequestHandler on the given store, served over JSON-RPC by the SDK's express handlers. */
export interface Replica {
  name: string;
  url: string;
  store: TaskStore;
  handler: DefaultRequestHandler;
  client: A2AClient;
  close: () => Promise<void>;
}

export async function replica(name: string, store: TaskStore, agent: AgentExecutor = new TwoTurnAgent(name), extra?: (app: express.Express) => void): Promise<Replica> {
  const app = express();
  extra?.(app);
  let url = "";
  const card = (): AgentCard => AgentCard.fromJSON({
    name: `test-agent-${name}`, description: "two-turn test agent", version: "1.0.0",
    supportedInterfaces: [{ url: `${url}/a2a/jsonrpc`, protocolBinding: "JSONRPC", protocolVersion: "1.0" }],
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: ["text/plain"], defaultOutputModes: ["text/plain"],
    skills: [{ id: "two-turn", name: "two-turn", description: "asks once, then completes", tags: ["test"] }],
  });
  const server: Server = await new Promise((res) => { const s = app.listen(0, "127.0.0.1", () => { res(s); }); });
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const handler = new DefaultRequestHandler(card(), store, agent);
  app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: handler }));
  app.use("/a2a/jsonrpc", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  const client = await new ClientFactory().createFromUrl(url);
  return {
    name, url, store, handler, client,
    close: () => new Promise((res) => { server.closeAllConnections(); server.close(() => { res(); }); }),
  };
}

/** A user's text message, optionally continuing a task. */
export function userMessage(text: string, taskId?: string, contextId?: string): Message {
  return Message.fromJSON({ messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }], ...(taskId ? { taskId } : {}), ...(contextId ? { contextId } : {}) });
}

/** The text of every part of every artifact, artifact by artifact. */
export function artifactTexts(t: Task): string[] {
  return t.artifacts.map((a) => a.parts.map((p) => (p.content?.$case === "text" ? p.content.value : "")).join(""));
}

export function isTask(r: unknown): r is Task {
  return typeof r === "object" && r !== null && "status" in r && "artifacts" in r;
}

/**
 * The agent of the cross-process tests: the first message makes a task that
 * waits for input; each follow-up adds an artifact named after its message and
 * waits for input again, so any number of follow-ups can land on one task.
 */
export class NotesAgent implements AgentExecutor {
  constructor(readonly replica: string) {}

  execute = (rc: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const { taskId, contextId } = rc;
    const now = (): string => new Date().toISOString();
    if (rc.task === undefined) {
      bus.publish(AgentEvent.task({ id: taskId, contextId, status: { state: TaskState.TASK_STATE_INPUT_REQUIRED, message: undefined, timestamp: now() }, history: [rc.userMessage], artifacts: [], metadata: undefined }));
    } else {
      bus.publish(AgentEvent.task(rc.task));
      bus.publish(AgentEvent.artifactUpdate({
        taskId, contextId, append: false, lastChunk: true, metadata: undefined,
        artifact: { artifactId: `note-${rc.userMessage.messageId}`, name: this.replica, description: "", parts: [{ content: { $case: "text", value: `noted by ${this.replica}` }, metadata: undefined, filename: "", mediaType: "text/plain" }], metadata: undefined, extensions: [] },
      }));
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state: TaskState.TASK_STATE_INPUT_REQUIRED, message: undefined, timestamp: now() }, metadata: undefined }));
    }
    bus.finished();
    return Promise.resolve();
  };

  cancelTask = (): Promise<void> => Promise.resolve();
}

/**
 * Any store with each save delayed by ms after the handler prepared it: the
 * window in which another replica's write can land (a slower network or
 * database). Both arms of a comparison get the same delay.
 */
export class SlowSaves implements TaskStore {
  constructor(private readonly inner: TaskStore, private readonly ms: number) {}
  load(taskId: string, context: ServerCallContext): Promise<Task | undefined> { return this.inner.load(taskId, context); }
  async save(task: Task, context: ServerCallContext): Promise<void> {
    await new Promise((r) => setTimeout(r, this.ms));
    await this.inner.save(task, context);
  }
  list(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> { return this.inner.list(params, context); }
}
