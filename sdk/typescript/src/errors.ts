// Typed errors, one class per problem code of the HTTP contract's (api/openapi.yaml) error table. The
// table below is the one source: every code's status and extra fields; the
// classes are made from it by errorClass, and `classes` is checked by the
// compiler to name one class for every code in the table.

import type { BoardBatchItemResult, BoardBatchSummary, Intent, MergeConflictPath } from "./types.js";

/** The extra fields each code carries (api/openapi.yaml, Errors). */
export interface ErrorFieldsByCode {
  invalid_json: { field?: string };
  invalid_field: { field?: string };
  invalid_id: { field?: string };
  unauthorized: Record<string, never>;
  forbidden: { scope?: unknown };
  agent_not_found: Record<string, never>;
  version_not_found: Record<string, never>;
  release_not_found: Record<string, never>;
  session_not_found: Record<string, never>;
  lease_not_found: Record<string, never>;
  not_found: Record<string, never>;
  method_not_allowed: Record<string, never>;
  version_conflict: { latest_version: number };
  revision_conflict: { current_revision: number };
  precondition_failed: { current_revision: number };
  precondition_required: Record<string, never>;
  release_active: { release_id: string };
  no_pointer: Record<string, never>;
  version_revoked: Record<string, never>;
  version_current: Record<string, never>;
  invalid_transition: { state?: string };
  session_exists: { state?: string };
  session_closed: { state?: string };
  session_mismatch: Record<string, never>;
  idempotency_in_progress: Record<string, never>;
  import_rejected: { results: unknown[]; summary: Record<string, number> };
  /** A write, renew or release under an intent that ended (or with another fence) names it. */
  stale_fence: { current_fence: number; intent_id?: string; state?: string; ended_at?: string };
  lease_lost: Record<string, never>;
  lease_held: { holder?: string; expires_at?: string; conflicts?: { resource: string; holder: string; expires_at: string }[] };
  body_too_large: { limit: number };
  limit_exceeded: { field?: string; limit?: number };
  undeclared_variable: { variable: string };
  missing_variable: { variable: string };
  invalid_variable: { variable: string };
  invalid_config: { field?: string };
  invalid_percent: { field?: string };
  invalid_steps: { field?: string };
  idempotency_key_reused: { field?: string };
  claimed: { owner: string; claim_expires_at: string };
  claim_expired: { claim_expires_at: string };
  board_not_found: Record<string, never>;
  record_not_found: Record<string, never>;
  webhook_not_found: Record<string, never>;
  delivery_not_found: Record<string, never>;
  token_not_found: Record<string, never>;
  change_request_not_found: Record<string, never>;
  cursor_expired: { oldest: string };
  quota_exceeded: { limit?: number };
  invalid_url: { field?: string; reason?: string };
  bundle_too_large: { limit: number };
  invalid_overrides: { field?: string };
  invalid_guard: { field?: string };
  self_approval: Record<string, never>;
  csrf_failed: Record<string, never>;
  change_request_closed: { state?: string };
  token_exists: { state?: string };
  token_bootstrap: { state?: string };
  board_in_use: { states?: string[] };
  store_unavailable: { store?: string };
  overloaded: Record<string, never>;
  secret_key_required: Record<string, never>;
  internal: Record<string, never>;
  intent_not_found: Record<string, never>;
  batch_not_found: Record<string, never>;
  /** The live intents the registration overlaps (holder, scope, expiry). */
  intent_conflict: { conflicts: Intent[] };
  /** Every item's result (the failing ones with their conflict); nothing was written. */
  batch_rejected: { batch_fingerprint: string; results: BoardBatchItemResult[]; summary: BoardBatchSummary };
  /** Per path the base, ours and theirs values; a record's current revision and content hash, or a version create's latest and base version. */
  merge_conflict: { conflicts: MergeConflictPath[]; current_revision?: number; content_hash?: string; latest_version?: number; base_version?: number };
  /** The intent whose scope does not cover the write, and the member naming it. */
  outside_intent: { intent_id: string; field?: string };
}

export type ErrorCode = keyof ErrorFieldsByCode;

