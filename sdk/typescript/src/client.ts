// Client: one method per route of the contract the SDK uses. Every method
// takes CallOptions last (signal, traceparent, idempotencyKey).

import { Transport, type CallOptions, type TransportOptions, type Request } from "./http.js";
import type {
  AssembleRequest, AssembledPlain, BoardBatch, BoardBatchItem, BoardRecord, Bundle, Caller, Env, ExposureItem, GenericLease,
  Intent, IntentRef, IntentScope, JSONValue, Lease, List, NewTurn, OpenAIChatBody, PromptConfig, RegisteredIntent, Release,
  Resolved, Session, StateEntry, Version,
} from "./types.js";

export type ClientOptions = TransportOptions;

const seg = encodeURIComponent;
const envPath = (agent: string, env: string): string => `/v1/agents/${seg(agent)}/envs/${seg(env)}`;

export interface Assembled<F extends "plain" | "openai"> {
  /** The answer body: the plain shape, or an OpenAI Chat Completions request body. */
  body: F extends "openai" ? OpenAIChatBody : AssembledPlain;
  /** Promptd-Version header: agent/env/version. */
  promptdVersion: string | null;
  /** Promptd-Release header (RFC 8941 dictionary), when a release decided. */
  promptdRelease: string | null;
}

export interface Precondition {
  expectedRevision: number;
  fence?: number;
}

export interface SessionLeaseRequest {
  holder: string;
  ttlMs?: number;
  waitMs?: number;
  mode?: "reject" | "wait" | "preempt";
  token?: string;
}

/** POST /v1/intents, in the client's camelCase. */
export interface IntentInput {
  holder: string;
  scope: IntentScope;
  /** exclusive (default): refused on any overlap; advisory: only on an exclusive one. */
  mode?: "exclusive" | "advisory";
  /** 1,000..3,600,000 (default 30,000). */
  ttlMs?: number;
  description?: string;
}

/** GET /v1/intents: the live intents overlapping this scope (each one name or several). */
export interface IntentQuery {
  agent?: string | string[];
  env?: string | string[];
  board?: string | string[];
  /** `board/id`, or `board/prefix*`. */
  record?: string | string[];
  holder?: string;
  limit?: number;
  cursor?: string;
}

/** A record's compare-and-set (PATCH). */
export interface RecordUpdate {
  expectedRevision: number;
  state?: string;
  payload?: unknown;
  /** While the record is claimed: the claim's fence. */
  fence?: number;
  /** Merge payload over the changes made since expectedRevision (three-way; 409 merge_conflict on an overlap). */
  merge?: boolean;
  /** merge: the payload read at expectedRevision (checked against the kept content hash). */
  basePayload?: unknown;
  /** Write under this intent: its scope (422 outside_intent) and fence (409 stale_fence) are checked. */
  intent?: IntentRef;
}

/** POST /v1/boards/{board}/batches. */
export interface BatchInput {
  items: BoardBatchItem[];
  /** all_or_nothing (default): a failing item writes nothing (409 batch_rejected); partial writes the others. */
  mode?: "all_or_nothing" | "partial";
  intent?: IntentRef;
  batchFingerprint?: string;
}

const names = (v: string | string[] | undefined): string[] | undefined => (v === undefined ? undefined : typeof v === "string" ? [v] : v);

export class Client {
  readonly http: Transport;

  constructor(opts: ClientOptions) {
    this.http = new Transport(opts);
  }

  /** Any route: the escape hatch for what has no method yet. */
  async request<T>(req: Request, opts?: CallOptions): Promise<T> {
    return (await this.http.do<T>(req, opts)).body;
  }

  // Versions and envs.

  /** Version base_version + 1; a newer latest is VersionConflictError, or with merge: true the three-way merge over it (MergeConflictError on an overlap). */
  createVersion(agent: string, v: { base_version: number; config: PromptConfig; message?: string; merge?: boolean }, opts?: CallOptions): Promise<Version> {
    return this.request({ method: "POST", path: `/v1/agents/${seg(agent)}/versions`, body: v, idempotent: true }, opts);
  }
  listVersions(agent: string, opts?: CallOptions): Promise<List<Version>> {
    return this.request({ method: "GET", path: `/v1/agents/${seg(agent)}/versions` }, opts);
  }
  getVersion(agent: string, version: number, opts?: CallOptions): Promise<Version> {
    return this.request({ method: "GET", path: `/v1/agents/${seg(agent)}/versions/${version}` }, opts);
  }
  getEnv(agent: string, env: string, opts?: CallOptions): Promise<Env> {
    return this.request({ method: "GET", path: envPath(agent, env) }, opts);
  }
  putEnv(agent: string, env: string, version: number, expectedRevision: number, opts?: CallOptions): Promise<Env> {
    return this.request({ method: "PUT", path: envPath(agent, env), body: { version, expected_revision: expectedRevision } }, opts);
  }

