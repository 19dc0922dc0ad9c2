// app: and user: state: each scope is a promptd session of its own (one per
// app, one per app and user) whose state entries hold one ADK key each. A
// write is a compare-and-set on the entry's revision as the ADK Session read
// it, so two sessions of one user that both change user:cart conflict
// instead of one silently overwriting the other.

import { RevisionConflictError, SessionExistsError, SessionNotFoundError, type Client, type JSONValue } from "@promptd/client";
import { StateConflictError } from "./errors.js";
import { toJSON } from "./events.js";
import { entryKey } from "./keys.js";

/** The longest idle TTL promptd takes (30 days): scope sessions are touched by every write. */
export const SCOPE_IDLE_TTL_MS = 30 * 24 * 3600 * 1000;

/** One scope session: where it is and who it belongs to. */
export interface Scope {
  kind: "app" | "user";
  /** The promptd session id. */
  id: string;
  agent: string;
  env: string;
  /** The ADK user (user scopes). */
  userId?: string;
}

/** A scope's entries as read: ADK key (no prefix) -> value, and entry key -> revision. */
export interface ScopeRead {
  values: Record<string, unknown>;
  revisions: Map<string, number>;
}

interface StoredEntry {
  key: string;
  value: JSONValue;
}

function isStored(v: unknown): v is StoredEntry {
  return typeof v === "object" && v !== null && typeof (v as { key?: unknown }).key === "string" && "value" in v;
}

/** Reads a scope's entries (a scope never written reads as empty). */
export async function readScope(client: Client, scope: Scope): Promise<ScopeRead> {
  const out: ScopeRead = { values: {}, revisions: new Map() };
  let entries;
  try {
    entries = await client.getState(scope.id);
  } catch (err) {
    if (err instanceof SessionNotFoundError) return out;
    throw err;
  }
  for (const [ek, e] of Object.entries(entries)) {
    out.revisions.set(ek, e.revision);
    if (isStored(e.value)) Object.defineProperty(out.values, e.value.key, { value: e.value.value, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** Creates the scope session unless it exists (promptd answers an identical create with the existing one). */
export async function ensureScope(client: Client, scope: Scope): Promise<void> {
  try {
    await client.createSession({
      agent: scope.agent, env: scope.env, sessionId: scope.id,
      ...(scope.userId !== undefined ? { userId: scope.userId } : {}),
      metadata: { adk_scope: scope.kind }, idleTtlMs: SCOPE_IDLE_TTL_MS,
    });
  } catch (err) {
    if (err instanceof SessionExistsError) {
      throw new Error(`the promptd session ${scope.id} that holds ${scope.kind}: state is closed or belongs to another agent/env`, { cause: err });
    }
    throw err;
  }
}

/**
 * Writes key = value at the revision read (0: the key was absent). A newer
 * revision is StateConflictError. Returns the entry's new revision.
 */
export async function writeScopeKey(client: Client, scope: Scope, key: string, value: unknown, expectedRevision: number): Promise<number> {
  const ek = entryKey(key);
  const put = (): Promise<{ revision: number }> => client.putState(scope.id, ek, { key, value: toJSON(value) }, { expectedRevision });
  try {
    return (await put()).revision;
  } catch (err) {
    if (err instanceof SessionNotFoundError) {
      await ensureScope(client, scope);
      try {
        return (await put()).revision;
      } catch (err2) {
        throw conflict(scope, key, expectedRevision, err2);
      }
    }
    throw conflict(scope, key, expectedRevision, err);
  }
}

function conflict(scope: Scope, key: string, expectedRevision: number, err: unknown): unknown {
  if (!(err instanceof RevisionConflictError)) return err;
  const cur = err.fields["current_revision"];
  return new StateConflictError(scope.kind, `${scope.kind}:${key}`, expectedRevision, typeof cur === "number" ? cur : undefined, err);
}

/** A blind write (createSession's initial state): re-reads the revision on a conflict, up to 5 times. */
export async function setScopeKey(client: Client, scope: Scope, key: string, value: unknown): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const read = await readScope(client, scope);
    try {
      return await writeScopeKey(client, scope, key, value, read.revisions.get(entryKey(key)) ?? 0);
    } catch (err) {
      if (!(err instanceof StateConflictError) || attempt >= 5) throw err;
    }
  }
}
