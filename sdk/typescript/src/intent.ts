// withIntent: register an intent, do the work under it, release it. The
// intent renews itself at ~ttl/3; writes through it (applyBatch,
// updateRecord) carry its id and fence, which promptd checks in the write's
// transaction. When it ends under the work (a renewal answered stale_fence:
// released by another, or expired; or no renewal succeeded before its TTL
// ran out) renewing stops, the work's signal aborts with that
// StaleFenceError, writes through it reject with it without a call, and
// withIntent rejects with it. The release at the end runs with a fresh
// signal, never the caller's (it may be the one that aborted).

import type { BatchInput, Client, IntentInput, RecordUpdate } from "./client.js";
import { StaleFenceError } from "./errors.js";
import type { CallOptions } from "./http.js";
import type { BoardBatch, BoardRecord, Intent, IntentRef, RegisteredIntent } from "./types.js";

export interface IntentOptions extends IntentInput {
  /** Cancels the registration; once held, cancels the work (the intent is still released). */
  signal?: AbortSignal;
  traceparent?: string;
  /** Called once when the intent ends under the work. */
  onLost?: (err: StaleFenceError) => void;
}

/** A registered intent kept alive by renewals. Writes through it carry its ref. */
export class HeldIntent {
  /** The registration's answer: the intent and the live intents that overlap it. */
  readonly intent: RegisteredIntent;
  private readonly client: Client;
  private readonly ac = new AbortController();
  private lostErr: StaleFenceError | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;
  private validUntil: number;
  private readonly ttlMs: number;
  private readonly traceparent: string | undefined;
  private readonly onLost: ((err: StaleFenceError) => void) | undefined;
  private renewing = false;
  private renewCount = 0;

  constructor(client: Client, registered: RegisteredIntent, sentAt: number, o: IntentOptions) {
    this.client = client;
    this.intent = registered;
    this.ttlMs = registered.ttl_ms > 0 ? registered.ttl_ms : (o.ttlMs ?? 30_000);
    this.validUntil = sentAt + this.ttlMs; // from when the registration was sent: never later than the server's view
    this.traceparent = o.traceparent;
    this.onLost = o.onLost;
  }

  get id(): string {
    return this.intent.id;
  }
  get fence(): number {
    return this.intent.fence;
  }
  /** What a write under the intent names. */
  get ref(): IntentRef {
    return { id: this.intent.id, fence: this.intent.fence };
  }
  /** The live intents whose scope overlapped it when it was registered. */
  get overlaps(): Intent[] {
    return this.intent.overlaps;
  }
  /** Renewals that went through. */
  get renewals(): number {
    return this.renewCount;
  }
  /** Aborts (with the StaleFenceError) when the intent ends under the work. */
  get signal(): AbortSignal {
    return this.ac.signal;
  }
  get lost(): boolean {
    return this.lostErr !== undefined;
  }
  get lostError(): StaleFenceError | undefined {
    return this.lostErr;
  }

  /** Marks the intent ended (once): stops renewing, aborts the signal. */
  markLost(err: StaleFenceError): void {
    if (this.lostErr) return;
    this.lostErr = err;
    this.stop();
    this.ac.abort(err);
    this.onLost?.(err);
  }

  /** Starts renewing every ttl/3. */
  start(): void {
    const every = Math.max(30, Math.floor(this.ttlMs / 3));
    this.timer = setInterval(() => void this.renew(), every);
    this.timer.unref?.();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  private ranOut(detail: string): StaleFenceError {
    return new StaleFenceError(0, "stale_fence", `intent ${this.id}: ${detail}`, { current_fence: this.fence, intent_id: this.id, state: "expired" });
  }

  private async renew(): Promise<void> {
    if (this.renewing || this.lostErr) return;
    if (Date.now() >= this.validUntil) {
      this.markLost(this.ranOut("its TTL ran out before a renewal succeeded"));
      return;
    }
    this.renewing = true;
    const sent = Date.now();
    try {
      await this.client.renewIntent(this.id, this.fence, this.ttlMs, { signal: AbortSignal.timeout(Math.max(50, this.validUntil - sent)), ...this.opts() });
      this.validUntil = sent + this.ttlMs;
      this.renewCount++;
    } catch (err) {
      if (err instanceof StaleFenceError) this.markLost(err);
      else if (Date.now() >= this.validUntil) this.markLost(this.ranOut("its TTL ran out while renewals failed"));
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

  /** A write under the intent: rejects without a call once it ended; a stale_fence naming it marks it ended. */
  private async write<T>(f: () => Promise<T>): Promise<T> {
    if (!this.lostErr && Date.now() >= this.validUntil) this.markLost(this.ranOut("its TTL ran out before a renewal succeeded"));
    if (this.lostErr) throw this.lostErr;
    try {
      return await f();
    } catch (err) {
      if (err instanceof StaleFenceError && err.fields.intent_id === this.id) this.markLost(err);
      throw err;
    }
  }

  applyBatch(board: string, b: Omit<BatchInput, "intent">, o?: CallOptions): Promise<BoardBatch> {
    return this.write(() => this.client.applyBatch(board, { ...b, intent: this.ref }, this.opts(o)));
  }
  updateRecord(board: string, id: string, u: Omit<RecordUpdate, "intent">, o?: CallOptions): Promise<BoardRecord> {
    return this.write(() => this.client.updateRecord(board, id, { ...u, intent: this.ref }, this.opts(o)));
  }

  /** Ends the intent (a fresh signal); answers it as it ended. */
  async release(): Promise<Intent> {
    this.stop();
    return this.client.releaseIntent(this.id, this.fence, { signal: AbortSignal.timeout(5000), ...this.opts() });
  }
}

/** Registers an intent and starts renewing it. */
export async function registerHeldIntent(client: Client, o: IntentOptions): Promise<HeldIntent> {
  const { signal, traceparent, onLost: _onLost, ...input } = o;
  const sent = Date.now();
  const registered = await client.registerIntent(input, { ...(signal ? { signal } : {}), ...(traceparent ? { traceparent } : {}) });
  const held = new HeldIntent(client, registered, sent, o);
  held.start();
  return held;
}

/**
 * Runs work under an intent: registered (IntentConflictError when an overlap its
 * mode excludes), renewed every ttl/3, released at the end. Rejects with the
 * StaleFenceError when the intent ended under the work.
 */
export async function withIntent<T>(client: Client, o: IntentOptions, work: (intent: HeldIntent, signal: AbortSignal) => Promise<T>): Promise<T> {
  const held = await registerHeldIntent(client, o);
  const signal = o.signal ? AbortSignal.any([held.signal, o.signal]) : held.signal;
  try {
    const out = await work(held, signal);
    if (held.lostError) throw held.lostError;
    return out;
  } catch (err) {
    if (held.lostError && err !== held.lostError) throw held.lostError;
    throw err;
  } finally {
    held.stop();
    if (!held.lost) await held.release().catch(() => undefined);
  }
}