  // The runtime path.

  resolve(agent: string, env: string, who: Caller = {}, opts?: CallOptions): Promise<Resolved> {
    return this.request({ method: "GET", path: envPath(agent, env) + "/prompt", query: { user_id: who.userId, session_id: who.sessionId } }, opts);
  }

  assemble(agent: string, env: string, req: AssembleRequest, format?: "plain", opts?: CallOptions): Promise<Assembled<"plain">>;
  assemble(agent: string, env: string, req: AssembleRequest, format: "openai", opts?: CallOptions): Promise<Assembled<"openai">>;
  async assemble(agent: string, env: string, req: AssembleRequest, format: "plain" | "openai" = "plain", opts?: CallOptions): Promise<Assembled<"plain" | "openai">> {
    const body: Record<string, unknown> = { variables: req.variables ?? {} };
    if (format !== "plain") body["format"] = format; // plain is the default: older servers take the body as is
    if (req.userId !== undefined) body["user_id"] = req.userId;
    if (req.sessionId !== undefined) body["session_id"] = req.sessionId;
    if (req.history !== undefined) body["history"] = req.history;
    if (req.maxHistoryTurns !== undefined) body["max_history_turns"] = req.maxHistoryTurns;
    const a = await this.http.do<AssembledPlain | OpenAIChatBody>({ method: "POST", path: envPath(agent, env) + "/assemble", body }, opts);
    return { body: a.body, promptdVersion: a.headers.get("promptd-version"), promptdRelease: a.headers.get("promptd-release") };
  }

  // Releases.

  getRelease(id: string, opts?: CallOptions): Promise<Release> {
    return this.request({ method: "GET", path: `/v1/releases/${seg(id)}` }, opts);
  }
  listReleases(agent: string, env: string, opts?: CallOptions): Promise<List<Release>> {
    return this.request({ method: "GET", path: envPath(agent, env) + "/releases" }, opts);
  }
  createRelease(agent: string, env: string, r: { candidate_version: number; percent: number; stickiness?: "user" | "session"; message?: string; [k: string]: unknown }, opts?: CallOptions): Promise<Release> {
    return this.request({ method: "POST", path: envPath(agent, env) + "/releases", body: r, idempotent: true }, opts);
  }
  setReleasePercent(id: string, percent: number, expectedRevision: number, opts?: CallOptions): Promise<Release> {
    return this.request({ method: "PATCH", path: `/v1/releases/${seg(id)}`, body: { percent, expected_revision: expectedRevision } }, opts);
  }
  transitionRelease(id: string, action: "pause" | "resume" | "promote" | "rollback", body: { expected_revision?: number; reason?: string } = {}, opts?: CallOptions): Promise<Release> {
    return this.request({ method: "POST", path: `/v1/releases/${seg(id)}/${action}`, body }, opts);
  }

  // Sessions.

  createSession(s: { agent: string; env: string; session_id?: string; user_id?: string; metadata?: JSONValue; idle_ttl_ms?: number }, opts?: CallOptions): Promise<Session> {
    return this.request({ method: "POST", path: "/v1/sessions", body: s, idempotent: true }, opts);
  }
  getSession(id: string, page: { since?: number; limit?: number } = {}, opts?: CallOptions): Promise<Session> {
    return this.request({ method: "GET", path: `/v1/sessions/${seg(id)}`, query: { since: page.since, limit: page.limit } }, opts);
  }
  appendTurns(id: string, turns: NewTurn[], pre: Precondition, opts?: CallOptions): Promise<{ revision: number; seqs: number[] }> {
    return this.request({ method: "POST", path: `/v1/sessions/${seg(id)}/turns`, body: { expected_revision: pre.expectedRevision, ...fence(pre), turns }, idempotent: true }, opts);
  }
  getState<V = JSONValue>(id: string, keys?: string[], opts?: CallOptions): Promise<Record<string, StateEntry<V>>> {
    return this.request({ method: "GET", path: `/v1/sessions/${seg(id)}/state`, query: { keys: keys?.join(",") } }, opts);
  }
  putState(id: string, key: string, value: unknown, pre: Precondition, opts?: CallOptions): Promise<{ key: string; revision: number }> {
    return this.request({ method: "PUT", path: `/v1/sessions/${seg(id)}/state/${seg(key)}`, body: { value, expected_revision: pre.expectedRevision, ...fence(pre) }, idempotent: true }, opts);
  }
  closeSession(id: string, pre: Precondition, opts?: CallOptions): Promise<Session> {
    return this.request({ method: "POST", path: `/v1/sessions/${seg(id)}/close`, body: { expected_revision: pre.expectedRevision, ...fence(pre) } }, opts);
  }

