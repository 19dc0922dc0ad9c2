// PromptdSaver: a drop-in LangGraph.js checkpoint saver on promptd sessions.
//
// One thread is one promptd session (id: prefix + thread id). Every
// checkpoint and every task's pending writes is one session state entry.
// Channel values are stored once per (channel, version), in the entry of the
// checkpoint that introduced that version, and a checkpoint is read back from
// its channel_versions (as the SQL savers do).
//
// Writes need the thread's session lease; the saver takes it itself at a
// run's first write (no wrapper around graph.invoke), renews it at ttl/3,
// releases it after idleReleaseMs without a write (or at endRun/close), and
// sends the lease's fence with every write. A run is known by the RunControl
// object LangGraph puts in every run's config (config.control): a write from
// another run of the same process takes the thread over only if that run
// read the thread's current head, else it is refused (ThreadBusyError); a
// run whose lease was taken over is refused at its next write
// (CheckpointFencedError) and never takes the lease back. After taking a
// lease, a run that read the thread's head checks that the head has not
// moved since (the read happens after the fence was raised, so no write of
// another run can land in between): the chain never forks under a run that
// read a stale head. Reads take no lease.

import {
  BaseCheckpointSaver, WRITES_IDX_MAP,
  type Checkpoint, type CheckpointListOptions, type CheckpointMetadata, type CheckpointTuple,
  type ChannelVersions, type PendingWrite, type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  LeaseHeldError, LeaseLostError, RevisionConflictError, SessionNotFoundError, StaleFenceError,
  type Client, type Lease,
} from "@promptd/client";
import { CheckpointFencedError, ThreadBusyError } from "./errors.js";
import {
  b64, blobIndex, decodeTuple, desc, idPart, nsTag, sha,
  type Blob, type Entries, type Stored, type StoredCheckpoint, type StoredWrite, type StoredWrites,
} from "./entries.js";

export type LeaseMode = "reject" | "wait" | "preempt";

export interface PromptdSaverOptions {
  client: Client;
  /** The agent and env the threads' sessions belong to (the env must have a pointer). */
  agent: string;
  env: string;
  /** This process's lease holder name (shown to others in lease_held). Default "langgraph-<pid>". */
  holder?: string;
  /** Prefix of the session ids made from thread ids (default "lg-"). Savers with other prefixes do not see each other's threads. */
  sessionPrefix?: string;
  /** Session lease TTL, ms (default 10000, 100..60000), renewed every ttl/3. */
  ttlMs?: number;
  /** The lease is released after this long without a write, ms (default 2000). */
  idleReleaseMs?: number;
  /** How a run's first write meets a lease another process holds: reject (default), wait up to waitMs, or preempt. */
  leaseMode?: LeaseMode;
  /** For leaseMode "wait": how long, ms (default 10000, at most 30000). */
  waitMs?: number;
  /** idle_ttl_ms of the sessions the saver creates (promptd's default when unset). */
  sessionIdleTtlMs?: number;
  serde?: SerializerProtocol;
}


/** A session lease this saver holds for one run on one thread. */
export interface Holding {
  readonly threadId: string;
  readonly sessionId: string;
  readonly owner: object;
  readonly lease: Lease;
  readonly fence: number;
  /** Taken by runThread for a whole run (released by endRun), not at a write. */
  readonly managed: boolean;
  lost: CheckpointFencedError | undefined;
  released: boolean;
  keepalive: ReturnType<typeof setInterval> | undefined;
  idle: ReturnType<typeof setTimeout> | undefined;
  validUntil: number;
}

interface RunInfo {
  /** The head the run's first unaddressed read of the root namespace saw (null: none). */
  readHead?: string | null;
  /** The run addressed a checkpoint (time travel): it may branch. */
  addressed?: boolean;
  /** The last root checkpoint the run wrote. */
  lastWritten?: string;
  holding?: Holding;
}

const ID_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** The configurable member of a config, typed loosely. */
function conf(config: RunnableConfig): Record<string, unknown> {
  return (config.configurable ?? {}) as Record<string, unknown>;
}

