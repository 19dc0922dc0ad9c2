package problem

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/promptd/promptd/wire"
)

// Codes maps every code of the HTTP contract (api/openapi.yaml, Errors) to
// its HTTP status. It is the only place in promptd where a status is
// chosen for an error; codes.json is generated from it (go generate) and
// the SDKs are tested against that file.
var Codes = map[string]int{
	InvalidField:          400,
	InvalidID:             400,
	InvalidJSON:           400,
	Unauthorized:          401,
	CSRFFailed:            403,
	Forbidden:             403,
	SelfApproval:          403,
	AgentNotFound:         404,
	BatchNotFound:         404,
	BoardNotFound:         404,
	IntentNotFound:        404,
	ChangeRequestNotFound: 404,
	DeliveryNotFound:      404,
	LeaseNotFound:         404,
	NotFound:              404,
	RecordNotFound:        404,
	ReleaseNotFound:       404,
	SessionNotFound:       404,
	TokenNotFound:         404,
	VersionNotFound:       404,
	WebhookNotFound:       404,
	MethodNotAllowed:      405,
	BatchRejected:         409,
	BoardInUse:            409,
	IntentConflict:        409,
	MergeConflict:         409,
	ChangeRequestClosed:   409,
	ClaimExpired:          409,
	IdempotencyBusy:       409,
	ImportRejected:        409,
	InvalidTransition:     409,
	LeaseLost:             409,
	NoPointer:             409,
	ReleaseActive:         409,
	RevisionConflict:      409,
	SessionClosed:         409,
	SessionExists:         409,
	SessionMismatch:       409,
	StaleFence:            409,
	TokenBootstrap:        409,
	TokenExists:           409,
	VersionConflict:       409,
	VersionCurrent:        409,
	VersionRevoked:        409,
	CursorExpired:         410,
	PreconditionFailed:    412,
	BodyTooLarge:          413,
	BundleTooLarge:        422,
	IdempotencyReused:     422,
	InvalidConfig:         422,
	InvalidGuard:          422,
	InvalidOverrides:      422,
	InvalidPercent:        422,
	InvalidSteps:          422,
	InvalidURL:            422,
	InvalidVariable:       422,
	LimitExceeded:         422,
	MissingVariable:       422,
	OutsideIntent:         422,
	UndeclaredVariable:    422,
	Claimed:               423,
	LeaseHeld:             423,
	PreconditionRequired:  428,
	QuotaExceeded:         429,
	Internal:              500,
	Overloaded:            503,
	SecretKeyRequired:     503,
	StoreUnavailable:      503,
}

// Every code of the contract, by name: code outside this package names
// a code by its constant, so a misspelt code does not compile.
const (
	InvalidField          = "invalid_field"
	InvalidID             = "invalid_id"
	InvalidJSON           = "invalid_json"
	Unauthorized          = "unauthorized"
	CSRFFailed            = "csrf_failed"
	Forbidden             = "forbidden"
	SelfApproval          = "self_approval"
	AgentNotFound         = "agent_not_found"
	BatchNotFound         = "batch_not_found"
	BoardNotFound         = "board_not_found"
	IntentNotFound        = "intent_not_found"
	ChangeRequestNotFound = "change_request_not_found"
	DeliveryNotFound      = "delivery_not_found"
	LeaseNotFound         = "lease_not_found"
	NotFound              = "not_found"
	RecordNotFound        = "record_not_found"
	ReleaseNotFound       = "release_not_found"
	SessionNotFound       = "session_not_found"
	TokenNotFound         = "token_not_found"
	VersionNotFound       = "version_not_found"
	WebhookNotFound       = "webhook_not_found"
	MethodNotAllowed      = "method_not_allowed"
	BatchRejected         = "batch_rejected"
	BoardInUse            = "board_in_use"
	IntentConflict        = "intent_conflict"
	MergeConflict         = "merge_conflict"
	ChangeRequestClosed   = "change_request_closed"
	ClaimExpired          = "claim_expired"
	IdempotencyBusy       = "idempotency_in_progress"
	ImportRejected        = "import_rejected"
	InvalidTransition     = "invalid_transition"
	LeaseLost             = "lease_lost"
	NoPointer             = "no_pointer"
	ReleaseActive         = "release_active"
	RevisionConflict      = "revision_conflict"
	SessionClosed         = "session_closed"
	SessionExists         = "session_exists"
	SessionMismatch       = "session_mismatch"
	StaleFence            = "stale_fence"
	TokenBootstrap        = "token_bootstrap"
	TokenExists           = "token_exists"
	VersionConflict       = "version_conflict"
	VersionCurrent        = "version_current"
	VersionRevoked        = "version_revoked"
	CursorExpired         = "cursor_expired"
	PreconditionFailed    = "precondition_failed"
	BodyTooLarge          = "body_too_large"
	BundleTooLarge        = "bundle_too_large"
	IdempotencyReused     = "idempotency_key_reused"
	InvalidConfig         = "invalid_config"
	InvalidGuard          = "invalid_guard"
	InvalidOverrides      = "invalid_overrides"
	InvalidPercent        = "invalid_percent"
	InvalidSteps          = "invalid_steps"
	InvalidURL            = "invalid_url"
	InvalidVariable       = "invalid_variable"
	LimitExceeded         = "limit_exceeded"
	MissingVariable       = "missing_variable"
	OutsideIntent         = "outside_intent"
	UndeclaredVariable    = "undeclared_variable"
	Claimed               = "claimed"
	LeaseHeld             = "lease_held"
	PreconditionRequired  = "precondition_required"
	QuotaExceeded         = "quota_exceeded"
	Internal              = "internal"
	Overloaded            = "overloaded"
	SecretKeyRequired     = "secret_key_required"
	StoreUnavailable      = "store_unavailable"
)

