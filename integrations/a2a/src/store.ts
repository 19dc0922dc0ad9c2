// PromptdTaskStore: an A2A TaskStore whose tasks are records of a promptd
// board, so every replica of an A2A server reads and writes the same tasks.
// Each write is a compare-and-set on the record's revision (PATCH with
// expected_revision); the board's machine checks each state change.

import { createHash } from "node:crypto";
import { Task, TaskState, taskStateFromJSON } from "@a2a-js/sdk";
import type { ListTasksRequest, ListTasksResponse } from "@a2a-js/sdk";
import { resolveUserScope, type OwnerResolver, type ServerCallContext, type TaskStore } from "@a2a-js/sdk/server";
import {
  ClaimedError, ClaimExpiredError, InvalidTransitionError, RecordNotFoundError, RevisionConflictError, StaleFenceError,
  type BoardRecord, type Client,
} from "@promptd/client";
import { IllegalTransitionError, TaskConflictError, TaskHeldError, TaskStoreError } from "./errors.js";
import { HELD, a2aState, boardState, checkTaskBoard, type A2AState } from "./machine.js";
import { canon, mergeTask } from "./merge.js";

type Obj = Record<string, unknown>;

export interface PromptdTaskStoreOptions {
  /** A @promptd/client Client with a runtime token (boards scope covering `board`). */
  client: Client;
  /** The board (default `a2a-tasks`); define it once with defineTaskBoard. */
  board?: string;
  /**
   * What a save does when another replica wrote the task since this replica read it:
   * `merge` (default) lays this save's changes over the newer task and writes again
   * (at most `maxAttempts` writes); `refuse` throws TaskConflictError at once.
   */
  onConflict?: "merge" | "refuse";
  /** Writes one save may try under `merge` (default 5). */
  maxAttempts?: number;
  /** The owner a task belongs to (default: the SDK's resolveUserScope, the user's name). */
  ownerResolver?: OwnerResolver;
  /** How many tasks' read revisions to remember (default 10,000). */
  cacheSize?: number;
  /** Check on first use that the board has the A2A machine (default true). */
  checkBoard?: boolean;
}

/** What a replica last read or wrote of one record: the base of its next write. */
interface Seen {
  revision: number;
  state: string;
  task: Obj;
}

/** The record payload: the task in the SDK's JSON form, and whose it is. */
interface Payload {
  v: 1;
  tenant: string;
  owner: string;
  task: Obj;
}

/** Claims this store holds: record id -> fence. */
type Held = Map<string, number>;

const DEFAULT_PAGE_SIZE = 50;

export class PromptdTaskStore implements TaskStore {
  readonly board: string;
  private readonly client: Client;
  private readonly onConflict: "merge" | "refuse";
  private readonly maxAttempts: number;
  private readonly ownerOf: OwnerResolver;
  private readonly cacheSize: number;
  /**
   * Per record, the base of a save whose task object load did not return: the
   * OLDEST version this store read since it last wrote the record (or what it
   * wrote). An older base only costs a conflict and a merge; a newer one (a
   * getTask that read another replica's write while a save was being prepared)
   * would let the save overwrite that write unseen.
   */
  private readonly seen = new Map<string, Seen>();
  /** The exact base of a task object load returned (the handler mutates it and saves it back). */
  private readonly loaded = new WeakMap<Task, Seen>();
  private readonly held: Held = new Map();
  private checked: Promise<void> | undefined;
  /** Counts, for metrics and tests: writes refused by the revision check, and saves that merged over another replica's write. */
  readonly stats = { conflicts: 0, merges: 0 };

  constructor(opts: PromptdTaskStoreOptions) {
    this.client = opts.client;
    this.board = opts.board ?? "a2a-tasks";
    this.onConflict = opts.onConflict ?? "merge";
    this.maxAttempts = Math.max(1, opts.maxAttempts ?? 5);
    this.ownerOf = opts.ownerResolver ?? resolveUserScope;
    this.cacheSize = opts.cacheSize ?? 10_000;
    if (opts.checkBoard === false) this.checked = Promise.resolve();
  }

  /**
   * The record id of a task: `t.<taskId>.<scope hash>` when the task id is an
   * identifier of at most 80 characters, else `h.<hash of scope and id>`. The scope
   * (tenant, owner) is in the id, so two owners' tasks never share a record.
   */
  recordId(taskId: string, context: ServerCallContext): string {
    const tenant = context.tenant ?? "";
    const owner = this.ownerOf(context);
    if (/^[A-Za-z0-9._-]{1,80}$/.test(taskId)) return `t.${taskId}.${sha(`${tenant}\0${owner}`).slice(0, 12)}`;
    return `h.${sha(`${tenant}\0${owner}\0${taskId}`).slice(0, 40)}`;
  }

