// Real request and response bodies (the HTTP contract's (api/openapi.yaml) examples and the server's
// answers) assigned to the types openapi-typescript generates from
// api/openapi.yaml. scripts/openapi-check.sh generates ./schema.d.ts and runs
// tsc --strict over this file: a body the types reject, or a wrong body they
// accept (each @ts-expect-error), fails the check.
import type { components, paths } from "./schema";

type S = components["schemas"];
type JSONBody<T> = T extends { content: { "application/json": infer B } } ? B : never;
type ProblemBody<T> = T extends { content: { "application/problem+json": infer B } } ? B : never;

// --- Prompt versions --------------------------------------------------------

export const config: S["PromptConfig"] = {
  system: "You are {{persona}} for {{company}}.",
  tools: [{ type: "function", function: { name: "lookup_order", description: "Find an order", parameters: { type: "object" } } }],
  skills: [{ name: "refunds", instructions: "Refunds within {{refund_days}} days." }],
  memory: ["Customer prefers email."],
  model: { name: "gpt-4o", temperature: 0.2 },
  variables: { persona: { required: true }, company: { default: "ACME" }, refund_days: { default: "30" } },
};

export const withTemplates: S["PromptConfig"] = {
  system: "You are a support agent.",
  messages: [
    { role: "user", content: "Where is my order?" },
    { role: "assistant", content: "Let me look it up." },
  ],
  model: { name: "gpt-4o", temperature: 0, max_completion_tokens: 512, top_p: 0.9 },
};

export const createVersion: JSONBody<paths["/v1/agents/{agent}/versions"]["post"]["requestBody"]> = {
  base_version: 0,
  config,
  message: "first version",
};

export const version: JSONBody<paths["/v1/agents/{agent}/versions/{version}"]["get"]["responses"][200]> = {
  agent: "support",
  version: 1,
  config,
  content_hash: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
  message: "first version",
  created_by: "ops",
  created_at: "2026-11-29T19:51:35.123Z",
};

export const versions: S["VersionList"] = { items: [version], next: null };

export const agents: S["AgentList"] = {
  items: [{
    agent: "support",
    latest_version: 3,
    latest_content_hash: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    envs: { prod: 2, staging: 3 },
  }],
  next: "support",
};

// --- Env pointers -------------------------------------------------------------

export const putEnv: JSONBody<paths["/v1/agents/{agent}/envs/{env}"]["put"]["requestBody"]> = { version: 2, expected_revision: 1 };

export const env: S["Env"] = {
  agent: "support",
  env: "prod",
  version: 2,
  revision: 2,
  updated_at: "2026-11-29T19:51:35.123Z",
  updated_by: "ops",
  history: [
    { from_version: 1, to_version: 2, revision: 2, action: "switch", actor: "ops", at: "2026-11-29T19:51:35.123Z" },
    { from_version: 0, to_version: 1, revision: 1, action: "switch", reason: "first", actor: "ops", at: "2026-11-29T19:50:00.000Z" },
  ],
  revoked: [1],
  release: null,
};

export const revoke: JSONBody<paths["/v1/agents/{agent}/envs/{env}/revocations"]["post"]["requestBody"]> = {
  version: 1,
  reason: "leaks the refund policy",
};

// --- Runtime path ---------------------------------------------------------------

export const prompt: JSONBody<paths["/v1/agents/{agent}/envs/{env}/prompt"]["get"]["responses"][200]> = {
  agent: "support",
  env: "prod",
  version: 3,
  content_hash: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
  config,
  release: { id: "rel_1", arm: "candidate", bucket: 771, percent: 10 },
  pinned: false,
  repinned_from: null,
};

export const assemble: JSONBody<paths["/v1/agents/{agent}/envs/{env}/assemble"]["post"]["requestBody"]> = {
  user_id: "user-1",
  session_id: "s1",
  variables: { persona: "a support agent", company: "ACME" },
  history: true,
  max_history_turns: 20,
};

export const assembled: S["Assembled"] = {
  version: 3,
  content_hash: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
  messages: [
    {
      role: "system",
      content: "You are a support agent for ACME.\n\n# Skills\n\n## refunds\nRefunds within 30 days.\n\n# Memory\n- Customer prefers email.",
    },
    { role: "user", content: "where is my order?" },
    {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "c1", type: "function", function: { name: "lookup_order", arguments: "{\"order_id\": \"A-1\"}" } }],
    },
    { role: "tool", tool_call_id: "c1", content: "shipped" },
    { role: "user", content: [{ type: "text", text: "thanks" }] },
  ],
  tools: [{ type: "function", function: { name: "lookup_order", description: "Find an order", parameters: { type: "object" } } }],
  model: { name: "gpt-4o", temperature: 0.2 },
  release: null,
  pinned: true,
};

// The model the runtime passes on is readable without casts.
export const modelName: string | undefined = assembled.model?.name;
export const firstTool: string | undefined = assembled.tools[0]?.function?.name;

