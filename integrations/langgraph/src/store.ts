// PromptdStore: a LangGraph BaseStore on one promptd session's state
// entries. Every item is one entry (key: a hash of namespace and key), so
// every item has a revision, and a put can be conditional on it:
// store.put(ns, key, value, { expectedRevision }) or a batch put operation
// carrying expectedRevision. A mismatch is StoreRevisionConflictError with
// the item's current revision (0: absent). Without expectedRevision a put
// or delete is last-writer-wins (read the revision, write on it, retry on a
// conflict). A deleted item is a tombstone entry (value null): its key can be
// put again (expectedRevision 0 means "absent").

import { createHash } from "node:crypto";
import {
  BaseStore, validateNamespace,
  type GetOperation, type Item, type ListNamespacesOperation, type MatchCondition, type Operation, type OperationResults,
  type PutOperation, type SearchItem, type SearchOperation,
} from "@langchain/langgraph-checkpoint";
import { RevisionConflictError, SessionNotFoundError, type Client, type StateEntry } from "@promptd/client";
import { StoreRevisionConflictError } from "./errors.js";

export interface PromptdStoreOptions {
  client: Client;
  /** The agent and env of the store's session (the env must have a pointer). */
  agent: string;
  env: string;
  /** The session holding the items (default "lg-store"); stores with another session id are separate. */
  sessionId?: string;
}

/** An item with its revision (the session state entry's). */
export interface StoreItem extends Item {
  revision: number;
}

export interface PutOptions {
  /** The revision the item must have now for the put to apply (0: the item must not exist). */
  expectedRevision?: number;
  /** Accepted for compatibility; this store has no vector index. */
  index?: false | string[];
}

/** A batch put carrying a revision condition. */
export interface ConditionalPutOperation extends PutOperation {
  expectedRevision?: number;
}

interface StoredItem {
  ns: string[];
  key: string;
  value: Record<string, unknown>;
  created_at: string;
  updated_at: string;
}

type Entries = Record<string, StateEntry<StoredItem | null>>;

const entryKey = (ns: string[], key: string): string => "i." + createHash("sha256").update(JSON.stringify([ns, key])).digest("hex").slice(0, 48);

function toItem(s: StoredItem, revision: number): StoreItem {
  return { namespace: s.ns, key: s.key, value: s.value, createdAt: new Date(s.created_at), updatedAt: new Date(s.updated_at), revision };
}

/** The filter operators of LangGraph's stores ($eq, $ne, $gt, $gte, $lt, $lte, $in, $nin) or plain equality. */
function matches(v: unknown, f: unknown): boolean {
  if (typeof f === "object" && f !== null && !Array.isArray(f)) {
    const ops = Object.entries(f as Record<string, unknown>);
    if (ops.length > 0 && ops.every(([k]) => k.startsWith("$"))) {
      return ops.every(([op, x]) => {
        switch (op) {
          case "$eq": return v === x;
          case "$ne": return v !== x;
          case "$gt": return Number(v) > Number(x);
          case "$gte": return Number(v) >= Number(x);
          case "$lt": return Number(v) < Number(x);
          case "$lte": return Number(v) <= Number(x);
          case "$in": return Array.isArray(x) && x.includes(v);
          case "$nin": return Array.isArray(x) && !x.includes(v);
          default: throw new Error(`PromptdStore: unsupported filter operator ${op}`);
        }
      });
    }
  }
  if (typeof f === "object" && f !== null) return JSON.stringify(v) === JSON.stringify(f);
  return v === f;
}

function nsMatches(c: MatchCondition, ns: string[]): boolean {
  if (c.path.length > ns.length) return false;
  const off = c.matchType === "prefix" ? 0 : ns.length - c.path.length;
  return c.path.every((p, i) => p === "*" || ns[off + i] === p);
}

export class PromptdStore extends BaseStore {
  readonly client: Client;
  readonly agent: string;
  readonly env: string;
  readonly sessionId: string;
  private created = false;

  constructor(o: PromptdStoreOptions) {
    super();
    this.client = o.client;
    this.agent = o.agent;
    this.env = o.env;
    this.sessionId = o.sessionId ?? "lg-store";
  }

  private async ensureSession(): Promise<void> {
    if (this.created) return;
    await this.client.createSession({ agent: this.agent, env: this.env, sessionId: this.sessionId });
    this.created = true;
  }

  private async entries(keys?: string[]): Promise<Entries> {
    try {
      return await this.client.getState<StoredItem | null>(this.sessionId, keys);
    } catch (err) {
      if (err instanceof SessionNotFoundError) return {};
      throw err;
    }
  }