export class PromptdSaver extends BaseCheckpointSaver {
  readonly client: Client;
  readonly agent: string;
  readonly env: string;
  readonly holder: string;
  readonly sessionPrefix: string;
  readonly ttlMs: number;
  readonly idleReleaseMs: number;
  readonly leaseMode: LeaseMode;
  readonly waitMs: number;
  private readonly sessionIdleTtlMs: number | undefined;
  /** The owner of writes made outside a LangGraph run (no config.control). */
  private readonly direct = {};
  private readonly current = new Map<string, Holding>();
  private readonly runs = new WeakMap<object, Map<string, RunInfo>>();
  private readonly locks = new Map<string, Promise<void>>();
  private readonly created = new Set<string>();
  /** While this process holds a thread: the last root checkpoint id put on it (set once the put holds the lease, before it is sent). */
  private readonly localHead = new Map<string, string | null>();

  constructor(o: PromptdSaverOptions) {
    super(o.serde);
    this.client = o.client;
    this.agent = o.agent;
    this.env = o.env;
    this.holder = o.holder ?? `langgraph-${String(process.pid)}`;
    this.sessionPrefix = o.sessionPrefix ?? "lg-";
    this.ttlMs = o.ttlMs ?? 10_000;
    this.idleReleaseMs = o.idleReleaseMs ?? 2000;
    this.leaseMode = o.leaseMode ?? "reject";
    this.waitMs = Math.min(o.waitMs ?? 10_000, 30_000);
    this.sessionIdleTtlMs = o.sessionIdleTtlMs;
  }

  /** Whether writes carry the lease's fence. Only a test's control subclass turns it off. */
  protected get fenced(): boolean {
    return true;
  }

  /** The session id of a thread: prefix + thread id when that is an identifier, else prefix + a hash of it. */
  sessionId(threadId: string): string {
    const plain = this.sessionPrefix + threadId;
    return ID_RE.test(plain) ? plain : this.sessionPrefix + "h" + sha(threadId).slice(0, 40);
  }

  // Run bookkeeping.

  private ownerOf(config: RunnableConfig): object {
    const c = (config as { control?: unknown }).control;
    return typeof c === "object" && c !== null ? c : this.direct;
  }

  private run(owner: object, threadId: string): RunInfo {
    let m = this.runs.get(owner);
    if (!m) {
      m = new Map();
      this.runs.set(owner, m);
    }
    let r = m.get(threadId);
    if (!r) {
      r = {};
      m.set(threadId, r);
    }
    return r;
  }

  /** Serializes lease changes per thread. */
  private async locked<T>(threadId: string, f: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(threadId) ?? Promise.resolve();
    let done!: () => void;
    const mine = new Promise<void>((r) => { done = r; });
    const chained = prev.then(() => mine);
    this.locks.set(threadId, chained);
    await prev;
    try {
      return await f();
    } finally {
      done();
      if (this.locks.get(threadId) === chained) this.locks.delete(threadId);
    }
  }

  private async ensureSession(sessionId: string): Promise<void> {
    if (this.created.has(sessionId)) return;
    await this.client.createSession({
      agent: this.agent, env: this.env, sessionId,
      ...(this.sessionIdleTtlMs !== undefined ? { idleTtlMs: this.sessionIdleTtlMs } : {}),
    });
    this.created.add(sessionId);
  }

  // Leases.

  private async acquire(threadId: string, mode: LeaseMode, waitMs?: number): Promise<Lease> {
    const sessionId = this.sessionId(threadId);
    await this.ensureSession(sessionId);
    try {
      return await this.client.acquireSessionLease(sessionId, {
        holder: this.holder, ttlMs: this.ttlMs, mode, ...(mode === "wait" ? { waitMs: waitMs ?? this.waitMs } : {}),
      });
    } catch (err) {
      if (err instanceof LeaseHeldError) {
        throw new ThreadBusyError(threadId, `another run holds the thread's lease (holder ${String(err.fields.holder)})`, {
          holder: err.fields.holder, expiresAt: err.fields.expires_at, cause: err,
        });
      }
      throw err;
    }
  }