/** Status of every code (the same table as the server's problem/codes.json). */
export const ERROR_STATUS: { readonly [C in ErrorCode]: number } = {
  invalid_json: 400, invalid_field: 400, invalid_id: 400,
  unauthorized: 401, forbidden: 403,
  agent_not_found: 404, version_not_found: 404, release_not_found: 404, session_not_found: 404,
  lease_not_found: 404, not_found: 404, method_not_allowed: 405,
  version_conflict: 409, revision_conflict: 409, precondition_failed: 412, precondition_required: 428,
  release_active: 409, no_pointer: 409, version_revoked: 409, version_current: 409,
  invalid_transition: 409, session_exists: 409, session_closed: 409, session_mismatch: 409,
  idempotency_in_progress: 409, import_rejected: 409, stale_fence: 409, lease_lost: 409,
  lease_held: 423, body_too_large: 413, limit_exceeded: 422,
  undeclared_variable: 422, missing_variable: 422, invalid_variable: 422,
  invalid_config: 422, invalid_percent: 422, invalid_steps: 422, idempotency_key_reused: 422,
  claimed: 423, claim_expired: 409,
  board_not_found: 404, record_not_found: 404, webhook_not_found: 404, delivery_not_found: 404,
  token_not_found: 404, change_request_not_found: 404,
  cursor_expired: 410, quota_exceeded: 429, invalid_url: 422, bundle_too_large: 422,
  invalid_overrides: 422, invalid_guard: 422,
  self_approval: 403, csrf_failed: 403, change_request_closed: 409, token_exists: 409, token_bootstrap: 409,
  board_in_use: 409, store_unavailable: 503, overloaded: 503, secret_key_required: 503, internal: 500,
  intent_not_found: 404, batch_not_found: 404, intent_conflict: 409, batch_rejected: 409, merge_conflict: 409,
  outside_intent: 422,
};

/** A problem+json answer (RFC 9457) or a client-side failure with a code. */
export class PromptdError<C extends string = string> extends Error {
  readonly status: number;
  readonly code: C;
  readonly detail: string;
  readonly title: string;
  /** The problem's extra members (the HTTP contract's (api/openapi.yaml) "extra fields"). */
  readonly fields: C extends ErrorCode ? ErrorFieldsByCode[C] & Record<string, unknown> : Record<string, unknown>;
  /** Retry-After in milliseconds, when the answer had one. */
  readonly retryAfterMs: number | undefined;

  constructor(status: number, code: C, detail: string, fields: Record<string, unknown> = {}, title = "", retryAfterMs?: number) {
    super(`${code}: ${detail || title || `HTTP ${status}`}`);
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.detail = detail;
    this.title = title;
    this.fields = fields as PromptdError<C>["fields"];
    this.retryAfterMs = retryAfterMs;
  }
}

type ErrorClass<C extends ErrorCode> = new (
  status: number, code: C, detail: string, fields?: Record<string, unknown>, title?: string, retryAfterMs?: number,
) => PromptdError<C>;

function errorClass<C extends ErrorCode>(code: C, name: string): ErrorClass<C> {
  const cls = class extends PromptdError<C> {};
  Object.defineProperty(cls, "name", { value: name });
  Object.defineProperty(cls, "code", { value: code }); // StaleFenceError.code === "stale_fence"
  return cls;
}