// Sorted is every code of Codes, sorted.
func Sorted() []string {
	out := make([]string, 0, len(Codes))
	for c := range Codes {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// Problem is an error with a code the client can act on: what a failed
// call is answered with. Code's status is in Codes.
type Problem struct {
	Code   string
	Detail string         // for humans; must not contain internal text
	Fields map[string]any // extra members: "field", "limit", "current_revision", ...
	Header http.Header    // extra response headers (Retry-After, WWW-Authenticate)
	Err    error          // the cause, for logs; never shown
}

// Errorf returns a *Problem with code and a formatted detail.
func Errorf(code, format string, args ...any) *Problem {
	return &Problem{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// With adds an extra member to the problem and returns p.
func (p *Problem) With(key string, value any) *Problem {
	if p.Fields == nil {
		p.Fields = map[string]any{}
	}
	p.Fields[key] = value
	return p
}

// WithHeader adds a response header and returns p.
func (p *Problem) WithHeader(key, value string) *Problem {
	if p.Header == nil {
		p.Header = http.Header{}
	}
	p.Header.Add(key, value)
	return p
}

func (p *Problem) Error() string {
	if p.Err != nil {
		return p.Code + ": " + p.Detail + ": " + p.Err.Error()
	}
	return p.Code + ": " + p.Detail
}

func (p *Problem) Unwrap() error { return p.Err }

// Status is the HTTP status of p's code; an unknown code is a 500.
func (p *Problem) Status() int {
	if s, ok := Codes[p.Code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Title is the short summary of p's code ("revision_conflict" ->
// "Revision conflict"), the same for every problem of that type.
func (p *Problem) Title() string {
	t := strings.ReplaceAll(p.Code, "_", " ")
	if t == "" {
		return ""
	}
	return strings.ToUpper(t[:1]) + t[1:]
}

// Summary is p as a failed change request records it: code, status,
// detail and the extra members.
func (p *Problem) Summary() map[string]any {
	out := map[string]any{"code": p.Code, "status": p.Status(), "detail": p.Detail}
	for k, v := range p.Fields {
		out[k] = v
	}
	return out
}

// Timestamp is a time as promptd's answers show it: RFC 3339 in UTC with
// milliseconds (wire.Time).
type Timestamp = wire.Time

// TimeFormat is Timestamp's layout.
const TimeFormat = wire.TimeFormat

// RetryAfter renders a Retry-After in whole seconds, at least 1.
func RetryAfter(d time.Duration) string {
	sec := int64((d + time.Second - 1) / time.Second)
	return fmt.Sprint(max(sec, 1))
}

// OutOfScope is 403 forbidden naming the scope the caller lacks.
func OutOfScope(scope, detail string) *Problem {
	return (&Problem{Code: Forbidden, Detail: detail}).With("scope", scope)
}

// FromHeader marks a precondition that came from a request header
// (If-Match, If-None-Match): its failure is 412 precondition_failed rather
// than 409 revision_conflict.
func FromHeader(err error) error {
	if err == nil {
		return nil
	}
	return fromHeader{err}
}

type fromHeader struct{ error }

func (e fromHeader) Unwrap() error { return e.error }
