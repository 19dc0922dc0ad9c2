// withSessionLease: hold a session lease while work runs. The lease renews
// itself at ~ttl/3; writes through it carry its fence; when it is lost
// (renewal refused, a write answered stale_fence, or no renewal succeeded
// before it ran out) the work's signal aborts, writes through it reject with
// LeaseLostError without a call, and withSessionLease rejects with
// LeaseLostError. The release at the end runs with a fresh signal, never the
// caller's (it may be the one that aborted).

import type { Client } from "./client.js";
import { PromptdError, LeaseLostError, RevisionConflictError, StaleFenceError, leaseLost } from "./errors.js";
import type { CallOptions } from "./http.js";
import type { JSONValue, Lease, NewTurn, Session, StateEntry } from "./types.js";

export interface SessionLeaseOptions {
  /** Lease TTL, ms (default 5000). Renewed every ttl/3. */
  ttlMs?: number;
  /** How to meet another holder: reject (default), wait up to waitMs, or preempt. */
  mode?: "reject" | "wait" | "preempt";
  waitMs?: number;
  /** Cancels the work and releases the lease. */
  signal?: AbortSignal;
  traceparent?: string;
  /** Called once when the lease is lost. */
  onLost?: (err: LeaseLostError) => void;
}

/** A held session lease. Writes through it carry its fence. */
export class HeldLease {
  readonly sessionId: string;
  readonly leaseId: string;
  readonly token: string;
  readonly fence: number;
  private readonly client: Client;
  private readonly ac = new AbortController();
  private lostErr: LeaseLostError | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;
  private validUntil: number;
  private readonly ttlMs: number;
  private readonly traceparent: string | undefined;
  private readonly onLost: ((err: LeaseLostError) => void) | undefined;

  constructor(client: Client, sessionId: string, l: Lease, ttlMs: number, sentAt: number, o: SessionLeaseOptions) {
    this.client = client;
    this.sessionId = sessionId;
    this.leaseId = l.lease_id;
    this.token = l.token;
    this.fence = l.fence;
    this.ttlMs = ttlMs;
    this.validUntil = sentAt + ttlMs; // measured from when the acquire was sent: never later than the server's view
    this.traceparent = o.traceparent;
    this.onLost = o.onLost;
  }

  /** Aborts when the lease is lost. */
  get signal(): AbortSignal {
    return this.ac.signal;
  }
  get lost(): boolean {
    return this.lostErr !== undefined;
  }
  get lostError(): LeaseLostError | undefined {
    return this.lostErr;
  }

  /** Marks the lease lost (idempotent): aborts the signal, stops renewing. */
  markLost(detail: string, cause?: unknown): void {
    if (this.lostErr) return;
    const err = leaseLost(detail);
    if (cause !== undefined) Object.defineProperty(err, "cause", { value: cause });
    this.lostErr = err;
    this.stop();
    this.ac.abort(err);
    this.onLost?.(err);
  }