  private install(threadId: string, owner: object, lease: Lease, managed: boolean, sentAt: number): Holding {
    const h: Holding = {
      threadId, sessionId: this.sessionId(threadId), owner, lease, fence: lease.fence, managed,
      lost: undefined, released: false, keepalive: undefined, idle: undefined, validUntil: sentAt + this.ttlMs,
    };
    const prev = this.current.get(threadId);
    if (prev && prev !== h) this.supersede(prev, "another run took the thread over");
    this.current.set(threadId, h);
    this.run(owner, threadId).holding = h;
    h.keepalive = setInterval(() => void this.renew(h), Math.max(30, Math.floor(this.ttlMs / 3)));
    h.keepalive.unref();
    this.touch(h);
    return h;
  }

  private supersede(h: Holding, detail: string, cause?: unknown, currentFence?: number): void {
    if (!h.lost) h.lost = new CheckpointFencedError(h.threadId, detail, { fence: h.fence, currentFence, cause });
    this.stopTimers(h);
    if (this.current.get(h.threadId) === h) this.current.delete(h.threadId);
  }

  private stopTimers(h: Holding): void {
    if (h.keepalive !== undefined) clearInterval(h.keepalive);
    if (h.idle !== undefined) clearTimeout(h.idle);
    h.keepalive = undefined;
    h.idle = undefined;
  }

  private touch(h: Holding): void {
    if (h.managed) return;
    if (h.idle !== undefined) clearTimeout(h.idle);
    h.idle = setTimeout(() => void this.releaseHolding(h).catch(() => undefined), this.idleReleaseMs);
    h.idle.unref();
  }

  private async renew(h: Holding): Promise<void> {
    if (h.lost || h.released) return;
    if (Date.now() >= h.validUntil) {
      this.supersede(h, "the lease ran out before a renewal succeeded");
      return;
    }
    const sent = Date.now();
    try {
      await this.client.renewSessionLease(h.sessionId, h.lease.token, this.ttlMs, { signal: AbortSignal.timeout(Math.max(50, h.validUntil - sent)) });
      h.validUntil = sent + this.ttlMs;
    } catch (err) {
      if (err instanceof LeaseLostError) this.supersede(h, "the lease was taken over or expired", err);
    }
  }

  private async releaseHolding(h: Holding): Promise<void> {
    if (h.released || h.lost) return;
    h.released = true;
    this.stopTimers(h);
    if (this.current.get(h.threadId) === h) {
      this.current.delete(h.threadId);
      this.localHead.delete(h.threadId); // only needed while this process holds the thread
    }
    try {
      await this.client.releaseSessionLease(h.sessionId, h.lease.token, { signal: AbortSignal.timeout(5000) });
    } catch (err) {
      if (!(err instanceof LeaseLostError)) throw err;
    }
  }

  /** The newest root checkpoint id of the thread on the server (null: none). */
  private async serverHead(threadId: string): Promise<string | null> {
    const cps = Object.values(await this.entries(threadId)).map((e) => e.value)
      .filter((v): v is StoredCheckpoint => v !== null && v.k === "c" && v.ns === "");
    return cps.sort(desc)[0]?.id ?? null;
  }

  /** What the owner's run expects the head to be (undefined: no expectation). */
  private expectedHead(r: RunInfo): string | null | undefined {
    if (r.lastWritten !== undefined) return r.lastWritten;
    if (r.addressed) return undefined;
    return r.readHead;
  }