// --- Releases -------------------------------------------------------------------

export const createRelease: JSONBody<paths["/v1/agents/{agent}/envs/{env}/releases"]["post"]["requestBody"]> = {
  candidate_version: 3,
  percent: 10,
  stickiness: "user",
  steps: [{ percent: 25, after: "10m" }, { percent: 50, after: "1h" }, { promote: true, after: "1h" }],
  message: "ramp the new refund skill",
  expected_revision: 2,
};

export const release: S["Release"] = {
  id: "rel_7f3a",
  agent: "support",
  env: "prod",
  state: "running",
  baseline_version: 2,
  candidate_version: 3,
  percent: 10,
  stickiness: "user",
  steps: [{ percent: 25, after: "10m" }, { percent: 50, after: "1h" }, { promote: true, after: "1h" }],
  steps_applied: 0,
  next_step_at: "2026-11-29T20:01:35.123Z",
  revision: 1,
  message: "ramp the new refund skill",
  created_by: "ops",
  created_at: "2026-11-29T19:51:35.123Z",
  updated_at: "2026-11-29T19:51:35.123Z",
  history: [{ revision: 1, action: "create", from: "", to: "running", percent: 10, actor: "ops", at: "2026-11-29T19:51:35.123Z" }],
  paused_by_guard: false,
};

export const patchRelease: JSONBody<paths["/v1/releases/{id}"]["patch"]["requestBody"]> = { percent: 12.5, expected_revision: 1 };
export const pause: JSONBody<NonNullable<paths["/v1/releases/{id}/pause"]["post"]["requestBody"]>> = { expected_revision: 2, reason: "error rate" };
export const envRollback: JSONBody<paths["/v1/agents/{agent}/envs/{env}/rollback"]["post"]["requestBody"]> = {
  expected_revision: 4,
  reason: "bad answers",
};

// --- Sessions -------------------------------------------------------------------

export const createSession: JSONBody<paths["/v1/sessions"]["post"]["requestBody"]> = {
  session_id: "s1",
  agent: "support",
  env: "prod",
  user_id: "alice@example.com",
  metadata: { channel: "web", tags: ["vip"], depth: { level: 2 } },
  idle_ttl_ms: 3600000,
};

export const session: S["Session"] = {
  session_id: "s1",
  agent: "support",
  env: "prod",
  user_id: "alice@example.com",
  pinned_version: 3,
  revision: 0,
  state: "open",
  fence: 0,
  lease: null,
  metadata: { channel: "web" },
  idle_ttl_ms: 86400000,
  turn_count: 0,
  created_at: "2026-11-29T19:51:35.123Z",
  updated_at: "2026-11-29T19:51:35.123Z",
};

export const appendTurns: JSONBody<paths["/v1/sessions/{id}/turns"]["post"]["requestBody"]> = {
  expected_revision: 0,
  fence: 1796117805967315,
  turns: [
    { role: "user", content: "where is my order?", metadata: { source: "chat" } },
    { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "lookup_order", arguments: "{}" } }] },
    { role: "tool", tool_call_id: "c1", content: "shipped" },
  ],
};

export const appended: S["Appended"] = { revision: 1, seqs: [1, 2, 3] };

export const sessionDetail: S["SessionDetail"] = {
  ...session,
  revision: 1,
  turn_count: 3,
  lease: { holder: "worker-a", fence: 1796117805967315, expires_at: "2026-11-29T19:51:40.123Z" },
  turns: [
    { seq: 1, role: "user", content: "where is my order?", metadata: { source: "chat" }, created_at: "2026-11-29T19:51:35.123Z" },
    {
      seq: 2,
      role: "assistant",
      content: null,
      tool_calls: [{ id: "c1", type: "function", function: { name: "lookup_order", arguments: "{}" } }],
      created_at: "2026-11-29T19:51:35.123Z",
    },
    { seq: 3, role: "tool", tool_call_id: "c1", content: "shipped", created_at: "2026-11-29T19:51:35.123Z" },
  ],
  next_since: null,
  state_keys: ["plan"],
};

export const putState: JSONBody<paths["/v1/sessions/{id}/state/{key}"]["put"]["requestBody"]> = {
  value: { step: 2, done: ["search"] },
  expected_revision: 0,
};
export const stateWritten: S["StateWritten"] = { key: "plan", revision: 1 };
export const state: S["StateEntries"] = { plan: { value: { step: 2 }, revision: 1 }, note: { value: null, revision: 3 } };

export const sessionLease: JSONBody<paths["/v1/sessions/{id}/lease"]["post"]["requestBody"]> = {
  holder: "worker-a",
  ttl_ms: 5000,
  wait_ms: 0,
  mode: "reject",
};
export const sessionLeaseGrant: S["SessionLease"] = {
  lease_id: "sl_hf3k2a9x",
  token: "lt_0123456789abcdef",
  fence: 1796117805967315,
  expires_at: "2026-11-29T19:51:40.123Z",
};

