// PromptdCheckpointSaver: a LangGraph.js checkpointer backed by promptd
// sessions. A thread is a session; every checkpoint and every pending write
// is one session state entry, created once (expected_revision 0) and written
// with the fence of the session lease the run holds. A graph run holds that
// lease from start to end (saver.run), renewed at ttl/3, so a second run on
// the same thread that takes the lease over fences the first one out: the
// first run's next write is refused with stale_fence instead of forking the
// thread (langchain-ai/langgraph#8796).
//
// Why state entries and not turns: checkpoints are keyed by id and read by
// id (getTuple with checkpoint_id, list with before), which state entries
// give directly (GET .../state?keys=); turns are an ordered log for chat
// history and stay free for it.
//
// Import from "@promptd/client/langgraph"; @langchain/langgraph-checkpoint
// is a peer dependency, so the main entry keeps zero dependencies.

import { AsyncLocalStorage } from "node:async_hooks";
import { createHash } from "node:crypto";
import {
  BaseCheckpointSaver, WRITES_IDX_MAP, compareWritesSortKeys, writesSortKey,
  type Checkpoint, type CheckpointListOptions, type CheckpointTuple, type ChannelVersions,
  type CheckpointMetadata, type PendingWrite, type SerializerProtocol, type CheckpointPendingWrite,
} from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { Client } from "./client.js";
import { RevisionConflictError } from "./errors.js";
import { acquireHeldLease, type HeldLease, type SessionLeaseOptions } from "./lease.js";
import type { StateEntry } from "./types.js";

export interface PromptdCheckpointSaverOptions {
  client: Client;
  /** The agent and env the threads' sessions belong to (the env must have a pointer). */
  agent: string;
  env: string;
  /** The lease holder name of this process (shown to others in lease_held). */
  holder: string;
  /** Session lease TTL, ms (default 10000), renewed every ttl/3. */
  ttlMs?: number;
  /** Prefix of the session ids made from thread ids (default "lg-"). */
  sessionPrefix?: string;
  /**
   * CONTROL ONLY: write without lease or fence, as a checkpointer without
   * promptd's fencing would. Two concurrent runs then fork the thread; the
   * tests keep this to show that the fence is what prevents it.
   */
  unfenced?: boolean;
  serde?: SerializerProtocol;
}

interface StoredCheckpoint {
  kind: "checkpoint";
  ns: string;
  id: string;
  parent: string | null;
  type: string;
  checkpoint: string; // base64 of the serde's bytes
  metadata_type: string;
  metadata: string;
}

interface StoredWrite {
  kind: "write";
  ns: string;
  checkpoint_id: string;
  task_id: string;
  task_path: string;
  idx: number;
  channel: string;
  type: string;
  value: string;
}

type Stored = StoredCheckpoint | StoredWrite;

interface RunContext {
  sessionId: string;
  lease: HeldLease;
}

const ID_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const sha = (s: string): string => createHash("sha256").update(s).digest("hex");
const b64 = (u: Uint8Array): string => Buffer.from(u).toString("base64");
const unb64 = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, "base64"));

function nsTag(ns: string): string {
  return ns === "" ? "root" : "n" + sha(ns).slice(0, 24);
}

export class PromptdCheckpointSaver extends BaseCheckpointSaver {
  private readonly o: PromptdCheckpointSaverOptions;
  private readonly runs = new AsyncLocalStorage<RunContext>();
  private readonly created = new Set<string>();

  constructor(o: PromptdCheckpointSaverOptions) {
    super(o.serde);
    this.o = o;
  }

  /** The session id of a thread: prefix + thread id when that is an identifier, else prefix + a hash of it. */
  sessionId(threadId: string): string {
    const prefix = this.o.sessionPrefix ?? "lg-";
    const plain = prefix + threadId;
    return ID_RE.test(plain) ? plain : prefix + sha(threadId).slice(0, 40);
  }

  private async ensureSession(sessionId: string): Promise<void> {
    if (this.created.has(sessionId)) return;
    // Same id, agent and env: 200 with the existing session; closed or
    // another agent's: 409 session_exists, thrown as SessionExistsError.
    await this.o.client.createSession({ agent: this.o.agent, env: this.o.env, sessionId });
    this.created.add(sessionId);
  }

