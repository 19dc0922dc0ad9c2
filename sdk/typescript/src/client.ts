// Client: one method per route of the contract the SDK uses. Every method
// takes CallOptions last (signal, traceparent, idempotencyKey).

import { Transport, type CallOptions, type TransportOptions, type Request } from "./http.js";
import type {
  AssembleRequest, AssembledPlain, Board, BoardBatch, BoardBatchItem, BoardRecord, Bundle, Caller, Env, ExposureItem, FragmentEnv,
  FragmentSummary, FragmentUse, FragmentVersion, FragmentVersionInput, GenericLease, Intent, IntentRef, IntentScope, JSONValue, Lease, List, NewTurn, OpenAIChatBody, PromptConfig, RegisteredIntent, Release,
  Resolved, Session, SessionSummary, StateEntry, Version,
} from "./types.js";

export type ClientOptions = TransportOptions;

const seg = encodeURIComponent;
const envPath = (agent: string, env: string): string => `/v1/agents/${seg(agent)}/envs/${seg(env)}`;

const fragmentPath = (name: string): string => `/v1/fragments/${seg(name)}`;

/** A page of a list: at most limit items, after the cursor of the previous page's next. */
export interface PageQuery {
  limit?: number;
  cursor?: string;
}

function fragmentBody(v: FragmentVersionInput): Record<string, unknown> {
  const body: Record<string, unknown> = { base_version: v.baseVersion, fragment: v.fragment };
  put(body, "variables", v.variables);
  put(body, "fragments", v.fragments);
  put(body, "message", v.message);
  put(body, "propose", v.propose);
  return body;
}

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
  /** camelCase items (`BatchItemInput`); wire-spelled `BoardBatchItem`s (`expected_revision`, ...) are deprecated but still taken. */
  items: (BatchItemInput | BoardBatchItem)[];
  /** all_or_nothing (default): a failing item writes nothing (409 batch_rejected); partial writes the others. */
  mode?: "all_or_nothing" | "partial";
  intent?: IntentRef;
  batchFingerprint?: string;
}

/** POST /v1/agents/{agent}/versions. */
export type VersionInput = {
  config: PromptConfig;
  message?: string;
  /** Merge over a newer latest (three-way; MergeConflictError on an overlap). */
  merge?: boolean;
} & ({
  /** The version this config was edited from (0 for the first). */
  baseVersion: number;
} | {
  /** @deprecated Use `baseVersion`. */
  base_version: number;
});

/** POST /v1/agents/{agent}/envs/{env}/releases. */
export type ReleaseInput = {
  /** 0..100, at most 2 decimals. */
  percent: number;
  stickiness?: "user" | "session";
  /** Percent steps (`after`: a Go duration from the previous step), the last may promote. */
  steps?: { after: string; percent?: number; promote?: boolean }[];
  message?: string;
  /** The env pointer's revision (optional). */
  expectedRevision?: number;
  /** @deprecated Use `expectedRevision`. */
  expected_revision?: number;
  /** Override lists, as the wire's OverridesRequest. */
  overrides?: Record<string, JSONValue>;
  /** A guard, as the wire's GuardInput. */
  guard?: Record<string, JSONValue>;
} & ({
  candidateVersion: number;
} | {
  /** @deprecated Use `candidateVersion`. */
  candidate_version: number;
});

/** A release's pause, resume, promote or rollback. */
export interface TransitionInput {
  /** The release's revision (optional: 409 revision_conflict when stale). */
  expectedRevision?: number;
  /** @deprecated Use `expectedRevision`. */
  expected_revision?: number;
  reason?: string;
}

/** rampRelease: the release's revision (409 revision_conflict when stale) and why. */
export interface RampInput {
  expectedRevision: number;
  reason?: string;
}