  /** The holding the owner's write uses: its own, or one taken now. */
  private async holdingFor(owner: object, threadId: string, newHead?: string): Promise<Holding> {
    const r = this.run(owner, threadId);
    const mine = (h: Holding): Holding => {
      if (newHead !== undefined) this.localHead.set(threadId, newHead);
      return h;
    };
    if (r.holding?.lost) throw r.holding.lost;
    if (r.holding && !r.holding.released) return mine(r.holding);
    return this.locked(threadId, async () => {
      if (r.holding?.lost) throw r.holding.lost;
      if (r.holding && !r.holding.released) return mine(r.holding);
      const cur = this.current.get(threadId);
      const expected = this.expectedHead(r);
      let mode = this.leaseMode;
      if (cur) {
        // Another run of this process holds the thread.
        if (cur.managed) throw new ThreadBusyError(threadId, "another run of this process holds the thread (runThread)", { holder: this.holder });
        const head = this.localHead.get(threadId);
        if (expected !== undefined && head !== undefined && head !== expected) {
          throw new ThreadBusyError(threadId, `another run of this process holds the thread and has moved it on (head ${String(head)}, this run read ${String(expected)})`, { holder: this.holder });
        }
        mode = "preempt";
      }
      const sent = Date.now();
      const lease = await this.acquire(threadId, mode);
      const h = this.install(threadId, owner, lease, false, sent);
      if (expected !== undefined) {
        const head = await this.serverHead(threadId);
        this.localHead.set(threadId, head);
        if (head !== expected) {
          this.supersede(h, `the thread moved on since this run read it (head ${String(head)}, this run read ${String(expected)})`);
          await this.client.releaseSessionLease(h.sessionId, lease.token).catch(() => undefined);
          throw h.lost!;
        }
      }
      return mine(h);
    });
  }

  /**
   * Takes the thread's lease for a whole run owned by `owner` (runThread does,
   * with the run's RunControl): mode reject, wait (up to waitMs) or preempt.
   * Returns the holding; the fence the previous holder had, when one held it
   * (for a rollback). endRun releases it.
   */
  async beginRun(threadId: string, owner: object, mode: LeaseMode, waitMs?: number): Promise<{ holding: Holding; previousFence: number | undefined }> {
    return this.locked(threadId, async () => {
      const sessionId = this.sessionId(threadId);
      await this.ensureSession(sessionId);
      let previousFence: number | undefined;
      if (mode === "preempt") {
        const s = await this.client.getSession(sessionId, { limit: 1 });
        if (s.lease) previousFence = s.lease.fence;
      }
      const sent = Date.now();
      const lease = await this.acquire(threadId, mode, waitMs);
      const h = this.install(threadId, owner, lease, true, sent);
      return { holding: h, previousFence };
    });
  }

  /** Ends a run: releases its leases (all threads it wrote to). */
  async endRun(owner: object): Promise<void> {
    const m = this.runs.get(owner);
    if (!m) return;
    await Promise.all([...m.values()].map(async (r) => { if (r.holding) await this.releaseHolding(r.holding); }));
  }

  /** Releases every lease this saver holds (call at shutdown). */
  async close(): Promise<void> {
    await Promise.all([...this.current.values()].map((h) => this.releaseHolding(h).catch(() => undefined)));
  }

  // Storage.

  private async entries(threadId: string): Promise<Entries> {
    try {
      return await this.client.getState<Stored | null>(this.sessionId(threadId));
    } catch (err) {
      if (err instanceof SessionNotFoundError) return {};
      throw err;
    }
  }

  /** Writes one entry as the owner's run: with its lease's fence, or unfenced for the control. */
  private async write(owner: object, threadId: string, key: string, value: Stored | null, expectedRevision: number): Promise<void> {
    const sessionId = this.sessionId(threadId);
    if (!this.fenced) {
      await this.ensureSession(sessionId);
      await this.client.putState(sessionId, key, value, { expectedRevision });
      return;
    }
    const h = await this.holdingFor(owner, threadId);
    this.touch(h); // a write in flight keeps the lease from its idle release
    try {
      await this.client.putState(sessionId, key, value, { expectedRevision, fence: h.fence });
      this.touch(h);
    } catch (err) {
      if (err instanceof StaleFenceError || err instanceof LeaseLostError || err instanceof LeaseHeldError) {
        const current = err instanceof StaleFenceError ? (err.fields.current_fence as number | undefined) : undefined;
        this.supersede(h, "the write was refused: another run took the thread over", err, current);
        throw h.lost!;
      }
      throw err;
    }
  }