  // Session leases.

  acquireSessionLease(id: string, r: SessionLeaseRequest, opts?: CallOptions): Promise<Lease> {
    const body: Record<string, unknown> = { holder: r.holder, mode: r.mode ?? "reject" };
    if (r.ttlMs !== undefined) body["ttl_ms"] = r.ttlMs;
    if (r.waitMs !== undefined) body["wait_ms"] = r.waitMs;
    if (r.token !== undefined) body["token"] = r.token;
    return this.request({ method: "POST", path: `/v1/sessions/${seg(id)}/lease`, body, extraTimeoutMs: r.waitMs ?? 0 }, opts);
  }
  renewSessionLease(id: string, token: string, ttlMs: number, opts?: CallOptions): Promise<{ expires_at: string }> {
    return this.request({ method: "POST", path: `/v1/sessions/${seg(id)}/lease/renew`, headers: { "lease-token": token }, body: { ttl_ms: ttlMs } }, opts);
  }
  async releaseSessionLease(id: string, token: string, opts?: CallOptions): Promise<void> {
    await this.request({ method: "DELETE", path: `/v1/sessions/${seg(id)}/lease`, headers: { "lease-token": token } }, opts);
  }

  // Generic leases.

  acquireLeases(resources: string[], holder: string, ttlMs: number, waitMs = 0, opts?: CallOptions): Promise<GenericLease> {
    return this.request({ method: "POST", path: "/v1/leases", body: { resources, holder, ttl_ms: ttlMs, wait_ms: waitMs }, extraTimeoutMs: waitMs }, opts);
  }
  renewLeases(leaseId: string, token: string, ttlMs: number, opts?: CallOptions): Promise<{ expires_at: string }> {
    return this.request({ method: "POST", path: `/v1/leases/${seg(leaseId)}/renew`, headers: { "lease-token": token }, body: { ttl_ms: ttlMs } }, opts);
  }
  async releaseLeases(leaseId: string, token: string, opts?: CallOptions): Promise<void> {
    await this.request({ method: "DELETE", path: `/v1/leases/${seg(leaseId)}`, headers: { "lease-token": token } }, opts);
  }

  // Boards.

  createRecord(board: string, r: { id?: string; payload: unknown; priority?: number; dedupe_key?: string }, opts?: CallOptions): Promise<BoardRecord> {
    return this.request({ method: "POST", path: `/v1/boards/${seg(board)}/records`, body: r, idempotent: true }, opts);
  }
  getRecord(board: string, id: string, opts?: CallOptions): Promise<BoardRecord> {
    return this.request({ method: "GET", path: `/v1/boards/${seg(board)}/records/${seg(id)}` }, opts);
  }
  /** Claims the first claimable record; null when nothing came within waitMs (204). */
  async claimNext(board: string, c: { holder: string; ttlMs?: number; waitMs?: number; minPriority?: number }, opts?: CallOptions): Promise<{ record: BoardRecord; fence: number } | null> {
    const body: Record<string, unknown> = { holder: c.holder };
    if (c.ttlMs !== undefined) body["ttl_ms"] = c.ttlMs;
    if (c.waitMs !== undefined) body["wait_ms"] = c.waitMs;
    if (c.minPriority !== undefined) body["min_priority"] = c.minPriority;
    const a = await this.http.do<{ record: BoardRecord; fence: number }>({ method: "POST", path: `/v1/boards/${seg(board)}/claim`, body, idempotent: true, accept: [204], extraTimeoutMs: c.waitMs ?? 0 }, opts);
    return a.status === 204 ? null : a.body;
  }
  heartbeat(board: string, id: string, fence: number, ttlMs?: number, opts?: CallOptions): Promise<{ revision: number; claim_expires_at: string; claim_ttl_ms: number }> {
    return this.request({ method: "POST", path: `/v1/boards/${seg(board)}/records/${seg(id)}/heartbeat`, body: { fence, ...(ttlMs !== undefined ? { ttl_ms: ttlMs } : {}) } }, opts);
  }
  /** Compare-and-set on a record: a state change (complete, fail) and/or a new payload (merged with merge), with the claim's fence, under an intent. */
  updateRecord(board: string, id: string, u: RecordUpdate, opts?: CallOptions): Promise<BoardRecord> {
    const body: Record<string, unknown> = { expected_revision: u.expectedRevision };
    if (u.state !== undefined) body["state"] = u.state;
    if (u.payload !== undefined) body["payload"] = u.payload;
    if (u.fence !== undefined) body["fence"] = u.fence;
    if (u.merge) body["merge"] = true;
    if (u.basePayload !== undefined) body["base_payload"] = u.basePayload;
    if (u.intent !== undefined) body["intent"] = u.intent;
    return this.request({ method: "PATCH", path: `/v1/boards/${seg(board)}/records/${seg(id)}`, body }, opts);
  }
  /** Creates and updates in one transaction, answered with the commit proof. */
  applyBatch(board: string, b: BatchInput, opts?: CallOptions): Promise<BoardBatch> {
    const body: Record<string, unknown> = { mode: b.mode ?? "all_or_nothing", items: b.items };
    if (b.intent !== undefined) body["intent"] = b.intent;
    if (b.batchFingerprint !== undefined) body["batch_fingerprint"] = b.batchFingerprint;
    return this.request({ method: "POST", path: `/v1/boards/${seg(board)}/batches`, body, idempotent: true }, opts);
  }
  getBatch(board: string, id: string, opts?: CallOptions): Promise<BoardBatch> {
    return this.request({ method: "GET", path: `/v1/boards/${seg(board)}/batches/${seg(id)}` }, opts);
  }