  override async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    const out: unknown[] = [];
    for (const op of operations) {
      if ("namespacePrefix" in op) out.push(await this.searchOp(op));
      else if ("value" in op) {
        await this.putOp(op);
        out.push(undefined);
      }
      else if ("key" in op) out.push(await this.getOp(op));
      else out.push(await this.listOp(op));
    }
    return out as OperationResults<Op>;
  }

  override async get(namespace: string[], key: string): Promise<StoreItem | null> {
    return this.getOp({ namespace, key });
  }

  /**
   * Puts an item. With options.expectedRevision the put applies only if the
   * item has that revision now (0: absent), else StoreRevisionConflictError.
   */
  override async put(namespace: string[], key: string, value: Record<string, unknown>, options?: false | string[] | PutOptions): Promise<void> {
    validateNamespace(namespace);
    const o = typeof options === "object" && !Array.isArray(options) ? options : {};
    await this.putOp({ namespace, key, value, ...(o.expectedRevision !== undefined ? { expectedRevision: o.expectedRevision } : {}) });
  }

  /** Deletes an item; with options.expectedRevision only if it has that revision now. */
  override async delete(namespace: string[], key: string, options: { expectedRevision?: number } = {}): Promise<void> {
    await this.putOp({ namespace, key, value: null, ...(options.expectedRevision !== undefined ? { expectedRevision: options.expectedRevision } : {}) });
  }

  private async getOp(op: GetOperation): Promise<StoreItem | null> {
    const k = entryKey(op.namespace, op.key);
    const e = (await this.entries([k]))[k];
    return e?.value ? toItem(e.value, e.revision) : null;
  }

  /** The item's revision as users see it: 0 when absent or deleted. */
  private async visibleRevision(k: string): Promise<{ visible: number; entry: number; item: StoredItem | null }> {
    const e = (await this.entries([k]))[k];
    return { visible: e?.value ? e.revision : 0, entry: e?.revision ?? 0, item: e?.value ?? null };
  }

  private async putOp(op: ConditionalPutOperation): Promise<void> {
    await this.ensureSession();
    const k = entryKey(op.namespace, op.key);
    for (let attempt = 1; ; attempt++) {
      const cur = await this.visibleRevision(k);
      if (op.expectedRevision !== undefined && cur.visible !== op.expectedRevision) {
        throw new StoreRevisionConflictError(op.namespace, op.key, op.expectedRevision, cur.visible);
      }
      if (op.value === null && cur.item === null) return; // deleting what is absent
      const now = new Date().toISOString();
      const value: StoredItem | null = op.value === null ? null : {
        ns: op.namespace, key: op.key, value: op.value as Record<string, unknown>, created_at: cur.item?.created_at ?? now, updated_at: now,
      };
      try {
        // The entry's revision is the condition: the database checks it, so of two writers from one revision one wins.
        await this.client.putState(this.sessionId, k, value, { expectedRevision: cur.entry });
        return;
      } catch (err) {
        if (!(err instanceof RevisionConflictError)) throw err;
        if (op.expectedRevision !== undefined) {
          throw new StoreRevisionConflictError(op.namespace, op.key, op.expectedRevision, (await this.visibleRevision(k)).visible);
        }
        if (attempt >= 5) throw err;
      }
    }
  }

  private async live(): Promise<StoreItem[]> {
    return Object.values(await this.entries()).filter((e) => e.value !== null).map((e) => toItem(e.value!, e.revision));
  }

  private async searchOp(op: SearchOperation): Promise<SearchItem[]> {
    const p = op.namespacePrefix;
    const items = (await this.live())
      .filter((i) => p.every((x, n) => i.namespace[n] === x))
      .filter((i) => !op.filter || Object.entries(op.filter).every(([k, f]) => matches(i.value[k], f)))
      .sort((a, b) => b.updatedAt.getTime() - a.updatedAt.getTime() || (a.key < b.key ? -1 : 1));
    const offset = op.offset ?? 0;
    return items.slice(offset, offset + (op.limit ?? 10));
  }

  private async listOp(op: ListNamespacesOperation): Promise<string[][]> {
    let all = (await this.live()).map((i) => i.namespace);
    if (op.matchConditions?.length) all = all.filter((ns) => op.matchConditions!.every((c) => nsMatches(c, ns)));
    if (op.maxDepth !== undefined) all = all.map((ns) => ns.slice(0, op.maxDepth));
    const uniq = [...new Map(all.map((ns) => [JSON.stringify(ns), ns])).values()].sort((a, b) => a.join(":").localeCompare(b.join(":")));
    return uniq.slice(op.offset, op.offset + op.limit);
  }
}
