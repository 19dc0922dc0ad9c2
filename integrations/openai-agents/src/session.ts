// PromptdSession: the Agents SDK's Session (conversation memory) on a
// promptd session, so any replica can continue a conversation and two runs
// on one conversation cannot fork it.
//
// The rule of every write: it is conditioned on the history its writer last
// saw. The writer is the run (the runner hands every history call of a run
// the same RunContext) or, outside a run, this object. A run's appends carry
// the revision it read at its start (plus its own appends since), so an
// append after anyone else changed the history is refused by promptd's
// `UPDATE ... WHERE revision = ?` and surfaces as SessionConflictError with
// nothing written; it is never retried (the items were made from the older
// history: a retry would fork the conversation). Only writes that depend on
// no read are retried on a fresh revision: a first append by a writer that
// never read, popItem (removes whatever is newest now) and clearSession.
//
// hold() takes the session's lease for a run and keeps it alive: while held,
// writes carry its fence, another holder's hold() fails with
// SessionBusyError (or waits, with waitMs), writes without a lease are
// refused by promptd (423 lease_held -> SessionBusyError), and a holder that
// was taken over gets SessionLeaseLostError.

import { hostname } from "node:os";
import { randomUUID } from "node:crypto";
import type { AgentInputItem, RunContext, RunContextAwareSession } from "@openai/agents";
import {
  acquireHeldLease,
  LeaseHeldError, RevisionConflictError, StaleFenceError,
  type Client, type JSONValue, type NewTurn,
} from "@promptd/client";
import { SessionBusyError, SessionConflictError, SessionLeaseLostError } from "./errors.js";
import { SessionHold } from "./hold.js";
import { History, clearTurn, itemTurn, popTurn } from "./turns.js";

export interface PromptdSessionOptions {
  /** A @promptd/client Client with a runtime token. */
  client: Client;
  /** The promptd session id; default a new one (`oa-<uuid>`). */
  sessionId?: string;
  /** With env: the session is created on first use when missing (pinning the version resolved now). */
  agent?: string;
  env?: string;
  userId?: string;
  metadata?: Record<string, JSONValue>;
  /** The lease holder's name; default `openai-agents/<host>/<pid>/<random>`. */
  holder?: string;
  /** Lease TTL for hold(), ms (default 10000, 100..60000); renewed every ttl/3. */
  leaseTtlMs?: number;
  /** Attempts of the writes that are retried on a fresh revision (default 5). */
  maxAttempts?: number;
}

export interface HoldOptions {
  ttlMs?: number;
  /** Wait up to this long (0..30000 ms) for the current holder to release; default 0: fail at once. */
  waitMs?: number;
  /** Take the session over from its holder (its later writes are refused). */
  preempt?: boolean;
}

/** promptd's append takes 1..100 turns. */
const MAX_TURNS_PER_APPEND = 100;
/** promptd's page size limit. */
const PAGE = 500;

export class PromptdSession implements RunContextAwareSession {
  readonly acceptsRunContext = true as const;
  readonly sessionId: string;
  readonly holder: string;
  private readonly client: Client;
  private readonly o: PromptdSessionOptions;
  private created: Promise<void> | undefined;
  private readonly history = new History();
  /** The revision each writer (a run's RunContext, or this object) last saw. */
  private readonly seen = new WeakMap<object, number>();
  private held: SessionHold | undefined;
  private lock: Promise<unknown> = Promise.resolve();

  constructor(o: PromptdSessionOptions) {
    if ((o.agent === undefined) !== (o.env === undefined)) throw new TypeError("PromptdSession: give agent and env together (or neither, for an existing session)");
    if (o.sessionId === undefined && o.agent === undefined) throw new TypeError("PromptdSession: a new session needs agent and env");
    this.o = o;
    this.client = o.client;
    this.sessionId = o.sessionId ?? `oa-${randomUUID()}`;
    this.holder = o.holder ?? `openai-agents/${hostname()}/${String(process.pid)}/${randomUUID().slice(0, 8)}`;
  }

  async getSessionId(): Promise<string> {
    await this.ensure();
    return this.sessionId;
  }

