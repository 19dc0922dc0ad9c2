package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Code is the stable "code" of a problem answer. Each code of the HTTP contract's (api/openapi.yaml)
// error table is an Err* sentinel of this type, so that
//
//	errors.Is(err, client.ErrVersionConflict)
//
// holds for any error carrying a *Error with that code.
type Code string

// Error is the code itself, so that a Code prints as the code.
func (c Code) Error() string { return string(c) }

// The codes of the HTTP contract's (api/openapi.yaml) error table.
const (
	ErrInvalidJSON           Code = "invalid_json"
	ErrInvalidField          Code = "invalid_field"
	ErrInvalidID             Code = "invalid_id"
	ErrUnauthorized          Code = "unauthorized"
	ErrForbidden             Code = "forbidden"
	ErrNotFound              Code = "not_found"
	ErrAgentNotFound         Code = "agent_not_found"
	ErrVersionNotFound       Code = "version_not_found"
	ErrReleaseNotFound       Code = "release_not_found"
	ErrSessionNotFound       Code = "session_not_found"
	ErrLeaseNotFound         Code = "lease_not_found"
	ErrMethodNotAllowed      Code = "method_not_allowed"
	ErrVersionConflict       Code = "version_conflict"
	ErrRevisionConflict      Code = "revision_conflict"
	ErrPreconditionFailed    Code = "precondition_failed"
	ErrPreconditionRequired  Code = "precondition_required"
	ErrReleaseActive         Code = "release_active"
	ErrNoPointer             Code = "no_pointer"
	ErrVersionRevoked        Code = "version_revoked"
	ErrVersionCurrent        Code = "version_current"
	ErrInvalidTransition     Code = "invalid_transition"
	ErrSessionExists         Code = "session_exists"
	ErrSessionClosed         Code = "session_closed"
	ErrSessionMismatch       Code = "session_mismatch"
	ErrIdempotencyInProgress Code = "idempotency_in_progress"
	ErrImportRejected        Code = "import_rejected"
	ErrStaleFence            Code = "stale_fence"
	ErrLeaseLost             Code = "lease_lost"
	ErrLeaseHeld             Code = "lease_held"
	ErrBodyTooLarge          Code = "body_too_large"
	ErrUndeclaredVariable    Code = "undeclared_variable"
	ErrMissingVariable       Code = "missing_variable"
	ErrInvalidVariable       Code = "invalid_variable"
	ErrInvalidConfig         Code = "invalid_config"
	ErrInvalidPercent        Code = "invalid_percent"
	ErrInvalidSteps          Code = "invalid_steps"
	ErrIdempotencyKeyReused  Code = "idempotency_key_reused"
	ErrStoreUnavailable      Code = "store_unavailable"
	ErrOverloaded            Code = "overloaded" // too many heavy requests on the instance: retry after Retry-After
	ErrLimitExceeded         Code = "limit_exceeded"
	ErrCursorExpired         Code = "cursor_expired"
	ErrBundleTooLarge        Code = "bundle_too_large"
	ErrInvalidOverrides      Code = "invalid_overrides"
	ErrInvalidGuard          Code = "invalid_guard"
	ErrCSRFFailed            Code = "csrf_failed"
	ErrInternal              Code = "internal"
)

// Error is a problem answer of promptd (RFC 9457 problem details), or a
// non-2xx answer that was not one (Code is then "http_<status>").
type Error struct {
	Status int    // HTTP status
	Code   Code   // stable code; errors.Is(err, client.ErrX) compares it
	Title  string // short summary of the code
	Detail string // for humans
	// Fields holds the extra members ("latest_version", "current_fence",
	// "results", ...); numbers are json.Number, exact up to 2^53 and beyond.
	Fields     map[string]any
	RetryAfter time.Duration // from a Retry-After header (503), else 0
	Method     string        // the request's method and path, for messages
	Path       string
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("promptd: %s %s: %d %s", e.Method, e.Path, e.Status, e.Code)
	}
	return fmt.Sprintf("promptd: %s %s: %d %s: %s", e.Method, e.Path, e.Status, e.Code, e.Detail)
}

// Is reports whether target is the sentinel of e's code.
func (e *Error) Is(target error) bool {
	c, ok := target.(Code)
	return ok && c == e.Code
}

// NotFound reports a 404 of any code (not_found, agent_not_found, ...).
func (e *Error) NotFound() bool { return e != nil && e.Status == http.StatusNotFound }

// Temporary reports an answer worth retrying later: 5xx or 429.
func (e *Error) Temporary() bool {
	return e != nil && (e.Status >= 500 || e.Status == http.StatusTooManyRequests)
}

func (e *Error) int64Field(name string) int64 {
	if e == nil {
		return 0
	}
	switch v := e.Fields[name].(type) {
	case json.Number:
		n, _ := v.Int64()
		return n
	case float64:
		return int64(v)
	}
	return 0
}

