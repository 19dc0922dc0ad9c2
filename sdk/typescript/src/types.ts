// Request and answer shapes of the HTTP contract (api/openapi.yaml), written to match
// api/openapi.yaml.

export type JSONValue = string | number | boolean | null | JSONValue[] | { [k: string]: JSONValue };

export interface FunctionTool {
  type: "function";
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean | null };
}

export interface ModelConfig {
  name?: string;
  temperature?: number;
  top_p?: number | null;
  max_completion_tokens?: number | null;
  /** A provider's own keys: format=openai puts them at the top level of the request. */
  extra?: Record<string, JSONValue>;
  [key: string]: unknown;
}

export interface PromptConfig {
  system: string;
  tools?: FunctionTool[];
  skills?: { name: string; instructions?: string }[];
  memory?: string[];
  /** Fixed messages; an entry `{fragment: alias}` inserts a messages fragment's messages there. */
  messages?: TemplateMessage[];
  model?: ModelConfig;
  variables?: Record<string, VariableSpec>;
  /** Fragments by alias, pinned at publish (docs/fragments.md): `{{> alias}}` includes a text fragment. */
  fragments?: Record<string, FragmentRef>;
}

/** A config message: role and content, or (instead of both) the alias of a messages fragment. */
export interface TemplateMessage {
  role?: "user" | "assistant" | "system";
  content?: string;
  fragment?: string;
}

/** A fragment's message. */
export interface FragmentMessage {
  role: "user" | "assistant" | "system";
  content: string;
}

/**
 * A fragment reference: as written {name, version} or {name, env}; as
 * stored (pinned) with its version, content hash and content embedded.
 */
export interface FragmentRef {
  name: string;
  version?: number;
  env?: string;
  content_hash?: string;
  text?: string;
  messages?: FragmentMessage[];
  variables?: Record<string, VariableSpec>;
  fragments?: Record<string, FragmentRef>;
}

/** A fragment version's content: exactly one of text (included as `{{> alias}}`) and messages. */
export interface FragmentContent {
  text?: string;
  messages?: FragmentMessage[];
}

/** An agent whose latest version names the fragment by an env: its next publish takes what that env then points at. */
export interface FragmentProposal {
  agent: string;
  version: number;
  alias: string;
  env: string;
}

/** An immutable fragment version (docs/fragments.md); `fragments` holds its own references, pinned. */
export interface FragmentVersion {
  name: string;
  version: number;
  content_hash: string;
  fragment: FragmentContent;
  variables: Record<string, VariableSpec>;
  fragments: Record<string, FragmentRef>;
  message: string;
  created_by: string;
  created_at?: string;
  /** true on the answer of a check (dry run) or a proposal: nothing was written. */
  dry_run?: boolean;
  /** With propose: true, the agents the new version would reach at their next publish. */
  proposal?: FragmentProposal[];
}

/** A fragment as GET /v1/fragments lists it: its latest version and, per env, the version its pointer names. */
export interface FragmentSummary {
  name: string;
  latest_version: number;
  latest_content_hash: string;
  envs: Record<string, number>;
}

/** A fragment env pointer. */
export interface FragmentEnv {
  name: string;
  env: string;
  version: number;
  revision: number;
  updated_at: string;
  updated_by: string;
}

/** An agent version that pins a fragment version, with the envs whose pointers name it. */
export interface FragmentUse {
  agent: string;
  version: number;
  envs: string[];
}

/** The client's options for a fragment version create (camelCase); client.createFragmentVersion sends CreateFragmentRequest. */
export interface FragmentVersionInput {
  /** The latest version you started from, 0 for a new fragment; a stale one is VersionConflictError. */
  baseVersion: number;
  fragment: FragmentContent;
  variables?: Record<string, VariableSpec>;
  fragments?: Record<string, FragmentRef>;
  message?: string;
  /** Write nothing: answer the version a create would make and the agents it would reach (proposal). */
  propose?: boolean;
}

/** A variable's type; none declared is a string. */
export type VariableType = "string" | "number" | "boolean" | "enum" | "string_list";

/** A declared template variable. */
export interface VariableSpec {
  /** Absent: a string. */
  type?: VariableType;
  /** An enum's allowed values. */
  values?: string[];
  /** Assemble without a value: `422 missing_variable`. */
  required?: boolean;
  /** The value when the caller gives none, of the variable's type. */
  default?: string | number | boolean | string[];
  description?: string;
}

/** A merged version's parents: the base its author started from, the latest it was merged over. */
export interface VersionMerge {
  base_version: number;
  theirs_version: number;
}

export interface Version {
  agent: string;
  version: number;
  config: PromptConfig;
  content_hash: string;
  message: string;
  created_by: string;
  created_at: string;
  /** Set on a version made by a merge (createVersion with merge: true). */
  merge?: VersionMerge;
}

export interface List<T> {
  items: T[];
  next: string | null;
}