  async load(taskId: string, context: ServerCallContext): Promise<Task | undefined> {
    await this.ready();
    const id = this.recordId(taskId, context);
    let rec: BoardRecord;
    try {
      rec = await this.client.getRecord(this.board, id);
    } catch (e) {
      if (e instanceof RecordNotFoundError) { this.seen.delete(id); return undefined; }
      throw e;
    }
    const s = this.remember(id, rec, false);
    if (s === undefined) return undefined;
    const task = Task.fromJSON(s.task);
    this.loaded.set(task, s);
    return task;
  }

  async save(task: Task, context: ServerCallContext): Promise<void> {
    await this.ready();
    const id = this.recordId(task.id, context);
    const scope = { tenant: context.tenant ?? "", owner: this.ownerOf(context) };
    const ours = Task.toJSON(task) as Obj;
    const base = this.loaded.get(task) ?? this.seen.get(id);
    let cur = base;
    // a save never drops a message or an artifact the task had when read: the
    // SDK's ResultManager writes a task event's own (older) history over the
    // stored one, and a message another request appended meanwhile would go
    let want = cur === undefined ? ours : mergeTask(cur.task, ours, cur.task);
    let merged = false; // want holds another replica's changes
    for (let attempt = 1; ; attempt++) {
      const to = stateOf(want);
      if (cur === undefined) {
        const created = await this.create(id, { v: 1, ...scope, task: want });
        if (created.fresh) {
          cur = created.seen;
          if (!merged) this.loaded.set(task, cur);
          if (to === "submitted") return;
          continue; // created in the initial state: now the task's own state
        }
        // another replica created it first
        this.stats.conflicts++;
        if (this.onConflict === "refuse" || attempt >= this.maxAttempts) throw new TaskConflictError(task.id, created.seen.revision, attempt);
        cur = created.seen;
        want = mergeTask(undefined, ours, cur.task);
        merged = true;
        this.stats.merges++;
        continue;
      }
      const from = a2aState(cur.state);
      if (canon(want) === canon(cur.task) && to === from) return; // nothing changed
      const fence = this.held.get(id);
      try {
        const rec = await this.client.updateRecord(this.board, id, {
          expectedRevision: cur.revision,
          payload: { v: 1, ...scope, task: want } satisfies Payload,
          ...(to !== from ? { state: to } : {}),
          ...(fence !== undefined ? { fence } : {}),
        });
        const wrote = this.remember(id, rec, true);
        // the object saved again: checked against this write (after a merge it
        // lacks the other replica's changes, so it keeps its read)
        if (wrote !== undefined && !merged) this.loaded.set(task, wrote);
        if (TERMINAL.has(rec.state)) this.held.delete(id);
        return;
      } catch (e) {
        if (e instanceof InvalidTransitionError) throw new IllegalTransitionError(task.id, from, to);
        if (e instanceof ClaimedError) throw new TaskHeldError(task.id, e.fields.owner);
        if (e instanceof StaleFenceError || e instanceof ClaimExpiredError) { this.held.delete(id); throw new TaskHeldError(task.id, ""); }
        if (!(e instanceof RevisionConflictError)) throw e;
        this.stats.conflicts++;
        if (this.onConflict === "refuse" || attempt >= this.maxAttempts) throw new TaskConflictError(task.id, e.fields.current_revision, attempt);
      }
      // another replica wrote since cur: read it and lay ours over it
      const latest = await this.read(id);
      if (latest === undefined) { cur = undefined; want = ours; merged = false; continue; }
      cur = latest;
      want = mergeTask(base?.task, ours, latest.task);
      merged = true;
      this.stats.merges++;
    }
  }

  async list(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    await this.ready();
    const tenant = context.tenant ?? "";
    const owner = this.ownerOf(context);
    const state = params.status !== undefined && params.status !== TaskState.TASK_STATE_UNSPECIFIED ? boardState(params.status) : undefined;
    let tasks: Task[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.client.listRecords(this.board, { limit: 500, ...(state !== undefined ? { state } : {}), ...(cursor ? { cursor } : {}) });
      for (const rec of page.items) {
        const p = payloadOf(rec);
        if (p?.tenant === tenant && p.owner === owner) tasks.push(Task.fromJSON(p.task));
      }
      cursor = page.next ?? undefined;
    } while (cursor);
    // the same filters, order and page token as the SDK's InMemoryTaskStore
    if (params.contextId) tasks = tasks.filter((t) => t.contextId === params.contextId);
    if (params.statusTimestampAfter) {
      const after = new Date(params.statusTimestampAfter).getTime();
      tasks = tasks.filter((t) => t.status?.timestamp !== undefined && new Date(t.status.timestamp).getTime() > after);
    }
    const ts = (t: Task): string => t.status?.timestamp ?? "";
    tasks.sort((a, b) => (ts(b) !== ts(a) ? ts(b).localeCompare(ts(a)) : b.id.localeCompare(a.id)));
    const totalSize = tasks.length;
    if (params.pageToken) {
      const [stamp, ...rest] = Buffer.from(params.pageToken, "base64").toString("utf-8").split("|");
      const i = tasks.findIndex((t) => ts(t) === stamp && t.id === rest.join("|"));
      tasks = i >= 0 ? tasks.slice(i + 1) : [];
    }
    const pageSize = params.pageSize ?? DEFAULT_PAGE_SIZE;
    const page = tasks.slice(0, pageSize);
    const last = page[page.length - 1];
    return {
      tasks: page.map((t) => (params.includeArtifacts ? t : { ...t, artifacts: [] })),
      nextPageToken: last !== undefined && tasks.length > page.length ? Buffer.from(`${ts(last)}|${last.id}`).toString("base64") : "",
      pageSize,
      totalSize,
    };
  }