  // Intents.

  /** Registers an intent; an overlap its mode (or theirs) excludes rejects with IntentConflictError naming the others. */
  registerIntent(i: IntentInput, opts?: CallOptions): Promise<RegisteredIntent> {
    const body: Record<string, unknown> = { holder: i.holder, scope: i.scope };
    if (i.mode !== undefined) body["mode"] = i.mode;
    if (i.ttlMs !== undefined) body["ttl_ms"] = i.ttlMs;
    if (i.description !== undefined) body["description"] = i.description;
    return this.request({ method: "POST", path: "/v1/intents", body, idempotent: true }, opts);
  }
  listIntents(q: IntentQuery = {}, opts?: CallOptions): Promise<List<Intent>> {
    return this.request({
      method: "GET", path: "/v1/intents",
      query: { agent: names(q.agent), env: names(q.env), board: names(q.board), record: names(q.record), holder: q.holder, limit: q.limit, cursor: q.cursor },
    }, opts);
  }
  getIntent(id: string, opts?: CallOptions): Promise<Intent> {
    return this.request({ method: "GET", path: `/v1/intents/${seg(id)}` }, opts);
  }
  /** Ended, or another fence: StaleFenceError. */
  renewIntent(id: string, fence: number, ttlMs?: number, opts?: CallOptions): Promise<Intent> {
    return this.request({ method: "POST", path: `/v1/intents/${seg(id)}/renew`, body: { fence, ...(ttlMs !== undefined ? { ttl_ms: ttlMs } : {}) } }, opts);
  }
  releaseIntent(id: string, fence: number, opts?: CallOptions): Promise<Intent> {
    return this.request({ method: "POST", path: `/v1/intents/${seg(id)}/release`, body: { fence } }, opts);
  }
  releaseRecord(board: string, id: string, fence: number, opts?: CallOptions): Promise<BoardRecord> {
    return this.request({ method: "POST", path: `/v1/boards/${seg(board)}/records/${seg(id)}/release`, body: { fence } }, opts);
  }

  // Bundles, exposures, outcomes.

  /** GET /v1/bundle; with etag, `null` means 304 (unchanged). */
  async bundle(filter: { agents?: string[]; envs?: string[] } = {}, etag?: string, opts?: CallOptions): Promise<{ bundle: Bundle; etag: string | null } | null> {
    const a = await this.http.do<Bundle>({
      method: "GET", path: "/v1/bundle", accept: [304],
      query: { agents: filter.agents?.join(","), envs: filter.envs?.join(",") },
      ...(etag ? { headers: { "if-none-match": etag } } : {}),
    }, opts);
    if (a.status === 304) return null;
    return { bundle: a.body, etag: a.headers.get("etag") };
  }
  postExposures(items: ExposureItem[], opts?: CallOptions): Promise<{ accepted: number }> {
    return this.request({ method: "POST", path: "/v1/exposures", body: { items }, idempotent: true }, opts);
  }
  postOutcomes(items: Record<string, unknown>[], opts?: CallOptions): Promise<{ accepted: number; duplicates: number }> {
    return this.request({ method: "POST", path: "/v1/outcomes", body: { items }, idempotent: true }, opts);
  }
}

function fence(pre: Precondition): { fence?: number } {
  return pre.fence === undefined ? {} : { fence: pre.fence };
}
