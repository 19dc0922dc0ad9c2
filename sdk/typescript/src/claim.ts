// Board claims held by a heartbeat (the Go client's ClaimAndHold /
// HeldClaim / ClaimLoop, Python's `with client.claim(...)`).
//
// A HeldClaim heartbeats every ttl/3, each heartbeat bounded by ttl/4 and
// by the deadline. The claim is certainly valid until the last successful
// claim or heartbeat was *sent* plus the TTL (the server counts it from
// when it answered); the deadline is that less a margin of ttl/5. Past
// the deadline with no heartbeat through, or at once on a heartbeat
// promptd refused (stale_fence: released or reclaimed and taken by
// another; claim_expired; record gone), the claim is lost: its signal
// aborts with a LeaseLostError (cause: promptd's answer, if any), writes
// through it reject with that error without a call, and withClaim rejects
// with it. A write that leaves the record unowned (a terminal state, the
// claim's from state) ends the claim: the heartbeat stops and the signal
// aborts with a ClaimEndedError, which is not a loss.

import type { Client } from "./client.js";
import { PromptdError, LeaseLostError, StaleFenceError, ClaimExpiredError, InvalidTransitionError, leaseLost } from "./errors.js";
import { TransportError, sleep, type CallOptions } from "./http.js";
import type { Board, BoardRecord } from "./types.js";

export interface ClaimOptions {
  /** Who claims (the record's owner while held). */
  holder: string;
  /** Claim TTL, ms (default: the board's claim.ttl_ms). Heartbeat every ttl/3. */
  ttlMs?: number;
  /** How long the claim may wait for a record, ms (claimAndHold/withClaim: 0; claimLoop: 10000). */
  waitMs?: number;
  minPriority?: number;
  /** Cancels the claim request; once held, its abort stops the heartbeat and aborts the claim's signal with the same reason. */
  signal?: AbortSignal;
  traceparent?: string;
  /** Called once when the claim is lost. */
  onLost?: (err: LeaseLostError) => void;
}

/** The reason a HeldClaim's signal aborts when its holder ended the claim (a write that ends it, release, stop): not a loss. */
export class ClaimEndedError extends Error {
  constructor(message = "promptd: the claim was ended by its holder") {
    super(message);
    this.name = "ClaimEndedError";
  }
}

type Phase = "held" | "ended" | "lost" | "cancelled";

/** A non-temporary promptd answer: a retry cannot change it (Go's !Error.Temporary()). */
function refusal(err: unknown): err is PromptdError {
  return err instanceof PromptdError && err.status < 500 && err.status !== 429;
}

/** A board claim kept alive by a heartbeat. Writes through it carry its fence. */
export class HeldClaim {
  readonly board: string;
  readonly id: string;
  readonly fence: number;
  readonly holder: string;
  /** The TTL the heartbeat keeps, ms (the claim answer's claim_ttl_ms). */
  readonly ttlMs: number;
  private readonly client: Client;
  private readonly ac = new AbortController();
  /** Aborts an in-flight heartbeat when the claim ends. */
  private readonly stopper = new AbortController();
  private rec: BoardRecord;
  private phase: Phase = "held";
  private lostErr: LeaseLostError | undefined;
  private deadlineAt: number;
  private nextTimer: ReturnType<typeof setTimeout> | undefined;
  private deadlineTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly traceparent: string | undefined;
  private readonly onLost: ((err: LeaseLostError) => void) | undefined;
  private readonly parent: AbortSignal | undefined;
  private readonly onParentAbort = (): void => { this.finish("cancelled", this.parent?.reason); };
  private beats = 0;
  private machine: Board | undefined;

  /** Holds a claim just granted; its TTL counted from sentAt (when the claim was sent). */
  constructor(client: Client, board: string, claim: { record: BoardRecord; fence: number }, sentAt: number, o: ClaimOptions) {
    this.client = client;
    this.board = board;
    this.id = claim.record.id;
    this.fence = claim.fence;
    this.holder = o.holder;
    this.rec = claim.record;
    const t = claim.record.claim_ttl_ms;
    this.ttlMs = t !== null && t !== undefined && t > 0 ? t : Math.max(1, o.ttlMs ?? 30_000);
    this.deadlineAt = sentAt + this.ttlMs - this.ttlMs / 5;
    this.traceparent = o.traceparent;
    this.onLost = o.onLost;
    this.parent = o.signal;
    if (this.parent?.aborted) {
      this.finish("cancelled", this.parent.reason);
      return;
    }
    this.parent?.addEventListener("abort", this.onParentAbort, { once: true });
    this.armDeadline();
    this.schedule(this.ttlMs / 3);
  }