  /**
   * The newest `limit` live items (all without it), oldest first. In a run
   * the first read fixes what the run's appends are conditioned on.
   */
  async getItems(limit?: number, runContext?: RunContext): Promise<AgentInputItem[]> {
    const { live, revision } = await this.refresh();
    const writer = runContext ?? this;
    if (runContext === undefined || !this.seen.has(writer)) this.seen.set(writer, revision);
    if (limit !== undefined && limit <= 0) return [];
    const from = limit === undefined ? 0 : Math.max(0, live.length - limit);
    return live.slice(from).map((l) => structuredClone(l.item));
  }

  /**
   * Appends the items (one turn each) at the revision the writer last saw:
   * SessionConflictError, with nothing written, when the history changed
   * since. Up to 100 items are one atomic append; more are several appends,
   * atomic together only under hold().
   */
  async addItems(items: AgentInputItem[], runContext?: RunContext): Promise<void> {
    if (items.length === 0) return;
    await this.ensure();
    const writer = runContext ?? this;
    const turns = items.map(itemTurn);
    let expected = this.seen.get(writer);
    const blind = expected === undefined; // nothing this writer made depends on a read: safe to retry
    const max = this.o.maxAttempts ?? 5;
    for (let attempt = 1; ; attempt++) {
      expected ??= (await this.refresh()).revision;
      try {
        const next = await this.append(turns, expected);
        this.seen.set(writer, next);
        // This object had seen everything before a run's append through it: it has seen it all after it too.
        if (writer !== this && this.seen.get(this) === expected) this.seen.set(this, next);
        return;
      } catch (err) {
        if (!(err instanceof RevisionConflictError)) throw err;
        if (!blind || attempt >= max) throw new SessionConflictError(this.sessionId, expected, err.fields.current_revision, err);
        expected = undefined;
      }
    }
  }

  /**
   * Removes and returns the newest item (a tombstone turn naming it: promptd
   * keeps every turn). Concurrent pops remove distinct items: a pop that
   * lost the race re-reads and removes what is newest then.
   */
  async popItem(runContext?: RunContext): Promise<AgentInputItem | undefined> {
    return this.retried(runContext, (live) => {
      const last = live.at(-1);
      return last === undefined ? undefined : { turn: popTurn(last.seq), out: structuredClone(last.item) };
    });
  }

  /** Removes every item (a tombstone turn: what came before it is not history any more). */
  async clearSession(runContext?: RunContext): Promise<void> {
    await this.retried(runContext, (live) => (live.length === 0 ? undefined : { turn: clearTurn(), out: undefined }));
  }

  /**
   * Takes the session's lease and keeps it alive until released: the writes
   * of this object carry its fence from now on. SessionBusyError when
   * another holder has it (after waitMs, when given).
   */
  async hold(h: HoldOptions = {}): Promise<SessionHold> {
    if (this.held?.active) throw new Error(`PromptdSession ${this.sessionId} is already held by this object`);
    await this.ensure();
    const ttlMs = h.ttlMs ?? this.o.leaseTtlMs ?? 10_000;
    const waitMs = h.waitMs ?? 0;
    let hold: SessionHold | undefined;
    try {
      const lease = await acquireHeldLease(this.client, this.sessionId, this.holder, {
        ttlMs, mode: h.preempt ? "preempt" : waitMs > 0 ? "wait" : "reject", ...(waitMs > 0 ? { waitMs } : {}),
        onLost: SessionHold.watch(() => hold),
      });
      hold = new SessionHold(lease, this.holder);
      this.held = hold;
      return hold;
    } catch (err) {
      throw this.translate(err);
    }
  }

  /** hold(), fn, then release (also when fn throws); rejects with SessionLeaseLostError when the lease was lost meanwhile. */
  async withHold<T>(fn: (hold: SessionHold) => Promise<T>, h: HoldOptions = {}): Promise<T> {
    const hold = await this.hold(h);
    try {
      const out = await fn(hold);
      if (hold.lostError) throw hold.lostError;
      return out;
    } finally {
      await hold.release().catch(() => undefined);
      if (this.held === hold) this.held = undefined;
    }
  }

  /** The current hold (also when lost, until released), if any. */
  get currentHold(): SessionHold | undefined {
    return this.held?.released ? undefined : this.held;
  }

