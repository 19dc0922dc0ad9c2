package problem

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// Codes maps every code of the HTTP contract (api/openapi.yaml, Errors) to
// its HTTP status. It is the only place in promptd where a status is
// chosen for an error; codes.json is generated from it (go generate) and
// the SDKs are tested against that file.
var Codes = map[string]int{
	InvalidJSON:                400,
	InvalidField:               400,
	InvalidID:                  400,
	Unauthorized:               401,
	Forbidden:                  403,
	NotFound:                   404,
	"agent_not_found":          404,
	"version_not_found":        404,
	"release_not_found":        404,
	SessionNotFound:            404,
	"lease_not_found":          404,
	MethodNotAllowed:           405,
	"version_conflict":         409,
	"revision_conflict":        409,
	"release_active":           409,
	"no_pointer":               409,
	"version_revoked":          409,
	"version_current":          409,
	"invalid_transition":       409,
	"session_exists":           409,
	"session_closed":           409,
	"session_mismatch":         409,
	IdempotencyBusy:            409,
	"import_rejected":          409,
	"stale_fence":              409,
	"lease_lost":               409,
	PreconditionFailed:         412,
	BodyTooLarge:               413,
	"undeclared_variable":      422,
	"missing_variable":         422,
	"invalid_variable":         422,
	"invalid_guard":            422,
	"invalid_config":           422,
	"invalid_percent":          422,
	"invalid_steps":            422,
	IdempotencyReused:          422,
	LimitExceeded:              422,
	"lease_held":               423,
	PreconditionRequired:       428,
	"cursor_expired":           410,
	"quota_exceeded":           429,
	"overloaded":               503,
	"board_not_found":          404,
	"record_not_found":         404,
	"claim_expired":            409,
	"board_in_use":             409,
	"claimed":                  423,
	Internal:                   500,
	StoreUnavailable:           503,
	"webhook_not_found":        404,
	"delivery_not_found":       404,
	"invalid_url":              422,
	"secret_key_required":      503,
	"invalid_overrides":        422,
	"bundle_too_large":         422,
	"token_not_found":          404,
	"token_exists":             409,
	"token_bootstrap":          409,
	"change_request_not_found": 404,
	"change_request_closed":    409,
	"self_approval":            403,
	"csrf_failed":              403,
}

// The codes code outside this package names (the rest appear only in Of).
const (
	InvalidJSON          = "invalid_json"
	InvalidField         = "invalid_field"
	InvalidID            = "invalid_id"
	Unauthorized         = "unauthorized"
	Forbidden            = "forbidden"
	NotFound             = "not_found"
	MethodNotAllowed     = "method_not_allowed"
	BodyTooLarge         = "body_too_large"
	StoreUnavailable     = "store_unavailable"
	Internal             = "internal"
	PreconditionRequired = "precondition_required"
	PreconditionFailed   = "precondition_failed"
	SessionNotFound      = "session_not_found"
	IdempotencyReused    = "idempotency_key_reused"
	IdempotencyBusy      = "idempotency_in_progress"
	LimitExceeded        = "limit_exceeded"
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
// milliseconds.
type Timestamp time.Time

// TimeFormat is Timestamp's layout.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

func (t Timestamp) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).UTC().Format(TimeFormat) + `"`), nil
}

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