  /** Aborts when the claim is lost (LeaseLostError), ended by its holder (ClaimEndedError), or the caller's signal aborted (its reason). */
  get signal(): AbortSignal {
    return this.ac.signal;
  }
  /** The record as of the claim or the holder's last write. */
  get record(): BoardRecord {
    return this.rec;
  }
  get lost(): boolean {
    return this.phase === "lost";
  }
  get lostError(): LeaseLostError | undefined {
    return this.lostErr;
  }
  /** The holder ended the claim (a write that left the record unowned, release, stop). */
  get ended(): boolean {
    return this.phase === "ended";
  }
  /** Still held: neither lost, nor ended, nor cancelled by the caller's signal. */
  get held(): boolean {
    return this.phase === "held";
  }
  /** Heartbeats that succeeded. */
  get heartbeats(): number {
    return this.beats;
  }

  /** Marks the claim lost (idempotent; a no-op once it ended otherwise): aborts the signal, stops the heartbeat. */
  markLost(detail: string, cause?: unknown): void {
    if (this.phase !== "held") return;
    const err = leaseLost(`board ${this.board}, record ${this.id}: ${detail}`);
    if (cause !== undefined) Object.defineProperty(err, "cause", { value: cause });
    this.lostErr = err;
    this.finish("lost", err);
    this.onLost?.(err);
  }

  private finish(phase: Exclude<Phase, "held">, reason: unknown): void {
    if (this.phase !== "held") return;
    this.phase = phase;
    if (this.nextTimer !== undefined) clearTimeout(this.nextTimer);
    if (this.deadlineTimer !== undefined) clearTimeout(this.deadlineTimer);
    this.nextTimer = this.deadlineTimer = undefined;
    this.parent?.removeEventListener("abort", this.onParentAbort);
    this.stopper.abort(reason);
    this.ac.abort(reason);
  }

  private armDeadline(): void {
    if (this.deadlineTimer !== undefined) clearTimeout(this.deadlineTimer);
    this.deadlineTimer = setTimeout(() => {
      this.markLost("no heartbeat succeeded within the claim's TTL");
    }, Math.max(0, this.deadlineAt - Date.now()));
    this.deadlineTimer.unref?.();
  }

  private schedule(ms: number): void {
    if (this.phase !== "held") return;
    this.nextTimer = setTimeout(() => void this.beat(), Math.max(1, ms));
    this.nextTimer.unref?.();
  }

  private async beat(): Promise<void> {
    this.nextTimer = undefined;
    if (this.phase !== "held") return;
    const sent = Date.now();
    const bound = Math.max(1, Math.min(this.ttlMs / 4, this.deadlineAt - sent));
    const signal = AbortSignal.any([this.stopper.signal, AbortSignal.timeout(bound)]);
    try {
      await this.client.heartbeat(this.board, this.id, this.fence, this.ttlMs, this.opts({ signal }));
      if (this.phase !== "held") return;
      this.beats++;
      this.deadlineAt = sent + this.ttlMs - this.ttlMs / 5;
      this.armDeadline();
      this.schedule(this.ttlMs / 3);
    } catch (err) {
      if (this.phase !== "held") return;
      if (refusal(err)) this.markLost(`a heartbeat was refused (${err.code})`, err); // promptd said no
      else if (Date.now() >= this.deadlineAt) this.markLost("no heartbeat succeeded within the claim's TTL", err);
      else this.schedule(this.ttlMs / 6); // unreachable, 5xx, timeout: try again sooner
    }
  }

  private opts(o?: CallOptions): CallOptions {
    const out: CallOptions = { ...o };
    if (this.traceparent !== undefined && out.traceparent === undefined) out.traceparent = this.traceparent;
    return out;
  }