export interface Release {
  id: string;
  agent: string;
  env: string;
  state: "running" | "paused" | "promoted" | "rolled_back";
  baseline_version: number;
  candidate_version: number;
  percent: number;
  stickiness: "user" | "session";
  steps: unknown[];
  steps_applied: number;
  next_step_at: string | null;
  revision: number;
  message: string;
  created_by: string;
  created_at: string;
  updated_at: string;
  /** Left out in lists. */
  history?: unknown[];
  overrides?: { candidate: string[]; baseline: string[] };
  guard?: Record<string, unknown> | null;
  paused_by_guard: boolean;
  stats?: Record<string, unknown> | null;
  [key: string]: unknown;
}

export interface Env {
  agent: string;
  env: string;
  version: number;
  revision: number;
  updated_at: string;
  updated_by: string;
  history: unknown[];
  revoked: number[];
  release: Release | null;
}

/** The resolution trace of a release. */
export interface ReleaseTrace {
  id: string;
  arm: "baseline" | "candidate";
  bucket: number | null;
  percent: number;
  reason?: "bucket" | "override" | "pinned";
}

export interface Resolved {
  agent: string;
  env: string;
  version: number;
  content_hash: string;
  config: PromptConfig;
  release: ReleaseTrace | null;
  pinned: boolean;
  repinned_from: number | null;
}

export interface Caller {
  userId?: string;
  sessionId?: string;
}

export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** A message of the plain format. */
export interface Message {
  role: "system" | "user" | "assistant" | "tool";
  content: JSONValue;
  name?: string;
  tool_call_id?: string;
  tool_calls?: ToolCall[];
  [key: string]: unknown;
}

export interface AssembledPlain {
  version: number;
  content_hash: string;
  messages: Message[];
  tools: FunctionTool[];
  model: ModelConfig | null;
  release: ReleaseTrace | null;
  pinned: boolean;
  /** The version a revocation re-pinned the session from (only then). */
  repinned_from?: number;
}

/** Messages of the openai format: only role, content, name, tool_call_id, tool_calls. */
export type OpenAIMessage =
  | { role: "system"; content: string; name?: string }
  | { role: "user"; content: string; name?: string }
  | { role: "assistant"; content: string | null; name?: string; tool_calls?: ToolCall[] }
  | { role: "tool"; content: string; tool_call_id: string };

/**
 * format=openai: the body of an OpenAI Chat Completions request. `model` is
 * the config's model.name; the config's other model keys are at top level
 * as written (the common ones are typed here).
 */
export interface OpenAIChatBody {
  model: string;
  messages: OpenAIMessage[];
  tools?: FunctionTool[];
  temperature?: number;
  top_p?: number;
  max_completion_tokens?: number;
  frequency_penalty?: number;
  presence_penalty?: number;
  seed?: number;
  stop?: string | string[];
  parallel_tool_calls?: boolean;
}

/** A value for a variable: of its declared type (a string when untyped); null is none. */
export type VariableValue = string | number | boolean | string[] | null;

export interface AssembleRequest extends Caller {
  variables?: Record<string, VariableValue>;
  history?: boolean;
  maxHistoryTurns?: number;
}

/** A session as GET /v1/sessions lists it (listSessions): no metadata, idle TTL, turns nor state keys. */
export interface SessionSummary {
  session_id: string;
  agent: string;
  env: string;
  user_id: string | null;
  pinned_version: number;
  revision: number;
  state: "open" | "closed";
  fence: number;
  /** The lease's holder and fence while held (open sessions only), else null. */
  lease: { holder: string; fence: number; expires_at: string } | null;
  turn_count: number;
  created_at: string;
  updated_at: string;
}

/** A session as create and close answer it, and GET /v1/sessions/{id} (with turns, next_since, state_keys). */
export interface Session extends SessionSummary {
  metadata: Record<string, JSONValue>;
  idle_ttl_ms: number;
  turns?: Turn[];
  next_since?: number | null;
  state_keys?: string[];
}

export interface NewTurn {
  role: "user" | "assistant" | "tool" | "system";
  content: JSONValue;
  name?: string;
  tool_call_id?: string;
  tool_calls?: ToolCall[];
  metadata?: Record<string, JSONValue>;
}

export interface Turn extends NewTurn {
  seq: number;
  created_at: string;
}

export interface StateEntry<V = JSONValue> {
  value: V;
  revision: number;
}

export interface Lease {
  lease_id: string;
  token: string;
  fence: number;
  expires_at: string;
}

export interface GenericLease {
  lease_id: string;
  token: string;
  fences: Record<string, number>;
  expires_at: string;
}

export interface Event {
  seq: number;
  /** The audit event's id. */
  id: number;
  at: string;
  action: string;
  agent?: string;
  env?: string;
  board?: string;
  resource: string;
  revision?: number;
  details: Record<string, unknown>;
  /** Admin tokens only. */
  actor?: string;
  instance?: string;
}

export interface BundleRelease {
  id: string;
  state: string;
  revision: number;
  baseline_version: number;
  candidate_version: number;
  basis_points: number;
  stickiness: "user" | "session";
  overrides: { candidate: string[]; baseline: string[] };
}