  /**
   * Runs one graph run on a thread while holding the thread's session lease:
   * acquired first (mode reject, wait or preempt), renewed at ttl/3, released
   * at the end. fn gets a signal that aborts when the lease is lost; pass it to
   * graph.invoke. Every checkpoint write of the run carries the lease's fence.
   * Rejects with LeaseLostError when the lease was lost (its cause is the
   * stale_fence answer when a write found out).
   */
  async run<T>(threadId: string, fn: (signal: AbortSignal) => Promise<T>, o: Pick<SessionLeaseOptions, "mode" | "waitMs" | "signal" | "traceparent"> = {}): Promise<T> {
    const sessionId = this.sessionId(threadId);
    await this.ensureSession(sessionId);
    if (this.o.unfenced) return fn(o.signal ?? new AbortController().signal);
    const lease = await acquireHeldLease(this.o.client, sessionId, this.o.holder, { ttlMs: this.o.ttlMs ?? 10_000, ...o });
    const signal = o.signal ? AbortSignal.any([lease.signal, o.signal]) : lease.signal;
    try {
      const out = await this.runs.run({ sessionId, lease }, () => fn(signal));
      if (lease.lostError) throw lease.lostError;
      return out;
    } catch (err) {
      if (lease.lostError) throw lease.lostError;
      throw err;
    } finally {
      lease.stop();
      if (!lease.lost) await lease.release().catch(() => undefined);
    }
  }

  private target(config: RunnableConfig): { threadId: string; sessionId: string; ns: string } {
    const threadId = config.configurable?.["thread_id"] as unknown;
    if (typeof threadId !== "string" || threadId === "") throw new Error("PromptdCheckpointSaver: configurable.thread_id (a non-empty string) is required");
    const ns = (config.configurable?.["checkpoint_ns"] as string | undefined) ?? "";
    return { threadId, sessionId: this.sessionId(threadId), ns };
  }

  private async write(sessionId: string, key: string, value: Stored, expectedRevision = 0): Promise<void> {
    if (this.o.unfenced) {
      await this.ensureSession(sessionId);
      await this.o.client.putState(sessionId, key, value, { expectedRevision });
      return;
    }
    const run = this.runs.getStore();
    if (!run || run.sessionId !== sessionId) {
      throw new Error("PromptdCheckpointSaver: checkpoint writes happen inside saver.run(threadId, ...), which holds the thread's lease");
    }
    await run.lease.putState(key, value, expectedRevision);
  }

  private async entries(sessionId: string, keys?: string[]): Promise<Record<string, StateEntry<Stored>>> {
    if (!this.created.has(sessionId)) {
      try {
        return await this.o.client.getState<Stored>(sessionId, keys);
      } catch (err) {
        if ((err as { code?: string }).code === "session_not_found") return {};
        throw err;
      }
    }
    return this.o.client.getState<Stored>(sessionId, keys);
  }