  /**
   * A fenced compare-and-set write of the record: its revision as of the
   * last write, the claim's fence. Rejects with the lost error without a
   * call once lost; a stale_fence or claim_expired answer marks the claim
   * lost. An answer whose record has no owner (a terminal state, the
   * claim's from state) ends the claim.
   */
  async update(u: { state?: string; payload?: unknown }, o?: CallOptions): Promise<BoardRecord> {
    if (this.lostErr) throw this.lostErr;
    let r: BoardRecord;
    try {
      r = await this.client.updateRecord(this.board, this.id, {
        expectedRevision: this.rec.revision, fence: this.fence,
        ...(u.state !== undefined ? { state: u.state } : {}), ...(u.payload !== undefined ? { payload: u.payload } : {}),
      }, this.opts(o));
    } catch (err) {
      if (err instanceof StaleFenceError || err instanceof ClaimExpiredError) this.markLost(`a write was refused (${err.code})`, err);
      throw err;
    }
    if (r.revision >= this.rec.revision) this.rec = r;
    if (r.owner === null || r.owner === "") this.finish("ended", new ClaimEndedError());
    return r;
  }

  /**
   * Finishes the record: writes `state` (done) with `payload`, fenced. When
   * the board's machine (read once per claim) has no direct transition from
   * the record's state (claimed -> done on the default board, pending ->
   * claimed -> running -> done | failed), the states between are written
   * first, each fenced (claimed -> running -> done). A machine with no such
   * path rejects with InvalidTransitionError naming the missing step,
   * writing nothing. The final write ends the claim.
   */
  async complete(payload?: unknown, state = "done", o?: CallOptions): Promise<BoardRecord> {
    if (this.lostErr) throw this.lostErr;
    this.machine ??= await this.client.getBoard(this.board, this.opts(o));
    const steps = stepsTo(this.machine, this.board, this.rec.state, state);
    for (const step of steps.slice(0, -1)) await this.update({ state: step }, o);
    return this.update({ state, ...(payload !== undefined ? { payload } : {}) }, o);
  }

  /** complete(payload, "failed"): through running when the machine needs it. */
  fail(payload?: unknown, state = "failed", o?: CallOptions): Promise<BoardRecord> {
    return this.complete(payload, state, o);
  }

  /** Stops the heartbeat and leaves the claim to expire (the signal aborts with ClaimEndedError). */
  stop(): void {
    this.finish("ended", new ClaimEndedError());
  }

  /**
   * Stops the heartbeat and hands the record back (with a fresh signal,
   * never the claim's). Resolves with the released record, or null when
   * there was nothing to hand back: the claim was lost (not an error), or
   * a write already ended it.
   */
  async release(o?: CallOptions): Promise<BoardRecord | null> {
    const wasLost = this.phase === "lost";
    if (this.phase === "ended" && (this.rec.owner === null || this.rec.owner === "")) return null;
    this.finish("ended", new ClaimEndedError());
    try {
      const r = await this.client.releaseRecord(this.board, this.id, this.fence,
        this.opts({ signal: AbortSignal.timeout(Math.max(this.ttlMs, 5000)), ...o }));
      this.rec = r;
      return r;
    } catch (err) {
      // Lost meanwhile (released, reclaimed, taken): nothing to hand back.
      if (wasLost || err instanceof StaleFenceError || err instanceof ClaimExpiredError) return null;
      throw err;
    }
  }
}

/** Entering state ends a claim: the claim's from state, reclaim_to, or a terminal state. */
function endsClaim(m: Board, state: string): boolean {
  return state === m.claim.from || state === m.claim.reclaim_to || m.terminal.includes(state);
}

/**
 * The writes that take a claimed record from `from` to `to`: `[to]` when
 * the machine has the transition, else the shortest chain through states
 * that keep the claim (["running", "done"] from claimed on the default
 * board). None: InvalidTransitionError naming the missing step.
 */
export function stepsTo(m: Board, board: string, from: string, to: string): string[] {
  const next = (s: string): string[] => m.transitions[s] ?? [];
  if (from === to || next(from).includes(to)) return [to];
  const seen = new Set([from]);
  const queue: [string, string[]][] = [[from, []]];
  for (let item = queue.shift(); item !== undefined; item = queue.shift()) {
    const [state, steps] = item;
    for (const n of next(state)) {
      if (n === to) return [...steps, to];
      if (!seen.has(n) && !endsClaim(m, n)) {
        seen.add(n);
        queue.push([n, [...steps, n]]);
      }
    }
  }
  const allowed = next(from).join(", ") || "none";
  throw new InvalidTransitionError(409, "invalid_transition",
    `board ${board}: no path ${from} -> ${to} in its machine that keeps the claim (from ${from} it allows: ${allowed}); ` +
    `the board's transitions need the missing step ${from} -> ${to} (or a state between them)`,
    { state: from, to, board });
}