  /**
   * Holds a `submitted` task for this replica: the board's claim moves its record
   * to `held` with a new fence and a TTL (the task itself stays `submitted`), and
   * this store's writes carry the fence from then on. Until the task ends every
   * other replica's write is refused (TaskHeldError: 423 claimed); a claim that
   * runs out (no heartbeat within ttlMs) sends the record back to `submitted`, and
   * the old holder's next write is refused (stale fence).
   */
  async hold(taskId: string, context: ServerCallContext, holder: string, ttlMs?: number): Promise<{ fence: number }> {
    await this.ready();
    const id = this.recordId(taskId, context);
    const a = await this.client.request<{ record: BoardRecord; fence: number }>({
      method: "POST", path: `/v1/boards/${encodeURIComponent(this.board)}/records/${encodeURIComponent(id)}/claim`,
      body: { holder, ...(ttlMs !== undefined ? { ttl_ms: ttlMs } : {}) }, idempotent: true,
    }).catch(async (e: unknown) => {
      if (e instanceof InvalidTransitionError && e.fields.state === HELD) {
        const rec = await this.client.getRecord(this.board, id);
        throw new TaskHeldError(taskId, rec.owner ?? "");
      }
      if (e instanceof InvalidTransitionError) throw new IllegalTransitionError(taskId, e.fields.state ?? "", HELD);
      if (e instanceof ClaimedError) throw new TaskHeldError(taskId, e.fields.owner);
      throw e;
    });
    this.held.set(id, a.fence);
    this.remember(id, a.record, true);
    return { fence: a.fence };
  }

  /** Extends this replica's hold on a task (the claim's heartbeat). */
  async heartbeat(taskId: string, context: ServerCallContext, ttlMs?: number): Promise<void> {
    const id = this.recordId(taskId, context);
    const fence = this.held.get(id);
    if (fence === undefined) throw new TaskHeldError(taskId, "");
    try {
      await this.client.heartbeat(this.board, id, fence, ttlMs);
    } catch (e) {
      if (e instanceof StaleFenceError || e instanceof ClaimExpiredError) { this.held.delete(id); throw new TaskHeldError(taskId, ""); }
      throw e;
    }
  }

  private ready(): Promise<void> {
    this.checked ??= checkTaskBoard(this.client, this.board).catch((e: unknown) => { this.checked = undefined; throw e; });
    return this.checked;
  }

  /** Creates the record; an id the board already has answers 200 with that record (fresh false). */
  private async create(id: string, payload: Payload): Promise<{ fresh: boolean; seen: Seen }> {
    const a = await this.client.http.do<BoardRecord>({
      method: "POST", path: `/v1/boards/${encodeURIComponent(this.board)}/records`, body: { id, payload }, idempotent: true,
    });
    const s = this.remember(id, a.body, true);
    if (s === undefined) throw new TaskStoreError(`record ${id} on board ${this.board} is not an A2A task record`);
    return { fresh: a.status === 201, seen: s };
  }

  private async read(id: string): Promise<Seen | undefined> {
    try {
      return this.remember(id, await this.client.getRecord(this.board, id), false);
    } catch (e) {
      if (e instanceof RecordNotFoundError) return undefined;
      throw e;
    }
  }

  /** rec as a Seen; kept as the record's fallback base when this store wrote it, or has none since its last write. */
  private remember(id: string, rec: BoardRecord, wrote: boolean): Seen | undefined {
    const p = payloadOf(rec);
    if (p === undefined) return undefined;
    const s: Seen = { revision: rec.revision, state: rec.state, task: p.task };
    const kept = this.seen.get(id);
    this.seen.delete(id);
    this.seen.set(id, wrote || kept === undefined || kept.revision > s.revision ? s : kept);
    if (this.seen.size > this.cacheSize) {
      const oldest = this.seen.keys().next();
      if (!oldest.done) this.seen.delete(oldest.value);
    }
    return s;
  }
}

const TERMINAL = new Set<string>(["completed", "canceled", "failed", "rejected"]);

function sha(s: string): string {
  return createHash("sha256").update(s).digest("hex");
}

function payloadOf(rec: BoardRecord): Payload | undefined {
  const p = rec.payload as Partial<Payload> | null;
  if (p === null || typeof p !== "object" || p.v !== 1 || typeof p.task !== "object") return undefined;
  return p as Payload;
}

/** The board state a task's JSON form names. */
function stateOf(task: Obj): A2AState {
  const status = task["status"] as { state?: unknown } | undefined;
  return boardState(status?.state === undefined ? undefined : taskStateFromJSON(status.state));
}
