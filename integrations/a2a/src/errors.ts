// The store's typed errors: callers test them with instanceof, never by message.

/** The base of every error the task store throws itself (promptd's own errors pass through as @promptd/client's). */
export class TaskStoreError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** A save asked for a state change the board's machine does not allow (the server answered 409 invalid_transition). */
export class IllegalTransitionError extends TaskStoreError {
  constructor(readonly taskId: string, readonly from: string, readonly to: string) {
    super(`task ${taskId}: ${from} -> ${to} is not a transition of the A2A task machine`);
  }
}

/**
 * A save lost a race with another replica's write to the same task: with
 * `onConflict: "refuse"` at once, with `"merge"` after its retries ran out.
 * Nothing was written by this save; `currentRevision` is the record's revision now.
 */
export class TaskConflictError extends TaskStoreError {
  constructor(readonly taskId: string, readonly currentRevision: number, readonly attempts: number) {
    super(`task ${taskId}: another replica wrote it first (record revision ${currentRevision}); ${attempts} attempt(s), nothing written`);
  }
}

/** The task is held by another replica's claim (423 claimed, or a fence that is no longer current). */
export class TaskHeldError extends TaskStoreError {
  constructor(readonly taskId: string, readonly owner: string) {
    super(`task ${taskId} is held by ${owner || "another replica"}; only its holder writes it`);
  }
}

/** The board is missing or does not have the A2A machine. */
export class BoardMachineError extends TaskStoreError {
  constructor(readonly board: string, detail: string) {
    super(`board ${board}: ${detail}`);
  }
}