/** Claims the next record of board and holds it; null when none came within waitMs (204). */
export async function claimAndHold(client: Client, board: string, o: ClaimOptions): Promise<HeldClaim | null> {
  let sent = Date.now();
  const c = await client.claimNext(board, {
    holder: o.holder,
    ...(o.ttlMs !== undefined ? { ttlMs: o.ttlMs } : {}),
    ...(o.waitMs !== undefined ? { waitMs: o.waitMs } : {}),
    ...(o.minPriority !== undefined ? { minPriority: o.minPriority } : {}),
  }, { ...(o.signal ? { signal: o.signal } : {}), ...(o.traceparent ? { traceparent: o.traceparent } : {}) });
  if (c === null) return null;
  if ((o.waitMs ?? 0) > 0) sent = Date.now(); // the grant may have come at the end of the wait (the margin covers the answer's way back)
  return new HeldClaim(client, board, c, sent, o);
}

/**
 * Claims the next record of board (null when none came within waitMs),
 * runs work under the claim, and releases the record when work threw or
 * left the claim open. When the claim was lost, rejects with its
 * LeaseLostError (cause: promptd's answer, if any).
 */
export async function withClaim<T>(
  client: Client, board: string, o: ClaimOptions,
  work: (claim: HeldClaim, signal: AbortSignal) => Promise<T>,
): Promise<T | null> {
  const held = await claimAndHold(client, board, o);
  if (held === null) return null;
  let failed = false;
  try {
    const out = await work(held, held.signal);
    if (held.lostError) throw held.lostError;
    return out;
  } catch (err) {
    failed = true;
    if (held.lostError && !(err instanceof LeaseLostError)) throw held.lostError;
    throw err;
  } finally {
    if (!held.lost && (failed || !held.ended)) await held.release().catch(() => undefined);
    else held.stop();
  }
}

export interface ClaimLoopOptions extends ClaimOptions {
  /** Ends the loop (it then resolves); aborts the current claim's signal. */
  signal: AbortSignal;
  /** Called with what work threw, before its record is handed back (the loop goes on). Default: none. */
  onWorkError?: (err: unknown, claim: HeldClaim) => void;
}

/**
 * Claims records of board one after another and runs work on each under a
 * HeldClaim until signal aborts (then resolves). work writes its result
 * with claim.update (to a state that ends the claim, such as done); when
 * work throws, or leaves the claim open, the record is released for
 * another claimer. Each claim waits up to waitMs (default 10 s). Over the
 * quota (429) the loop waits for Retry-After; while promptd cannot be
 * reached, a second between tries; an answer a retry cannot fix
 * (forbidden, board_not_found, ...) rejects the loop with it.
 */
export async function claimLoop(
  client: Client, board: string, o: ClaimLoopOptions,
  work: (claim: HeldClaim, signal: AbortSignal) => Promise<unknown>,
): Promise<void> {
  const { signal } = o;
  const opts: ClaimOptions = { ...o, waitMs: o.waitMs !== undefined && o.waitMs > 0 ? o.waitMs : 10_000 };
  const pause = (ms: number): Promise<void> => sleep(ms, signal).catch(() => undefined);
  while (!signal.aborted) {
    let held: HeldClaim | null;
    try {
      held = await claimAndHold(client, board, opts);
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof PromptdError && !refusal(err)) {
        await pause(Math.max(err.retryAfterMs ?? 0, 100)); // 429 quota_exceeded, 5xx
        continue;
      }
      if (err instanceof TransportError) {
        await pause(1000); // promptd unreachable (after the client's own retries)
        continue;
      }
      throw err;
    }
    if (held === null) continue;
    let failed = false;
    try {
      await work(held, held.signal);
    } catch (err) {
      failed = true;
      try {
        o.onWorkError?.(err, held);
      } catch {
        // a throwing callback must not end the loop with the record held
      }
    }
    if (!held.lost && (failed || !held.ended)) await held.release().catch(() => undefined);
    else held.stop();
  }
}