/** POST /v1/sessions. */
export interface SessionInput {
  agent: string;
  env: string;
  sessionId?: string;
  userId?: string;
  metadata?: JSONValue;
  idleTtlMs?: number;
  /** @deprecated Use `sessionId`. */
  session_id?: string;
  /** @deprecated Use `userId`. */
  user_id?: string;
  /** @deprecated Use `idleTtlMs`. */
  idle_ttl_ms?: number;
}

/** POST /v1/boards/{board}/records. */
export interface RecordInput {
  id?: string;
  payload: unknown;
  priority?: number;
  dedupeKey?: string;
  /** @deprecated Use `dedupeKey`. */
  dedupe_key?: string;
}

/** One item of a batch, in the client's camelCase. */
export type BatchItemInput =
  | { op: "create"; id?: string; payload: unknown; priority?: number; dedupeKey?: string }
  | {
    op: "update"; id: string; expectedRevision: number; payload?: unknown; state?: string;
    /** A claimed record: the claim's fence. */
    fence?: number;
    /** Merge payload over the changes made since expectedRevision (three-way, by JSON path). */
    merge?: boolean;
    /** The payload read at expectedRevision (checked against the kept content hash). */
    basePayload?: unknown;
  };

/** GET /v1/boards/{board}/records. */
export interface RecordQuery {
  state?: string;
  owner?: string;
  limit?: number;
  cursor?: string;
}

/** GET /v1/sessions. */
export interface SessionQuery {
  agent?: string;
  env?: string;
  state?: "open" | "closed";
  limit?: number;
  cursor?: string;
}

/** The camelCase option when given, else its deprecated snake_case spelling. */
function either<T>(camel: T | undefined, snake: T | undefined): T | undefined {
  return camel !== undefined ? camel : snake;
}

/** Sets body[key] to v unless v is undefined. */
function put(body: Record<string, unknown>, key: string, v: unknown): void {
  if (v !== undefined) body[key] = v;
}

