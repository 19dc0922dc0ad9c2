package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/locks"
)

// Error codes, the stable "code" member of problem details (API.md, Errors).
const (
	CodeInvalidJSON          = "invalid_json"
	CodeInvalidField         = "invalid_field"
	CodeInvalidID            = "invalid_id"
	CodeUnauthorized         = "unauthorized"
	CodeForbidden            = "forbidden"
	CodeNotFound             = "not_found"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeBodyTooLarge         = "body_too_large"
	CodeStoreUnavailable     = "store_unavailable"
	CodeInternal             = "internal"
	CodePreconditionRequired = "precondition_required"
)

// statuses maps every code of API.md's error table to its HTTP status. It
// is the only place in promptd where a status is chosen for an error.
var statuses = map[string]int{
	"invalid_json":            400,
	"invalid_field":           400,
	"invalid_id":              400,
	"unauthorized":            401,
	"forbidden":               403,
	"not_found":               404,
	"agent_not_found":         404,
	"version_not_found":       404,
	"release_not_found":       404,
	"session_not_found":       404,
	"lease_not_found":         404,
	"method_not_allowed":      405,
	"version_conflict":        409,
	"revision_conflict":       409,
	"release_active":          409,
	"no_pointer":              409,
	"version_revoked":         409,
	"version_current":         409,
	"invalid_transition":      409,
	"session_exists":          409,
	"session_closed":          409,
	"session_mismatch":        409,
	"idempotency_in_progress": 409,
	"import_rejected":         409,
	"stale_fence":             409,
	"lease_lost":              409,
	"precondition_failed":     412,
	"body_too_large":          413,
	"undeclared_variable":     422,
	"missing_variable":        422,
	"invalid_variable":        422,
	"invalid_config":          422,
	"invalid_percent":         422,
	"invalid_steps":           422,
	"idempotency_key_reused":  422,
	"lease_held":              423,
	"precondition_required":   428,
	"internal":                500,
	"store_unavailable":       503,
}

// Error is an error with a code the client can act on. Handlers return
// it, or a domain error that problemFor maps to one.
type Error struct {
	Code   string
	Detail string         // for humans; must not contain internal text
	Fields map[string]any // extra members: "field", "limit", "current_revision", ...
	Header http.Header    // extra response headers (Retry-After, WWW-Authenticate)
	Err    error          // the cause, for logs; never shown
}

// Errorf returns an *Error with code and a formatted detail.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// With adds an extra member to the problem and returns e.
func (e *Error) With(key string, value any) *Error {
	if e.Fields == nil {
		e.Fields = map[string]any{}
	}
	e.Fields[key] = value
	return e
}

// WithHeader adds a response header and returns e.
func (e *Error) WithHeader(key, value string) *Error {
	if e.Header == nil {
		e.Header = http.Header{}
	}
	e.Header.Add(key, value)
	return e
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Code + ": " + e.Detail + ": " + e.Err.Error()
	}
	return e.Code + ": " + e.Detail
}

func (e *Error) Unwrap() error { return e.Err }

// Status is the HTTP status of e's code; an unknown code is a 500.
func (e *Error) Status() int {
	if s, ok := statuses[e.Code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Title is the short summary of e's code ("revision_conflict" ->
// "Revision conflict"), the same for every problem of that type.
func (e *Error) Title() string {
	t := strings.ReplaceAll(e.Code, "_", " ")
	if t == "" {
		return ""
	}
	return strings.ToUpper(t[:1]) + t[1:]
}

// problemFor maps any error a handler returned to the *Error sent to the
// client. Unknown errors become internal; the caller logs those.
func problemFor(err error) *Error {
	var (
		e        *Error
		tooLarge *http.MaxBytesError
		invalid  *locks.InvalidIDError
	)
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &tooLarge):
		return (&Error{Code: CodeBodyTooLarge, Err: err,
			Detail: fmt.Sprintf("the request body is larger than %d bytes", tooLarge.Limit)}).With("limit", tooLarge.Limit)
	case errors.As(err, &invalid):
		return (&Error{Code: CodeInvalidID, Detail: invalid.Error(), Err: err}).With("field", invalid.Field)
	case errors.Is(err, locks.ErrUnavailable):
		return (&Error{Code: CodeStoreUnavailable, Detail: "the lock store is unavailable; retry later", Err: err}).
			With("store", "redis").WithHeader("Retry-After", "1")
	case errors.Is(err, echo.ErrNotFound):
		return &Error{Code: CodeNotFound, Detail: "no such route", Err: err}
	case errors.Is(err, echo.ErrMethodNotAllowed):
		return &Error{Code: CodeMethodNotAllowed, Detail: "the route does not accept this method", Err: err}
	}
	return &Error{Code: CodeInternal, Detail: "an unexpected error occurred", Err: err}
}

// problemType is the URI prefix of the "type" member; the code completes it.
const problemType = "urn:promptd:problem:"

// handleError is Echo's HTTPErrorHandler: the one place where errors become
// responses, as application/problem+json. Internal errors are logged with
// their cause; the client sees only the code.
func (s *Server) handleError(err error, c echo.Context) {
	p := problemFor(err)
	status := p.Status()
	r := c.Request()
	if status >= http.StatusInternalServerError {
		s.log.ErrorContext(r.Context(), "request failed", "code", p.Code, "method", r.Method,
			"route", routeOf(c, err), "err", err)
	}
	if c.Response().Committed {
		return // the handler already started its answer
	}
	body := make(map[string]any, len(p.Fields)+5)
	for k, v := range p.Fields {
		body[k] = v
	}
	body["type"] = problemType + p.Code
	body["title"] = p.Title()
	body["status"] = status
	body["detail"] = p.Detail
	body["code"] = p.Code
	h := c.Response().Header()
	for k, vs := range p.Header {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	h.Set(echo.HeaderContentType, "application/problem+json")
	h.Set(echo.HeaderCacheControl, "no-store")
	if r.Method == http.MethodHead {
		_ = c.NoContent(status)
		return
	}
	c.Response().WriteHeader(status)
	if err := json.NewEncoder(c.Response()).Encode(body); err != nil {
		s.log.DebugContext(r.Context(), "writing problem response", "err", err)
	}
}