export const InvalidJsonError = errorClass("invalid_json", "InvalidJsonError");
export const InvalidFieldError = errorClass("invalid_field", "InvalidFieldError");
export const InvalidIdError = errorClass("invalid_id", "InvalidIdError");
export const UnauthorizedError = errorClass("unauthorized", "UnauthorizedError");
export const ForbiddenError = errorClass("forbidden", "ForbiddenError");
export const AgentNotFoundError = errorClass("agent_not_found", "AgentNotFoundError");
export const VersionNotFoundError = errorClass("version_not_found", "VersionNotFoundError");
export const ReleaseNotFoundError = errorClass("release_not_found", "ReleaseNotFoundError");
export const SessionNotFoundError = errorClass("session_not_found", "SessionNotFoundError");
export const LeaseNotFoundError = errorClass("lease_not_found", "LeaseNotFoundError");
export const NotFoundError = errorClass("not_found", "NotFoundError");
export const MethodNotAllowedError = errorClass("method_not_allowed", "MethodNotAllowedError");
export const VersionConflictError = errorClass("version_conflict", "VersionConflictError");
export const RevisionConflictError = errorClass("revision_conflict", "RevisionConflictError");
export const PreconditionFailedError = errorClass("precondition_failed", "PreconditionFailedError");
export const PreconditionRequiredError = errorClass("precondition_required", "PreconditionRequiredError");
export const ReleaseActiveError = errorClass("release_active", "ReleaseActiveError");
export const NoPointerError = errorClass("no_pointer", "NoPointerError");
export const VersionRevokedError = errorClass("version_revoked", "VersionRevokedError");
export const VersionCurrentError = errorClass("version_current", "VersionCurrentError");
export const InvalidTransitionError = errorClass("invalid_transition", "InvalidTransitionError");
export const SessionExistsError = errorClass("session_exists", "SessionExistsError");
export const SessionClosedError = errorClass("session_closed", "SessionClosedError");
export const SessionMismatchError = errorClass("session_mismatch", "SessionMismatchError");
export const IdempotencyInProgressError = errorClass("idempotency_in_progress", "IdempotencyInProgressError");
export const ImportRejectedError = errorClass("import_rejected", "ImportRejectedError");
export const StaleFenceError = errorClass("stale_fence", "StaleFenceError");
export const LeaseLostError = errorClass("lease_lost", "LeaseLostError");
export const LeaseHeldError = errorClass("lease_held", "LeaseHeldError");
export const BodyTooLargeError = errorClass("body_too_large", "BodyTooLargeError");
export const LimitExceededError = errorClass("limit_exceeded", "LimitExceededError");
export const UndeclaredVariableError = errorClass("undeclared_variable", "UndeclaredVariableError");
export const MissingVariableError = errorClass("missing_variable", "MissingVariableError");
export const InvalidVariableError = errorClass("invalid_variable", "InvalidVariableError");
export const InvalidConfigError = errorClass("invalid_config", "InvalidConfigError");
export const InvalidPercentError = errorClass("invalid_percent", "InvalidPercentError");
export const InvalidStepsError = errorClass("invalid_steps", "InvalidStepsError");
export const IdempotencyKeyReusedError = errorClass("idempotency_key_reused", "IdempotencyKeyReusedError");
export const ClaimedError = errorClass("claimed", "ClaimedError");
export const ClaimExpiredError = errorClass("claim_expired", "ClaimExpiredError");
export const BoardNotFoundError = errorClass("board_not_found", "BoardNotFoundError");
export const RecordNotFoundError = errorClass("record_not_found", "RecordNotFoundError");
export const WebhookNotFoundError = errorClass("webhook_not_found", "WebhookNotFoundError");
export const DeliveryNotFoundError = errorClass("delivery_not_found", "DeliveryNotFoundError");
export const TokenNotFoundError = errorClass("token_not_found", "TokenNotFoundError");
export const ChangeRequestNotFoundError = errorClass("change_request_not_found", "ChangeRequestNotFoundError");
export const CursorExpiredError = errorClass("cursor_expired", "CursorExpiredError");
export const QuotaExceededError = errorClass("quota_exceeded", "QuotaExceededError");
export const InvalidUrlError = errorClass("invalid_url", "InvalidUrlError");
export const BundleTooLargeError = errorClass("bundle_too_large", "BundleTooLargeError");
export const InvalidOverridesError = errorClass("invalid_overrides", "InvalidOverridesError");
export const InvalidGuardError = errorClass("invalid_guard", "InvalidGuardError");
export const SelfApprovalError = errorClass("self_approval", "SelfApprovalError");
export const CsrfFailedError = errorClass("csrf_failed", "CsrfFailedError");
export const ChangeRequestClosedError = errorClass("change_request_closed", "ChangeRequestClosedError");
export const TokenExistsError = errorClass("token_exists", "TokenExistsError");
export const TokenBootstrapError = errorClass("token_bootstrap", "TokenBootstrapError");
export const BoardInUseError = errorClass("board_in_use", "BoardInUseError");
export const StoreUnavailableError = errorClass("store_unavailable", "StoreUnavailableError");
export const OverloadedError = errorClass("overloaded", "OverloadedError");
export const SecretKeyRequiredError = errorClass("secret_key_required", "SecretKeyRequiredError");
export const InternalError = errorClass("internal", "InternalError");
export const IntentNotFoundError = errorClass("intent_not_found", "IntentNotFoundError");
export const BatchNotFoundError = errorClass("batch_not_found", "BatchNotFoundError");
export const IntentConflictError = errorClass("intent_conflict", "IntentConflictError");
export const BatchRejectedError = errorClass("batch_rejected", "BatchRejectedError");
export const MergeConflictError = errorClass("merge_conflict", "MergeConflictError");
export const OutsideIntentError = errorClass("outside_intent", "OutsideIntentError");