  // Internals.

  private ensure(): Promise<void> {
    const { agent, env } = this.o;
    if (agent === undefined || env === undefined) return Promise.resolve();
    this.created ??= this.client.createSession({
      agent, env, sessionId: this.sessionId,
      ...(this.o.userId !== undefined ? { userId: this.o.userId } : {}),
      ...(this.o.metadata !== undefined ? { metadata: this.o.metadata } : {}),
    }).then(() => undefined, (err: unknown) => {
      this.created = undefined; // the next call tries again
      throw err;
    });
    return this.created;
  }

  /** Runs f alone on this object (reads of the shared cache stay consistent). */
  private exclusive<T>(f: () => Promise<T>): Promise<T> {
    const run = this.lock.then(f, f);
    this.lock = run.catch(() => undefined);
    return run;
  }

  /** Reads the turns after the last one seen and replays them; a snapshot of the history. */
  private refresh(): Promise<{ live: History["live"]; revision: number }> {
    return this.exclusive(async () => {
      await this.ensure();
      let since = this.history.seq;
      for (;;) {
        // Each page is one snapshot of the row and the turns: its revision covers exactly the turns up to it.
        const s = await this.client.getSession(this.sessionId, { since, limit: PAGE });
        this.history.apply(s.turns ?? []);
        this.history.revision = s.revision;
        if (s.next_since === null || s.next_since === undefined) break;
        since = s.next_since;
      }
      return { live: [...this.history.live], revision: this.history.revision };
    });
  }

  /** The fence writes carry now; throws when the hold was lost (never a silent unfenced write). */
  private fence(): number | undefined {
    const h = this.held;
    if (h === undefined) return undefined;
    if (h.released) {
      this.held = undefined;
      return undefined;
    }
    if (h.lostError) throw h.lostError; // until released: never a silent unfenced write
    return h.fence;
  }

  /** Appends turns at expected (in chunks of 100); the new revision. A raw RevisionConflictError only when nothing was written. */
  private async append(turns: NewTurn[], expected: number): Promise<number> {
    let revision = expected;
    for (let i = 0; i < turns.length; i += MAX_TURNS_PER_APPEND) {
      const fence = this.fence();
      try {
        const r = await this.client.appendTurns(this.sessionId, turns.slice(i, i + MAX_TURNS_PER_APPEND), {
          expectedRevision: revision, ...(fence !== undefined ? { fence } : {}),
        });
        revision = r.revision;
      } catch (err) {
        if (i > 0 && err instanceof RevisionConflictError) {
          throw new SessionConflictError(this.sessionId, revision, err.fields.current_revision, new Error(`${String(i)} of ${String(turns.length)} items were written before the conflict`, { cause: err }));
        }
        throw this.translate(err);
      }
    }
    return revision;
  }

  /** A write made from a fresh read, retried on a fresh revision when someone wrote in between. */
  private async retried<T>(runContext: RunContext | undefined, make: (live: History["live"]) => { turn: NewTurn; out: T } | undefined): Promise<T | undefined> {
    await this.ensure();
    const max = this.o.maxAttempts ?? 5;
    for (let attempt = 1; ; attempt++) {
      const { live, revision } = await this.refresh();
      const w = make(live);
      if (w === undefined) return undefined;
      try {
        const next = await this.append([w.turn], revision);
        // A writer that had seen everything before this write has seen it all after it too.
        for (const writer of [this, runContext]) {
          if (writer !== undefined && this.seen.get(writer) === revision) this.seen.set(writer, next);
        }
        return w.out;
      } catch (err) {
        if (!(err instanceof RevisionConflictError)) throw err;
        if (attempt >= max) throw new SessionConflictError(this.sessionId, revision, err.fields.current_revision, err);
      }
    }
  }

  /** promptd's lease errors as this package's. */
  private translate(err: unknown): unknown {
    if (err instanceof LeaseHeldError) return new SessionBusyError(this.sessionId, err.fields.holder, err.fields.expires_at, err);
    if (err instanceof StaleFenceError) return this.held ? this.held.markLost("a write was refused: another holder has a higher fence", err) : new SessionLeaseLostError(this.sessionId, "stale fence", err);
    return err;
  }
}