  /** Creates an entry; a tombstone (deleted entry) under the key is overwritten. */
  private async create(owner: object, threadId: string, key: string, value: Stored, fenceField: (f: number) => void, newHead?: string): Promise<void> {
    fenceField(this.fenced ? ((await this.holdingFor(owner, threadId, newHead)).fence) : 0);
    try {
      await this.write(owner, threadId, key, value, 0);
    } catch (err) {
      if (!(err instanceof RevisionConflictError)) throw err;
      const cur = (await this.client.getState<Stored | null>(this.sessionId(threadId), [key]))[key];
      if (!cur || cur.value !== null) throw err;
      await this.write(owner, threadId, key, value, cur.revision);
    }
  }

  private target(config: RunnableConfig): { threadId: string; ns: string } {
    const threadId = conf(config)["thread_id"];
    if (typeof threadId !== "string" || threadId === "") throw new Error("PromptdSaver: configurable.thread_id (a non-empty string) is required");
    const ns = conf(config)["checkpoint_ns"];
    return { threadId, ns: typeof ns === "string" ? ns : "" };
  }

  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const threadId = conf(config)["thread_id"];
    if (typeof threadId !== "string" || threadId === "") return undefined;
    const { ns } = this.target(config);
    const id = conf(config)["checkpoint_id"] as string | undefined;
    const all = Object.values(await this.entries(threadId)).map((e) => e.value).filter((v): v is Stored => v !== null);
    const cps = all.filter((c): c is StoredCheckpoint => c.k === "c" && c.ns === ns);
    const cp = id ? cps.find((c) => c.id === id) : cps.sort(desc)[0];
    const owner = this.ownerOf(config);
    if (owner !== this.direct && ns === "") {
      const r = this.run(owner, threadId);
      if (r.readHead === undefined && r.addressed === undefined) {
        if (id) r.addressed = true;
        else r.readHead = cp?.id ?? null;
      }
    }
    return cp ? decodeTuple(this.serde, cp, all, blobIndex(all), this.getNextVersion(undefined)) : undefined;
  }

  /** The thread ids this saver's agent and env have sessions for (open ones, with this prefix). */
  private async threadSessions(): Promise<string[]> {
    const out: string[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await this.client.listSessions({ agent: this.agent, env: this.env, state: "open", limit: 500, ...(cursor ? { cursor } : {}) });
      for (const s of page.items) if (s.session_id.startsWith(this.sessionPrefix)) out.push(s.session_id);
      if (!page.next) return out;
      cursor = page.next;
    }
  }

  override async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const c = conf(config);
    const threadId = typeof c["thread_id"] === "string" && c["thread_id"] !== "" ? c["thread_id"] : undefined;
    const ns = typeof c["checkpoint_ns"] === "string" ? c["checkpoint_ns"] : undefined;
    const id = c["checkpoint_id"] as string | undefined;
    const before = options.before?.configurable?.["checkpoint_id"] as string | undefined;
    const filter = options.filter;
    let left = options.limit ?? Infinity;
    const sessions = threadId !== undefined ? [this.sessionId(threadId)] : await this.threadSessions();
    let all: Stored[] = [];
    for (const sid of sessions) {
      try {
        const e = await this.client.getState<Stored | null>(sid);
        all = all.concat(Object.values(e).map((x) => x.value).filter((v): v is Stored => v !== null));
      } catch (err) {
        if (!(err instanceof SessionNotFoundError)) throw err;
      }
    }
    const blobs = blobIndex(all);
    const cps = all
      .filter((x): x is StoredCheckpoint => x.k === "c" && (ns === undefined || x.ns === ns))
      .filter((x) => (id ? x.id === id : true) && (before ? x.id < before : true))
      .sort(desc);
    for (const cp of cps) {
      if (left <= 0) return;
      const t = await decodeTuple(this.serde, cp, all, blobs, this.getNextVersion(undefined));
      if (filter && !Object.entries(filter).every(([k, v]) => (t.metadata as Record<string, unknown> | undefined)?.[k] === v)) continue;
      left--;
      yield t;
    }
  }

  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    if (!config.configurable) throw new Error("PromptdSaver: config.configurable is required");
    const { threadId, ns } = this.target(config);
    const owner = this.ownerOf(config);
    const parent = (conf(config)["checkpoint_id"] as string | undefined) ?? null;
    const { channel_values: values, ...rest } = checkpoint;
    const blobs: Record<string, Blob> = {};
    for (const ch of Object.keys(newVersions)) {
      if (!(ch in values)) continue;
      const [t, bytes] = await this.serde.dumpsTyped(values[ch]);
      blobs[ch] = { v: String(newVersions[ch]), t, d: b64(bytes) };
    }
    const [[t, bytes], [mt, mbytes]] = await Promise.all([this.serde.dumpsTyped({ ...rest, channel_values: {} }), this.serde.dumpsTyped(metadata)]);
    const stored: StoredCheckpoint = { k: "c", thread: threadId, ns, id: checkpoint.id, parent, t, d: b64(bytes), mt, md: b64(mbytes), blobs, f: 0 };
    await this.create(owner, threadId, `c.${nsTag(ns)}.${idPart(checkpoint.id)}`, stored, (f) => { stored.f = f; }, ns === "" ? checkpoint.id : undefined);
    if (ns === "" && owner !== this.direct) this.run(owner, threadId).lastWritten = checkpoint.id;
    return { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpoint.id } };
  }

  override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath = ""): Promise<void> {
    const { threadId, ns } = this.target(config);
    const cpId = conf(config)["checkpoint_id"] as string | undefined;
    if (!cpId) throw new Error("PromptdSaver: putWrites needs configurable.checkpoint_id");
    const owner = this.ownerOf(config);
    const mine: Record<string, StoredWrite> = {};
    for (const [i, [channel, value]] of writes.entries()) {
      const [t, bytes] = await this.serde.dumpsTyped(value);
      mine[String(WRITES_IDX_MAP[channel] ?? i)] = { ch: channel, t, d: b64(bytes) };
    }
    const key = `w.${sha(`${ns}\u0000${cpId}\u0000${taskId}`).slice(0, 48)}`;
    const sessionId = this.sessionId(threadId);
    let revision = 0;
    let base: Record<string, StoredWrite> = {};
    for (let attempt = 1; ; attempt++) {
      // Regular writes (idx >= 0) are stored once, special ones (errors, interrupts) replaced, as MemorySaver does.
      const merged: Record<string, StoredWrite> = { ...base };
      for (const [idx, w] of Object.entries(mine)) if (Number(idx) < 0 || !(idx in merged)) merged[idx] = w;
      const fence = this.fenced ? (await this.holdingFor(owner, threadId)).fence : 0;
      const stored: StoredWrites = { k: "w", thread: threadId, ns, cp: cpId, task: taskId, path: taskPath, w: merged, f: fence };
      try {
        await this.write(owner, threadId, key, stored, revision);
        return;
      } catch (err) {
        if (!(err instanceof RevisionConflictError) || attempt >= 5) throw err;
        const cur = (await this.client.getState<Stored | null>(sessionId, [key]))[key];
        revision = cur?.revision ?? 0;
        base = cur?.value?.k === "w" ? cur.value.w : {};
      }
    }
  }

  /**
   * Removes the entries (checkpoints, writes) the predicate selects: each is
   * overwritten by a tombstone, fenced, as the owner's run. Returns how many.
   */
  async removeEntries(owner: object, threadId: string, select: (v: Stored) => boolean): Promise<number> {
    const entries = await this.entries(threadId);
    let n = 0;
    for (const [key, e] of Object.entries(entries)) {
      if (e.value === null || !select(e.value)) continue;
      await this.write(owner, threadId, key, null, e.revision);
      n++;
    }
    this.localHead.delete(threadId);
    return n;
  }

  /** Removes the thread's checkpoints and writes (tombstones; the session stays, the thread can be used again). */
  override async deleteThread(threadId: string): Promise<void> {
    await this.removeEntries(this.direct, threadId, () => true);
    const h = this.run(this.direct, threadId).holding;
    if (h) await this.releaseHolding(h);
  }
}

