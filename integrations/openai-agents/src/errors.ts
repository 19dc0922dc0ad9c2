// Typed errors of PromptdSession. Each carries what the caller needs to
// decide (the revisions, the other holder); the promptd error that caused
// it is the `cause`.

/** The base of every error PromptdSession raises on purpose. */
export class PromptdSessionError extends Error {
  readonly sessionId: string;
  constructor(sessionId: string, message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = new.target.name;
    this.sessionId = sessionId;
  }
}

/**
 * The history changed after this run (or this session object) read it:
 * another writer appended, popped or cleared. Nothing of this write was
 * stored. Retrying the same items would fork the conversation (they were
 * made from the older history), so PromptdSession never does it: read
 * again (getItems) and decide.
 */
export class SessionConflictError extends PromptdSessionError {
  /** The revision the write was based on. */
  readonly expectedRevision: number;
  /** The session's revision when the write was refused. */
  readonly currentRevision: number | undefined;
  constructor(sessionId: string, expectedRevision: number, currentRevision: number | undefined, cause?: unknown) {
    super(sessionId, `promptd session ${sessionId} changed since it was read (revision ${String(expectedRevision)}, now ${String(currentRevision ?? "unknown")}): nothing was written`, cause);
    this.expectedRevision = expectedRevision;
    this.currentRevision = currentRevision;
  }
}

/** Another holder has the session's lease: a run on another replica (or object) holds it. */
export class SessionBusyError extends PromptdSessionError {
  /** The other holder, as it named itself. */
  readonly holder: string | undefined;
  readonly expiresAt: string | undefined;
  constructor(sessionId: string, holder: string | undefined, expiresAt: string | undefined, cause?: unknown) {
    super(sessionId, `promptd session ${sessionId} is held by ${holder ?? "another holder"}${expiresAt ? ` until ${expiresAt}` : ""}`, cause);
    this.holder = holder;
    this.expiresAt = expiresAt;
  }
}

/** The lease this session held was taken over or ran out: its writes are refused. */
export class SessionLeaseLostError extends PromptdSessionError {
  constructor(sessionId: string, detail: string, cause?: unknown) {
    super(sessionId, `promptd session ${sessionId}: the lease was lost (${detail}); writes through it are refused`, cause);
  }
}