export interface BundleEnv {
  version: number;
  revision: number;
  revoked: number[];
  release: BundleRelease | null;
}

export interface Bundle {
  /** Absent or 1 before fragments; 2 when configs may pin fragments. Evaluators refuse formats they do not know. */
  format?: number;
  cursor: string;
  agents: Record<string, { versions: Record<string, { content_hash: string; config: PromptConfig }>; envs: Record<string, BundleEnv> }>;
}

export interface ExposureItem {
  agent: string;
  env: string;
  version: number;
  release_id?: string;
  arm?: "baseline" | "candidate";
  count: number;
  at: string;
}

export interface BoardRecord {
  board: string;
  id: string;
  revision: number;
  state: string;
  owner: string | null;
  fence: number;
  claim_expires_at: string | null;
  claim_ttl_ms: number;
  priority: number;
  attempts: number;
  payload: JSONValue;
  dedupe_key: string | null;
  created_at: string;
  updated_at: string;
}

/** A board's claim rule: a claim moves a record from -> to for ttl_ms; an expired claim goes back to reclaim_to, or to exhausted after max_attempts. */
export interface BoardClaimRule {
  from: string;
  to: string;
  ttl_ms: number;
  reclaim_to: string;
  max_attempts: number;
  exhausted: string;
}

/** GET /v1/boards/{board}: a board and its state machine (the default one: pending -> claimed -> running -> done | failed). */
export interface Board {
  board: string;
  revision: number;
  created_by: string;
  states: string[];
  initial: string;
  transitions: Record<string, string[]>;
  claim: BoardClaimRule;
  terminal: string[];
  quota: { claims_per_minute?: number };
  created_at: string;
  updated_at: string;
}

/** Records of one board an intent covers: ids, and id prefixes (a prefix covers every id it starts). */
export interface IntentRecordScope {
  board: string;
  ids?: string[];
  prefixes?: string[];
}

/**
 * What an intent covers: `agents` (names, or prefixes ending in `*`) in `envs`, whole `boards`,
 * `records` of a board. Answers show it canonical (sorted, merged).
 */
export interface IntentScope {
  agents?: string[];
  envs?: string[];
  boards?: string[];
  records?: IntentRecordScope[];
}

/** The intent a write is made under, with its fence. */
export interface IntentRef {
  id: string;
  fence: number;
}

export interface Intent {
  id: string;
  holder: string;
  mode: "exclusive" | "advisory";
  scope: IntentScope;
  description: string;
  /** Grows in every space the intent takes. */
  fence: number;
  /** An active intent past its expiry reads as expired. */
  state: "active" | "released" | "expired";
  ttl_ms: number;
  expires_at: string;
  ended_at?: string;
  created_by: string;
  created_at: string;
}

/** POST /v1/intents: the intent and every live intent whose scope overlaps it. */
export interface RegisteredIntent extends Intent {
  overlaps: Intent[];
}

/** One item of a board batch: a create, or a compare-and-set update (merged with `merge`). */
export type BoardBatchItem =
  | { op: "create"; id?: string; payload: unknown; priority?: number; dedupe_key?: string }
  | {
    op: "update"; id: string; expected_revision: number; payload?: unknown; state?: string;
    /** A claimed record: the claim's fence. */
    fence?: number;
    /** Merge payload over the changes made since expected_revision (three-way, by JSON path). */
    merge?: boolean;
    /** The payload read at expected_revision (checked against the kept content hash). */
    base_payload?: unknown;
  };

/**
 * One path both sides changed differently. A step is a member name, or `{key: value}` for an
 * element of a keyed array; a side without the member (deleted, or never there) is absent.
 */
export interface MergeConflictPath {
  path: (string | Record<string, string>)[];
  base?: unknown;
  ours?: unknown;
  theirs?: unknown;
}

/** Why a batch item was not written: a problem code with what the record is now. */
export interface BoardBatchConflict {
  code: string;
  detail: string;
  field?: string;
  current_revision?: number;
  content_hash?: string;
  current_fence?: number;
  state?: string;
  /** merge_conflict: per path base, ours, theirs. */
  conflicts?: MergeConflictPath[];
}

/** One item's part of a batch's commit proof, in request order. */
export interface BoardBatchItemResult {
  index: number;
  op: "create" | "update";
  id: string;
  status: "created" | "exists" | "updated" | "merged" | "conflict" | "invalid";
  revision_before: number;
  revision_after: number;
  content_hash?: string;
  conflict?: BoardBatchConflict;
}

export interface BoardBatchSummary {
  created: number;
  exists: number;
  updated: number;
  merged: number;
  conflicts: number;
  invalid: number;
}

/** An applied board batch and its commit proof (also read back by id). */
export interface BoardBatch {
  id: string;
  board: string;
  mode: "all_or_nothing" | "partial";
  batch_fingerprint: string;
  intent_id?: string;
  results: BoardBatchItemResult[];
  summary: BoardBatchSummary;
  created_by: string;
  created_at: string;
}