function batchItem(i: BatchItemInput | BoardBatchItem): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(i)) {
    if (v === undefined) continue;
    out[k === "dedupeKey" ? "dedupe_key" : k === "expectedRevision" ? "expected_revision" : k === "basePayload" ? "base_payload" : k] = v;
  }
  return out;
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
  createVersion(agent: string, v: VersionInput, opts?: CallOptions): Promise<Version> {
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- the deprecated spelling, still taken
    const body: Record<string, unknown> = { base_version: "baseVersion" in v ? v.baseVersion : v.base_version, config: v.config };
    put(body, "message", v.message);
    put(body, "merge", v.merge);
    return this.request({ method: "POST", path: `/v1/agents/${seg(agent)}/versions`, body, idempotent: true }, opts);
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

  // Fragments (docs/fragments.md): every route needs an unscoped token; writes the admin role.

  /** Fragment version baseVersion + 1 (idempotent); a newer latest is VersionConflictError (latestVersion), a reference promptd refuses an invalid_config problem. With propose: true nothing is written. */
  createFragmentVersion(name: string, v: FragmentVersionInput, opts?: CallOptions): Promise<FragmentVersion> {
    return this.request({ method: "POST", path: fragmentPath(name) + "/versions", body: fragmentBody(v), idempotent: v.propose !== true }, opts);
  }
  /** What createFragmentVersion would make now (?dry_run=true), writing nothing: its pinned content and content hash, or the problem a create would give. */
  checkFragmentVersion(name: string, v: FragmentVersionInput, opts?: CallOptions): Promise<FragmentVersion> {
    return this.request({ method: "POST", path: fragmentPath(name) + "/versions", query: { dry_run: true }, body: fragmentBody(v) }, opts);
  }
  /** Fragments by name, each with its latest version and env pointers. */
  listFragments(q: PageQuery = {}, opts?: CallOptions): Promise<List<FragmentSummary>> {
    return this.request({ method: "GET", path: "/v1/fragments", query: { limit: q.limit, cursor: q.cursor } }, opts);
  }
  /** A fragment's versions, newest first. */
  listFragmentVersions(name: string, q: PageQuery = {}, opts?: CallOptions): Promise<List<FragmentVersion>> {
    return this.request({ method: "GET", path: fragmentPath(name) + "/versions", query: { limit: q.limit, cursor: q.cursor } }, opts);
  }
  getFragmentVersion(name: string, version: number, opts?: CallOptions): Promise<FragmentVersion> {
    return this.request({ method: "GET", path: `${fragmentPath(name)}/versions/${version}` }, opts);
  }
  /** The agent versions that pin this fragment version (directly or through another fragment), with the envs that point at each. */
  fragmentUsedBy(name: string, version: number, q: PageQuery = {}, opts?: CallOptions): Promise<List<FragmentUse>> {
    return this.request({ method: "GET", path: `${fragmentPath(name)}/versions/${version}/used-by`, query: { limit: q.limit, cursor: q.cursor } }, opts);
  }
  /** Moves (expectedRevision its current revision) or creates (0) a fragment env pointer; a stale revision is RevisionConflictError. */
  putFragmentEnv(name: string, env: string, version: number, expectedRevision: number, opts?: CallOptions): Promise<FragmentEnv> {
    return this.request({ method: "PUT", path: `${fragmentPath(name)}/envs/${seg(env)}`, body: { version, expected_revision: expectedRevision } }, opts);
  }
  getFragmentEnv(name: string, env: string, opts?: CallOptions): Promise<FragmentEnv> {
    return this.request({ method: "GET", path: `${fragmentPath(name)}/envs/${seg(env)}` }, opts);
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
  /** Starts a release of the candidate over the version the env pointer names (admin). */
  createRelease(agent: string, env: string, r: ReleaseInput, opts?: CallOptions): Promise<Release> {
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- the deprecated spelling, still taken
    const body: Record<string, unknown> = { candidate_version: "candidateVersion" in r ? r.candidateVersion : r.candidate_version, percent: r.percent };
    put(body, "stickiness", r.stickiness);
    put(body, "steps", r.steps);
    put(body, "message", r.message);
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- the deprecated spelling, still taken
    put(body, "expected_revision", either(r.expectedRevision, r.expected_revision));
    put(body, "overrides", r.overrides);
    put(body, "guard", r.guard);
    return this.request({ method: "POST", path: envPath(agent, env) + "/releases", body, idempotent: true }, opts);
  }
  /** The release's percent at its revision (admin); rampRelease also takes a reason. */
  setReleasePercent(id: string, percent: number, expectedRevision: number, opts?: CallOptions): Promise<Release> {
    return this.request({ method: "PATCH", path: `/v1/releases/${seg(id)}`, body: { percent, expected_revision: expectedRevision } }, opts);
  }
  /** running -> paused, paused -> running, running|paused -> promoted | rolled_back (admin). */
  transitionRelease(id: string, action: "pause" | "resume" | "promote" | "rollback", t: TransitionInput = {}, opts?: CallOptions): Promise<Release> {
    const body: Record<string, unknown> = {};
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- the deprecated spelling, still taken
    put(body, "expected_revision", either(t.expectedRevision, t.expected_revision));
    put(body, "reason", t.reason);
    return this.request({ method: "POST", path: `/v1/releases/${seg(id)}/${action}`, body }, opts);
  }
  // The named calls (the Python SDK's create_release, ramp_release, ...): thin wrappers of the two above.
  /** Sets a running or paused release's percent, up or down (the remaining steps are cancelled), at its revision (admin): PATCH /v1/releases/{id}. */
  rampRelease(id: string, percent: number, r: RampInput, opts?: CallOptions): Promise<Release> {
    const body: Record<string, unknown> = { percent, expected_revision: r.expectedRevision };
    put(body, "reason", r.reason);
    return this.request({ method: "PATCH", path: `/v1/releases/${seg(id)}`, body }, opts);
  }
  /** running -> paused (admin; a paused release is a no-op): transitionRelease(id, "pause", t). */
  pauseRelease(id: string, t: TransitionInput = {}, opts?: CallOptions): Promise<Release> {
    return this.transitionRelease(id, "pause", t, opts);
  }
  /** paused -> running (admin): transitionRelease(id, "resume", t). */
  resumeRelease(id: string, t: TransitionInput = {}, opts?: CallOptions): Promise<Release> {
    return this.transitionRelease(id, "resume", t, opts);
  }
  /** running|paused -> promoted: the env pointer moves to the candidate (admin): transitionRelease(id, "promote", t). */
  promoteRelease(id: string, t: TransitionInput = {}, opts?: CallOptions): Promise<Release> {
    return this.transitionRelease(id, "promote", t, opts);
  }
  /** running|paused -> rolled_back: everyone gets the baseline again (admin): transitionRelease(id, "rollback", t). */
  rollbackRelease(id: string, t: TransitionInput = {}, opts?: CallOptions): Promise<Release> {
    return this.transitionRelease(id, "rollback", t, opts);
  }

  // Sessions.

  createSession(s: SessionInput, opts?: CallOptions): Promise<Session> {
    const body: Record<string, unknown> = { agent: s.agent, env: s.env };
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- the deprecated spelling, still taken
    put(body, "session_id", either(s.sessionId, s.session_id));
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- the deprecated spelling, still taken
    put(body, "user_id", either(s.userId, s.user_id));
    put(body, "metadata", s.metadata);
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- the deprecated spelling, still taken
    put(body, "idle_ttl_ms", either(s.idleTtlMs, s.idle_ttl_ms));
    return this.request({ method: "POST", path: "/v1/sessions", body, idempotent: true }, opts);
  }
  /** Sessions, newest first: summaries (no metadata, idle TTL, turns nor state keys: getSession has them). */
  listSessions(q: SessionQuery = {}, opts?: CallOptions): Promise<List<SessionSummary>> {
    return this.request({ method: "GET", path: "/v1/sessions", query: { agent: q.agent, env: q.env, state: q.state, limit: q.limit, cursor: q.cursor } }, opts);
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

  /** The board and its state machine. */
  getBoard(board: string, opts?: CallOptions): Promise<Board> {
    return this.request({ method: "GET", path: `/v1/boards/${seg(board)}` }, opts);
  }
  /** Defines (expectedRevision 0) or replaces a board's state machine (admin); the definition is the wire's PutBoardRequest. */
  putBoard(board: string, definition: { states: string[]; initial: string; transitions?: Record<string, string[]>; claim: Record<string, JSONValue>; terminal?: string[]; quota?: Record<string, JSONValue> }, expectedRevision = 0, opts?: CallOptions): Promise<Board> {
    return this.request({ method: "PUT", path: `/v1/boards/${seg(board)}`, body: { ...definition, expected_revision: expectedRevision } }, opts);
  }
  createRecord(board: string, r: RecordInput, opts?: CallOptions): Promise<BoardRecord> {
    const body: Record<string, unknown> = { payload: r.payload };
    put(body, "id", r.id);
    put(body, "priority", r.priority);
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- the deprecated spelling, still taken
    put(body, "dedupe_key", either(r.dedupeKey, r.dedupe_key));
    return this.request({ method: "POST", path: `/v1/boards/${seg(board)}/records`, body, idempotent: true }, opts);
  }
  /** A board's records in board order. */
  listRecords(board: string, q: RecordQuery = {}, opts?: CallOptions): Promise<List<BoardRecord>> {
    return this.request({ method: "GET", path: `/v1/boards/${seg(board)}/records`, query: { state: q.state, owner: q.owner, limit: q.limit, cursor: q.cursor } }, opts);
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
    const body: Record<string, unknown> = { mode: b.mode ?? "all_or_nothing", items: b.items.map(batchItem) };
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