func (e *Error) stringField(name string) string {
	if e == nil {
		return ""
	}
	s, _ := e.Fields[name].(string)
	return s
}

// LatestVersion is the agent's latest version of a version_conflict (0
// when the problem has none).
func (e *Error) LatestVersion() int { return int(e.int64Field("latest_version")) }

// CurrentRevision is the current revision of a revision_conflict or
// precondition_failed (0 when absent, or when the resource does not exist).
func (e *Error) CurrentRevision() int64 { return e.int64Field("current_revision") }

// CurrentFence is the current fence of a stale_fence: the session's,
// the claim's, or the intent's.
func (e *Error) CurrentFence() int64 { return e.int64Field("current_fence") }

// ReleaseID names the active release of a release_active.
func (e *Error) ReleaseID() string { return e.stringField("release_id") }

// Holder names the holder of a lease_held.
func (e *Error) Holder() string { return e.stringField("holder") }

// Field names the offending field of a 400 or 422.
func (e *Error) Field() string { return e.stringField("field") }

// Variable names the variable of undeclared_variable, missing_variable or
// invalid_variable.
func (e *Error) Variable() string { return e.stringField("variable") }

// State is the state a 409 names (a release's or session's), if any.
func (e *Error) State() string { return e.stringField("state") }

// ExpiresAt is when the lease of a lease_held expires (zero if unknown).
func (e *Error) ExpiresAt() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, e.stringField("expires_at"))
	return t
}

// Conflicts lists the held resources of a generic lease's lease_held.
func (e *Error) Conflicts() []LeaseConflict {
	var out []LeaseConflict
	e.decodeField("conflicts", &out)
	return out
}

// ImportResult is the per-item outcome carried by an import_rejected.
func (e *Error) ImportResult() *ImportResult {
	if e == nil || e.Fields["results"] == nil {
		return nil
	}
	r := &ImportResult{BatchFingerprint: e.stringField("batch_fingerprint")}
	e.decodeField("results", &r.Results)
	e.decodeField("summary", &r.Summary)
	return r
}

// IntentID names the intent of a stale_fence or outside_intent answered
// to a write, renew or release under an intent.
func (e *Error) IntentID() string { return e.stringField("intent_id") }

// EndedAt is when the intent of a stale_fence ended (zero if it did not:
// the fence was another).
func (e *Error) EndedAt() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, e.stringField("ended_at"))
	return t
}

// ContentHash is the record's current content hash of a merge_conflict.
func (e *Error) ContentHash() string { return e.stringField("content_hash") }

// IntentConflicts are the live intents an intent_conflict's registration
// overlaps: their holders, scopes and expiry (nil for another code).
func (e *Error) IntentConflicts() []Intent {
	if e == nil || e.Code != ErrIntentConflict {
		return nil
	}
	var out []Intent
	e.decodeField("conflicts", &out)
	return out
}

// MergeConflicts are the paths of a merge_conflict (of a record's payload,
// or of any other merged document), each with its base, ours and theirs
// values (nil for another code).
func (e *Error) MergeConflicts() []MergePath {
	if e == nil || e.Code != ErrMergeConflict {
		return nil
	}
	var out []MergePath
	e.decodeField("conflicts", &out)
	return out
}

// BatchRejection is what a batch_rejected carries: every item's result
// and the summary (nil for another code).
func (e *Error) BatchRejection() *BatchRejection {
	if e == nil || e.Code != ErrBatchRejected {
		return nil
	}
	r := &BatchRejection{BatchFingerprint: e.stringField("batch_fingerprint")}
	e.decodeField("results", &r.Results)
	e.decodeField("summary", &r.Summary)
	return r
}

// decodeField re-decodes one extra member into a typed value.
func (e *Error) decodeField(name string, dst any) {
	if e == nil || e.Fields[name] == nil {
		return
	}
	if b, err := json.Marshal(e.Fields[name]); err == nil {
		_ = json.Unmarshal(b, dst)
	}
}

// problemFrom builds the *Error of a non-2xx answer from its body.
func problemFrom(resp *http.Response, body []byte) *Error {
	e := &Error{Status: resp.StatusCode, Method: resp.Request.Method, Path: resp.Request.URL.Path}
	if s := resp.Header.Get("Retry-After"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			e.RetryAfter = time.Duration(n) * time.Second
		}
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if dec.Decode(&m) == nil {
		e.Code = Code(stringOf(m["code"]))
		e.Title, e.Detail = stringOf(m["title"]), stringOf(m["detail"])
		for _, k := range []string{"type", "title", "status", "detail", "code"} {
			delete(m, k)
		}
		e.Fields = m
	}
	if e.Code == "" {
		e.Code = Code("http_" + strconv.Itoa(resp.StatusCode))
		if e.Detail == "" && len(body) > 0 && len(body) < 512 {
			e.Detail = string(bytes.TrimSpace(body))
		}
	}
	return e
}

func stringOf(v any) string {
	s, _ := v.(string)
	return s
}
