// The typed errors of the session service: a write that lost a race is
// refused, never applied over the winner's.

/**
 * Another writer appended to the promptd session after this ADK Session was
 * read: its event (and the state delta it carries) was not written. Re-read
 * the session (getSession) and run again, or serialize runs with
 * PromptdSessionService.runExclusive.
 */
export class SessionConflictError extends Error {
  readonly sessionId: string;
  /** The revision this Session object was read at. */
  readonly expectedRevision: number;
  /** The promptd session's revision now (when the server said). */
  readonly currentRevision: number | undefined;

  constructor(sessionId: string, expectedRevision: number, currentRevision: number | undefined, cause?: unknown) {
    super(`session ${sessionId} changed since it was read (read at revision ${expectedRevision}, now ${currentRevision ?? "newer"}): event not appended`);
    this.name = "SessionConflictError";
    this.sessionId = sessionId;
    this.expectedRevision = expectedRevision;
    this.currentRevision = currentRevision;
    if (cause !== undefined) Object.defineProperty(this, "cause", { value: cause });
  }
}

/**
 * An `app:` or `user:` key changed (from another session of the app or user)
 * since this Session read it: the event was not appended. The keys of the
 * same event written before this one stay written (promptd writes state
 * entries one at a time; each is a compare-and-set on its own revision).
 */
export class StateConflictError extends Error {
  readonly scope: "app" | "user";
  /** The ADK state key, with its prefix (`user:cart`). */
  readonly key: string;
  readonly expectedRevision: number;
  readonly currentRevision: number | undefined;

  constructor(scope: "app" | "user", key: string, expectedRevision: number, currentRevision: number | undefined, cause?: unknown) {
    super(`state key ${key} changed since it was read (read at revision ${expectedRevision}, now ${currentRevision ?? "newer"}): event not appended`);
    this.name = "StateConflictError";
    this.scope = scope;
    this.key = key;
    this.expectedRevision = expectedRevision;
    this.currentRevision = currentRevision;
    if (cause !== undefined) Object.defineProperty(this, "cause", { value: cause });
  }
}