  private async tuple(threadId: string, cp: StoredCheckpoint, all: Stored[]): Promise<CheckpointTuple> {
    const writes = all
      .filter((w): w is StoredWrite => w.kind === "write" && w.ns === cp.ns && w.checkpoint_id === cp.id)
      .map((w) => ({ w, key: writesSortKey(w.task_path, w.task_id, w.idx) }))
      .sort((a, b) => compareWritesSortKeys(a.key, b.key));
    const pendingWrites: CheckpointPendingWrite[] = await Promise.all(
      writes.map(async ({ w }) => [w.task_id, w.channel, await this.serde.loadsTyped(w.type, unb64(w.value))] as CheckpointPendingWrite),
    );
    const t: CheckpointTuple = {
      config: { configurable: { thread_id: threadId, checkpoint_ns: cp.ns, checkpoint_id: cp.id } },
      checkpoint: (await this.serde.loadsTyped(cp.type, unb64(cp.checkpoint))) as Checkpoint,
      metadata: (await this.serde.loadsTyped(cp.metadata_type, unb64(cp.metadata))) as CheckpointMetadata,
      pendingWrites,
    };
    if (cp.parent) t.parentConfig = { configurable: { thread_id: threadId, checkpoint_ns: cp.ns, checkpoint_id: cp.parent } };
    return t;
  }

  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const { threadId, sessionId, ns } = this.target(config);
    const id = config.configurable?.["checkpoint_id"] as string | undefined;
    const all = Object.values(await this.entries(sessionId)).map((e) => e.value);
    const cps = all.filter((c): c is StoredCheckpoint => c.kind === "checkpoint" && c.ns === ns);
    const cp = id ? cps.find((c) => c.id === id) : cps.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))[0];
    return cp ? this.tuple(threadId, cp, all) : undefined;
  }

  override async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const { threadId, sessionId } = this.target(config);
    const ns = config.configurable?.["checkpoint_ns"] as string | undefined;
    const id = config.configurable?.["checkpoint_id"] as string | undefined;
    const before = options.before?.configurable?.["checkpoint_id"] as string | undefined;
    const all = Object.values(await this.entries(sessionId)).map((e) => e.value);
    const cps = all
      .filter((c): c is StoredCheckpoint => c.kind === "checkpoint" && (ns === undefined || c.ns === ns))
      .filter((c) => (id ? c.id === id : true) && (before ? c.id < before : true))
      .sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    let left = options.limit ?? Infinity;
    for (const cp of cps) {
      if (left <= 0) break;
      const t = await this.tuple(threadId, cp, all);
      const f = options.filter;
      if (f && !Object.entries(f).every(([k, v]) => (t.metadata as Record<string, unknown> | undefined)?.[k] === v)) continue;
      left--;
      yield t;
    }
  }

  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, _newVersions: ChannelVersions): Promise<RunnableConfig> {
    const { threadId, sessionId, ns } = this.target(config);
    const [[type, cpBytes], [mtype, mBytes]] = await Promise.all([this.serde.dumpsTyped(checkpoint), this.serde.dumpsTyped(metadata)]);
    const parent = (config.configurable?.["checkpoint_id"] as string | undefined) ?? null;
    const stored: StoredCheckpoint = {
      kind: "checkpoint", ns, id: checkpoint.id, parent, type, checkpoint: b64(cpBytes), metadata_type: mtype, metadata: b64(mBytes),
    };
    await this.write(sessionId, `cp.${nsTag(ns)}.${checkpoint.id}`, stored);
    return { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpoint.id } };
  }

  override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath = ""): Promise<void> {
    const { sessionId, ns } = this.target(config);
    const checkpointId = config.configurable?.["checkpoint_id"] as string | undefined;
    if (!checkpointId) throw new Error("PromptdCheckpointSaver: putWrites needs configurable.checkpoint_id");
    for (const [i, [channel, value]] of writes.entries()) {
      const idx = WRITES_IDX_MAP[channel] ?? i;
      const key = `wr.${sha(`${ns}\u0000${checkpointId}\u0000${taskId}\u0000${idx}`).slice(0, 48)}`;
      const [type, bytes] = await this.serde.dumpsTyped(value);
      const stored: StoredWrite = { kind: "write", ns, checkpoint_id: checkpointId, task_id: taskId, task_path: taskPath, idx, channel, type, value: b64(bytes) };
      try {
        await this.write(sessionId, key, stored);
      } catch (err) {
        if (!(err instanceof RevisionConflictError)) throw err;
        if (idx >= 0) continue; // a regular write is stored once (as MemorySaver does)
        await this.write(sessionId, key, stored, err.fields.current_revision); // special writes (errors, interrupts) are replaced
      }
    }
  }

  /** Closes the thread's session: its checkpoints stay readable, no run can write to it again. */
  override async deleteThread(threadId: string): Promise<void> {
    const sessionId = this.sessionId(threadId);
    const s = await this.o.client.getSession(sessionId, { limit: 1 });
    const run = this.runs.getStore();
    const fence = run && run.sessionId === sessionId ? { fence: run.lease.fence } : {};
    await this.o.client.closeSession(sessionId, { expectedRevision: s.revision, ...fence });
  }
}
