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
  top_p?: number;
  max_completion_tokens?: number;
  [key: string]: unknown;
}

export interface PromptConfig {
  system: string;
  tools?: FunctionTool[];
  skills?: { name: string; instructions?: string }[];
  memory?: string[];
  messages?: { role: "user" | "assistant" | "system"; content: string }[];
  model?: ModelConfig;
  variables?: Record<string, { required?: boolean; default?: string; description?: string }>;
}

export interface Version {
  agent: string;
  version: number;
  config: PromptConfig;
  content_hash: string;
  message: string;
  created_by: string;
  created_at: string;
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

export interface AssembleRequest extends Caller {
  variables?: Record<string, string>;
  history?: boolean;
  maxHistoryTurns?: number;
}

export interface Session {
  session_id: string;
  agent: string;
  env: string;
  user_id: string | null;
  pinned_version: number;
  revision: number;
  state: "open" | "closed";
  fence: number;
  lease: { holder: string; fence: number; expires_at: string } | null;
  metadata: Record<string, JSONValue>;
  idle_ttl_ms: number;
  turn_count: number;
  created_at: string;
  updated_at: string;
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
