// Typed errors of @promptd/langgraph. A run that cannot write to its thread
// fails with a ThreadLeaseError: ThreadBusyError when another run holds the
// thread (lease_held), CheckpointFencedError when this run was fenced out
// (stale_fence: another run took the thread over, or the thread moved on
// since this run read it). The store's conditional put fails with
// StoreRevisionConflictError naming the item's current revision.

export type ThreadLeaseCode = "lease_held" | "stale_fence";

/** A run could not write to its thread: the thread belongs to another run. */
export class ThreadLeaseError extends Error {
  readonly code: ThreadLeaseCode;
  readonly threadId: string;
  constructor(code: ThreadLeaseCode, threadId: string, message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = new.target.name;
    this.code = code;
    this.threadId = threadId;
  }
}

/** Another run holds the thread's lease (lease_held); nothing was written. */
export class ThreadBusyError extends ThreadLeaseError {
  /** The holder promptd named, when it named one. */
  readonly holder: string | undefined;
  readonly expiresAt: string | undefined;
  constructor(threadId: string, detail: string, o: { holder?: string | undefined; expiresAt?: string | undefined; cause?: unknown } = {}) {
    super("lease_held", threadId, `thread ${threadId}: ${detail}`, o.cause);
    this.holder = o.holder;
    this.expiresAt = o.expiresAt;
  }
}

/**
 * This run was fenced out of its thread (stale_fence): another run took the
 * thread over, or the thread moved on since this run read it. The write was
 * refused; what the run wrote before stays.
 */
export class CheckpointFencedError extends ThreadLeaseError {
  /** The fence this run wrote with, when it held one. */
  readonly fence: number | undefined;
  /** The thread's fence promptd answered, when it answered one. */
  readonly currentFence: number | undefined;
  constructor(threadId: string, detail: string, o: { fence?: number | undefined; currentFence?: number | undefined; cause?: unknown } = {}) {
    super("stale_fence", threadId, `thread ${threadId}: ${detail}`, o.cause);
    this.fence = o.fence;
    this.currentFence = o.currentFence;
  }
}

/** A conditional store put found another revision of the item. */
export class StoreRevisionConflictError extends Error {
  readonly code = "revision_conflict";
  readonly namespace: string[];
  readonly key: string;
  readonly expectedRevision: number;
  /** The item's revision now (0: the item does not exist). */
  readonly currentRevision: number;
  constructor(namespace: string[], key: string, expectedRevision: number, currentRevision: number) {
    super(`store item ${JSON.stringify([...namespace, key])}: expected revision ${String(expectedRevision)}, current revision ${String(currentRevision)}`);
    this.name = new.target.name;
    this.namespace = namespace;
    this.key = key;
    this.expectedRevision = expectedRevision;
    this.currentRevision = currentRevision;
  }
}
