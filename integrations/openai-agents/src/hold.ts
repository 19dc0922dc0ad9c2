// SessionHold: the session's lease held for a run. It renews itself every
// ttl/3; writes made while it is held carry its fence, so once another
// holder takes the session over (a higher fence) they are refused by the
// database, not only by this process's view. Loss (a refused renewal, a
// stale_fence answer, or no renewal before the lease ran out) aborts
// `signal`, and every later write rejects with SessionLeaseLostError
// without a call.

import { LeaseLostError, type Client } from "@promptd/client";
import { SessionLeaseLostError } from "./errors.js";

export class SessionHold {
  readonly sessionId: string;
  readonly holder: string;
  readonly fence: number;
  readonly token: string;
  private readonly client: Client;
  private readonly ttlMs: number;
  private readonly ac = new AbortController();
  private timer: ReturnType<typeof setInterval> | undefined;
  private validUntil: number;
  private renewing = false;
  private lostErr: SessionLeaseLostError | undefined;
  private isReleased = false;

  /** @internal Made by PromptdSession.hold(). */
  constructor(client: Client, sessionId: string, holder: string, l: { token: string; fence: number }, ttlMs: number, sentAt: number) {
    this.client = client;
    this.sessionId = sessionId;
    this.holder = holder;
    this.fence = l.fence;
    this.token = l.token;
    this.ttlMs = ttlMs;
    this.validUntil = sentAt + ttlMs; // from when the acquire was sent: never later than the server's view
    this.timer = setInterval(() => void this.renew(), Math.max(30, Math.floor(ttlMs / 3)));
    this.timer.unref();
  }

  /** Aborts when the lease is lost (pass it to run() to stop the run). */
  get signal(): AbortSignal {
    return this.ac.signal;
  }
  get lostError(): SessionLeaseLostError | undefined {
    return this.lostErr;
  }
  /** True once release() was called. */
  get released(): boolean {
    return this.isReleased;
  }
  /** True until released or lost. */
  get active(): boolean {
    return !this.isReleased && this.lostErr === undefined;
  }

  /** @internal Marks the lease lost (once): stops renewing, aborts the signal. */
  markLost(detail: string, cause?: unknown): SessionLeaseLostError {
    if (this.lostErr) return this.lostErr;
    this.lostErr = new SessionLeaseLostError(this.sessionId, detail, cause);
    this.stop();
    this.ac.abort(this.lostErr);
    return this.lostErr;
  }

  private stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  private async renew(): Promise<void> {
    if (this.renewing || !this.active) return;
    if (Date.now() >= this.validUntil) {
      this.markLost("it ran out before a renewal succeeded");
      return;
    }
    this.renewing = true;
    const sent = Date.now();
    try {
      await this.client.renewSessionLease(this.sessionId, this.token, this.ttlMs, { signal: AbortSignal.timeout(Math.max(50, this.validUntil - sent)) });
      this.validUntil = sent + this.ttlMs;
    } catch (err) {
      if (err instanceof LeaseLostError) this.markLost("the renewal was refused: taken over or expired", err);
      else if (Date.now() >= this.validUntil) this.markLost("it ran out while renewals failed", err);
      // Otherwise transient: the next tick tries again.
    } finally {
      this.renewing = false;
    }
  }

  /** Frees the lease (with a fresh signal). A lease already lost is not an error. */
  async release(): Promise<void> {
    if (this.isReleased) return;
    this.isReleased = true;
    this.stop();
    if (this.lostErr) return;
    try {
      await this.client.releaseSessionLease(this.sessionId, this.token, { signal: AbortSignal.timeout(5000) });
    } catch (err) {
      if (!(err instanceof LeaseLostError)) throw err;
    }
  }
}