// The instance types, so `catch (e) { if (e instanceof StaleFenceError) e.fields.current_fence }`
// and `let e: StaleFenceError` both work.
export type InvalidJsonError = PromptdError<"invalid_json">;
export type RevisionConflictError = PromptdError<"revision_conflict">;
export type StaleFenceError = PromptdError<"stale_fence">;
export type LeaseLostError = PromptdError<"lease_lost">;
export type LeaseHeldError = PromptdError<"lease_held">;
export type MissingVariableError = PromptdError<"missing_variable">;
export type SessionClosedError = PromptdError<"session_closed">;
export type IntentConflictError = PromptdError<"intent_conflict">;
export type BatchRejectedError = PromptdError<"batch_rejected">;
export type MergeConflictError = PromptdError<"merge_conflict">;
export type OutsideIntentError = PromptdError<"outside_intent">;

/** One class per code: the compiler checks that no code of the table is missing. */
const classes: { readonly [C in ErrorCode]: ErrorClass<C> } = {
  invalid_json: InvalidJsonError, invalid_field: InvalidFieldError, invalid_id: InvalidIdError,
  unauthorized: UnauthorizedError, forbidden: ForbiddenError,
  agent_not_found: AgentNotFoundError, version_not_found: VersionNotFoundError,
  release_not_found: ReleaseNotFoundError, session_not_found: SessionNotFoundError,
  lease_not_found: LeaseNotFoundError, not_found: NotFoundError, method_not_allowed: MethodNotAllowedError,
  version_conflict: VersionConflictError, revision_conflict: RevisionConflictError,
  precondition_failed: PreconditionFailedError, precondition_required: PreconditionRequiredError,
  release_active: ReleaseActiveError, no_pointer: NoPointerError, version_revoked: VersionRevokedError,
  version_current: VersionCurrentError, invalid_transition: InvalidTransitionError,
  session_exists: SessionExistsError, session_closed: SessionClosedError, session_mismatch: SessionMismatchError,
  idempotency_in_progress: IdempotencyInProgressError, import_rejected: ImportRejectedError,
  stale_fence: StaleFenceError, lease_lost: LeaseLostError, lease_held: LeaseHeldError,
  body_too_large: BodyTooLargeError, limit_exceeded: LimitExceededError,
  undeclared_variable: UndeclaredVariableError, missing_variable: MissingVariableError,
  invalid_variable: InvalidVariableError, invalid_config: InvalidConfigError,
  invalid_percent: InvalidPercentError, invalid_steps: InvalidStepsError,
  idempotency_key_reused: IdempotencyKeyReusedError, claimed: ClaimedError, claim_expired: ClaimExpiredError,
  board_not_found: BoardNotFoundError, record_not_found: RecordNotFoundError,
  webhook_not_found: WebhookNotFoundError, delivery_not_found: DeliveryNotFoundError,
  token_not_found: TokenNotFoundError, change_request_not_found: ChangeRequestNotFoundError,
  cursor_expired: CursorExpiredError, quota_exceeded: QuotaExceededError, invalid_url: InvalidUrlError,
  bundle_too_large: BundleTooLargeError, self_approval: SelfApprovalError, csrf_failed: CsrfFailedError,
  invalid_overrides: InvalidOverridesError, invalid_guard: InvalidGuardError,
  change_request_closed: ChangeRequestClosedError, token_exists: TokenExistsError,
  token_bootstrap: TokenBootstrapError, board_in_use: BoardInUseError,
  store_unavailable: StoreUnavailableError, overloaded: OverloadedError,
  secret_key_required: SecretKeyRequiredError, internal: InternalError,
  intent_not_found: IntentNotFoundError, batch_not_found: BatchNotFoundError,
  intent_conflict: IntentConflictError, batch_rejected: BatchRejectedError,
  merge_conflict: MergeConflictError, outside_intent: OutsideIntentError,
};

function isCode(code: string): code is ErrorCode {
  return Object.prototype.hasOwnProperty.call(classes, code);
}

/** The typed error for a problem body; an unknown code is a plain PromptdError. */
export function errorFromProblem(status: number, body: unknown, retryAfterMs?: number): PromptdError {
  const p = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
  const code = typeof p["code"] === "string" ? p["code"] : `http_${status}`;
  const detail = typeof p["detail"] === "string" ? p["detail"] : "";
  const title = typeof p["title"] === "string" ? p["title"] : "";
  const fields: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(p)) {
    if (!["type", "title", "status", "detail", "code"].includes(k)) fields[k] = v;
  }
  if (isCode(code)) {
    const Cls = classes[code] as ErrorClass<ErrorCode>;
    return new Cls(status, code, detail, fields, title, retryAfterMs);
  }
  return new PromptdError(status, code, detail, fields, title, retryAfterMs);
}

/** A lease lost on the client side (renewal failed, expired): no call was made. */
export function leaseLost(detail: string): LeaseLostError {
  return new LeaseLostError(409, "lease_lost", detail);
}
