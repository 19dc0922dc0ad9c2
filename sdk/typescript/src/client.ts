// Client: one method per route of the contract the SDK uses. Every method
// takes CallOptions last (signal, traceparent, idempotencyKey).

import { Transport, type CallOptions, type TransportOptions, type Request } from "./http.js";
import type {
  AssembleRequest, AssembledPlain, BoardRecord, Bundle, Caller, Env, ExposureItem, GenericLease, JSONValue, Lease, List,
  NewTurn, OpenAIChatBody, PromptConfig, Release, Resolved, Session, StateEntry, Version,
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

  createVersion(agent: string, v: { base_version: number; config: PromptConfig; message?: string }, opts?: CallOptions): Promise<Version> {
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
  /** Compare-and-set on a record: a state change (complete, fail) and/or a new payload, with the claim's fence. */
  updateRecord(board: string, id: string, u: { expectedRevision: number; state?: string; payload?: unknown; fence?: number }, opts?: CallOptions): Promise<BoardRecord> {
    const body: Record<string, unknown> = { expected_revision: u.expectedRevision };
    if (u.state !== undefined) body["state"] = u.state;
    if (u.payload !== undefined) body["payload"] = u.payload;
    if (u.fence !== undefined) body["fence"] = u.fence;
    return this.request({ method: "PATCH", path: `/v1/boards/${seg(board)}/records/${seg(id)}`, body }, opts);
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