// --- Generic leases -------------------------------------------------------------

export const leases: JSONBody<paths["/v1/leases"]["post"]["requestBody"]> = {
  resources: ["order:1", "printer:2"],
  holder: "agent-b",
  ttl_ms: 5000,
  wait_ms: 20000,
};
export const leasesGrant: S["Leases"] = {
  lease_id: "ls_b3JkZXI6MQpwcmludGVyOjI",
  token: "lt_0123456789abcdef",
  fences: { "order:1": 1796117805967315, "printer:2": 1796117805967316 },
  expires_at: "2026-11-29T19:51:40.123Z",
};
export const renew: JSONBody<paths["/v1/leases/{lease_id}/renew"]["post"]["requestBody"]> = { ttl_ms: 5000 };

// --- Import and audit -------------------------------------------------------------

export const importRequest: JSONBody<paths["/v1/import"]["post"]["requestBody"]> = {
  mode: "all_or_nothing",
  items: [
    { agent: "support", base_version: 0, config, message: "v1" },
    { agent: "support", base_version: 1, config: { system: "v2" } },
  ],
};
export const importResult: S["ImportResult"] = {
  batch_fingerprint: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
  results: [
    { agent: "support", status: "created", version: 1 },
    { agent: "billing", status: "conflict", latest_version: 4 },
    { agent: "sales", status: "invalid", error: { code: "undeclared_variable", field: "config.system", variable: "x", detail: "placeholder {{x}} is not declared in variables" } },
  ],
  summary: { created: 1, conflict: 1, invalid: 1 },
};

export const audit: S["AuditList"] = {
  items: [{
    id: 41,
    at: "2026-11-29T19:51:35.123Z",
    actor: "ops",
    instance: "promptd-1",
    action: "version.created",
    resource: "agents/support/versions/3",
    trace_id: "4bf92f3577b34da6a3ce929d0e0e4736",
    details: { version: 3, content_hash: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" },
  }],
  next: "41",
};

export const ready: S["Readiness"] = { sql: "ok", redis: "disabled", etcd: "disabled", mode: "normal" };

// --- Problems ---------------------------------------------------------------------

export const conflict: ProblemBody<components["responses"]["Conflict"]> = {
  type: "urn:promptd:problem:revision_conflict",
  title: "Revision conflict",
  status: 409,
  detail: "expected_revision is 1; the current revision is 2",
  code: "revision_conflict",
  current_revision: 2,
};
export const locked: ProblemBody<components["responses"]["Locked"]> = {
  type: "urn:promptd:problem:lease_held",
  title: "Lease held",
  status: 423,
  detail: "the lease is held by \"agent-a\"",
  code: "lease_held",
  holder: "agent-a",
  expires_at: "2026-11-29T19:51:40.123Z",
  conflicts: [{ resource: "order:1", holder: "agent-a", expires_at: "2026-11-29T19:51:40.123Z" }],
};
export const rejected: ProblemBody<paths["/v1/import"]["post"]["responses"][409]> = {
  type: "urn:promptd:problem:import_rejected",
  title: "Import rejected",
  status: 409,
  detail: "all_or_nothing: 1 conflict and 0 invalid items; nothing was written",
  code: "import_rejected",
  batch_fingerprint: importResult.batch_fingerprint,
  results: [{ agent: "support", status: "not_applied" }, { agent: "billing", status: "conflict", latest_version: 4 }],
  summary: { created: 0, conflict: 1, invalid: 0 },
};

// --- Bodies the types must reject -------------------------------------------------

// @ts-expect-error system is a string
export const badSystem: S["PromptConfig"] = { system: 1 };
// @ts-expect-error a tool needs its type
export const badTool: S["Tool"] = { function: { name: "x" } };
// @ts-expect-error a function needs a name
export const badFunction: S["FunctionDefinition"] = { description: "x" };
// @ts-expect-error model.name is a string
export const badModel: S["ModelSettings"] = { name: 4 };
// @ts-expect-error message content is text or parts, not a number
export const badContent: S["Message"] = { role: "user", content: 42 };
// @ts-expect-error a tool message answers a tool call
export const badToolMessage: S["Message"] = { role: "tool", content: "shipped" };
// @ts-expect-error no such role
export const badRole: S["TurnInput"] = { role: "robot", content: "beep" };
// @ts-expect-error tool call arguments are a JSON text
export const badCall: S["ToolCall"] = { id: "c1", type: "function", function: { name: "f", arguments: { a: 1 } } };
// @ts-expect-error a problem code is one of the table
export const badCode: S["Problem"] = { type: "urn:promptd:problem:x", title: "X", status: 400, detail: "", code: "oops" };
// @ts-expect-error a 409 answer is not a 400 code
export const badConflict: ProblemBody<components["responses"]["Conflict"]> = { ...conflict, code: "invalid_json" };
