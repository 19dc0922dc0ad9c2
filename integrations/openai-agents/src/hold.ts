// SessionHold: the session's lease held for a run, on @promptd/client's
// HeldLease (its keepalive renews every ttl/3 and marks the lease lost on a
// refused renewal or when it runs out). Writes made while it is held carry
// its fence, so once another holder takes the session over (a higher
// fence) they are refused by the database, not only by this process's
// view. Loss aborts `signal` with a SessionLeaseLostError, and every later
// write rejects with it without a call.

import type { HeldLease } from "@promptd/client";
import { SessionLeaseLostError } from "./errors.js";

export class SessionHold {
  readonly sessionId: string;
  readonly holder: string;
  readonly fence: number;
  readonly token: string;
  private readonly lease: HeldLease;
  private readonly ac = new AbortController();
  private lostErr: SessionLeaseLostError | undefined;
  private isReleased = false;

  /** @internal Made by PromptdSession.hold() around an acquired HeldLease (before it can be lost: see watch). */
  constructor(lease: HeldLease, holder: string) {
    this.lease = lease;
    this.sessionId = lease.sessionId;
    this.holder = holder;
    this.fence = lease.fence;
    this.token = lease.token;
  }

  /** @internal The HeldLease's onLost: its loss is this hold's. */
  static watch(get: () => SessionHold | undefined): (err: Error) => void {
    return (err) => { get()?.markLost(err.message, err); };
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
    this.lease.markLost(detail, cause);
    this.ac.abort(this.lostErr);
    return this.lostErr;
  }

  /** Frees the lease (with a fresh signal). A lease already lost is not an error. */
  async release(): Promise<void> {
    if (this.isReleased) return;
    this.isReleased = true;
    this.lease.stop();
    if (this.lostErr) return;
    await this.lease.release();
  }
}