  /** Starts the keepalive (renew every ttl/3). */
  start(): void {
    const every = Math.max(30, Math.floor(this.ttlMs / 3));
    this.timer = setInterval(() => void this.renew(), every);
    this.timer.unref?.();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  private renewing = false;
  private async renew(): Promise<void> {
    if (this.renewing || this.lostErr) return;
    if (Date.now() >= this.validUntil) {
      this.markLost("the lease ran out before a renewal succeeded");
      return;
    }
    this.renewing = true;
    const sent = Date.now();
    try {
      await this.client.renewSessionLease(this.sessionId, this.token, this.ttlMs, {
        signal: AbortSignal.timeout(Math.max(50, this.validUntil - sent)),
        ...this.opts(),
      });
      this.validUntil = sent + this.ttlMs;
    } catch (err) {
      if (err instanceof LeaseLostError) this.markLost("renewal refused: the lease was taken over or expired", err);
      else if (Date.now() >= this.validUntil) this.markLost("the lease ran out while renewals failed", err);
      // Otherwise a transient failure: the next tick tries again.
    } finally {
      this.renewing = false;
    }
  }

  private opts(o?: CallOptions): CallOptions {
    const out: CallOptions = { ...o };
    if (this.traceparent !== undefined && out.traceparent === undefined) out.traceparent = this.traceparent;
    return out;
  }

  /** Runs a fenced write: rejects without a call once lost; a stale_fence answer marks the lease lost. */
  private async write<T>(f: () => Promise<T>): Promise<T> {
    if (this.lostErr) throw this.lostErr;
    try {
      return await f();
    } catch (err) {
      if (err instanceof StaleFenceError || err instanceof LeaseLostError) this.markLost("a write was refused: another holder has a higher fence", err);
      throw err;
    }
  }

  appendTurns(turns: NewTurn[], expectedRevision: number, o?: CallOptions): Promise<{ revision: number; seqs: number[] }> {
    return this.write(() => this.client.appendTurns(this.sessionId, turns, { expectedRevision, fence: this.fence }, this.opts(o)));
  }
  putState(key: string, value: unknown, expectedRevision: number, o?: CallOptions): Promise<{ key: string; revision: number }> {
    return this.write(() => this.client.putState(this.sessionId, key, value, { expectedRevision, fence: this.fence }, this.opts(o)));
  }
  getState<V = JSONValue>(keys?: string[], o?: CallOptions): Promise<Record<string, StateEntry<V>>> {
    return this.client.getState<V>(this.sessionId, keys, this.opts(o));
  }
  close(expectedRevision: number, o?: CallOptions): Promise<Session> {
    return this.write(() => this.client.closeSession(this.sessionId, { expectedRevision, fence: this.fence }, this.opts(o)));
  }
  /** Appends with the lease's fence, re-reading the revision on revision_conflict. */
  appendOptimistic(build: (s: Session) => NewTurn[] | Promise<NewTurn[]>, o?: CallOptions & { maxAttempts?: number }): Promise<{ revision: number; seqs: number[] }> {
    return this.write(() => appendOptimistic(this.client, this.sessionId, build, { ...this.opts(o), fence: this.fence, ...(o?.maxAttempts ? { maxAttempts: o.maxAttempts } : {}) }));
  }

  /** Frees the lease (a fresh signal; a lease already lost is not an error). */
  async release(): Promise<void> {
    this.stop();
    try {
      await this.client.releaseSessionLease(this.sessionId, this.token, { signal: AbortSignal.timeout(5000), ...this.opts() });
    } catch (err) {
      if (!(err instanceof LeaseLostError)) throw err;
    }
  }
}

/** Acquires a held lease with its keepalive started. */
export async function acquireHeldLease(client: Client, sessionId: string, holder: string, o: SessionLeaseOptions = {}): Promise<HeldLease> {
  const ttlMs = o.ttlMs ?? 5000;
  const sent = Date.now();
  const l = await client.acquireSessionLease(sessionId, {
    holder, ttlMs, mode: o.mode ?? "reject", ...(o.waitMs !== undefined ? { waitMs: o.waitMs } : {}),
  }, { ...(o.signal ? { signal: o.signal } : {}), ...(o.traceparent ? { traceparent: o.traceparent } : {}) });
  const held = new HeldLease(client, sessionId, l, ttlMs, sent, o);
  held.start();
  return held;
}

export async function withSessionLease<T>(
  client: Client, sessionId: string, holder: string, o: SessionLeaseOptions,
  work: (lease: HeldLease, signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const held = await acquireHeldLease(client, sessionId, holder, o);
  const signal = o.signal ? AbortSignal.any([held.signal, o.signal]) : held.signal;
  try {
    const out = await work(held, signal);
    if (held.lostError) throw held.lostError;
    return out;
  } catch (err) {
    if (held.lostError && !(err instanceof LeaseLostError)) throw held.lostError;
    throw err;
  } finally {
    held.stop();
    if (!held.lost) await held.release().catch(() => undefined);
  }
}

/**
 * Appends the turns build() makes from the current session, with its
 * revision; on revision_conflict re-reads and builds again (up to
 * maxAttempts, default 5). A fence, when given, is sent with every attempt.
 */
export async function appendOptimistic(
  client: Client, sessionId: string, build: (s: Session) => NewTurn[] | Promise<NewTurn[]>,
  o: CallOptions & { fence?: number; maxAttempts?: number } = {},
): Promise<{ revision: number; seqs: number[] }> {
  const max = o.maxAttempts ?? 5;
  const { fence } = o;
  // Each attempt is a new logical call (new revision), so a new Idempotency-Key.
  const call: CallOptions = { ...(o.signal ? { signal: o.signal } : {}), ...(o.traceparent ? { traceparent: o.traceparent } : {}) };
  for (let attempt = 1; ; attempt++) {
    const s = await client.getSession(sessionId, { limit: 1 }, call);
    try {
      return await client.appendTurns(sessionId, await build(s), { expectedRevision: s.revision, ...(fence !== undefined ? { fence } : {}) }, call);
    } catch (err) {
      if (!(err instanceof RevisionConflictError) || attempt >= max) throw err;
    }
  }
}

export { PromptdError };
