package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/promptd/promptd/problem"
)

// Error codes, the stable "code" member of problem details (the table is
// problem.Codes).
const (
	CodeInvalidJSON          = problem.InvalidJSON
	CodeInvalidField         = problem.InvalidField
	CodeInvalidID            = problem.InvalidID
	CodeUnauthorized         = problem.Unauthorized
	CodeForbidden            = problem.Forbidden
	CodeNotFound             = problem.NotFound
	CodeMethodNotAllowed     = problem.MethodNotAllowed
	CodeBodyTooLarge         = problem.BodyTooLarge
	CodeStoreUnavailable     = problem.StoreUnavailable
	CodeInternal             = problem.Internal
	CodePreconditionRequired = problem.PreconditionRequired
	CodePreconditionFailed   = problem.PreconditionFailed
	CodeSessionNotFound      = problem.SessionNotFound
	CodeIdempotencyReused    = problem.IdempotencyReused
	CodeIdempotencyBusy      = problem.IdempotencyBusy
	CodeLimitExceeded        = problem.LimitExceeded
)

// Error is an error with a code the client can act on. Handlers return
// it, or a domain error that problem.Of maps to one.
type Error = problem.Problem

// Errorf returns an *Error with code and a formatted detail.
func Errorf(code, format string, args ...any) *Error { return problem.Errorf(code, format, args...) }

// problemFor maps any error a handler returned to the *Error sent to the
// client: the router's own errors here, everything else by problem.Of.
// Unknown errors become internal; the caller logs those.
func problemFor(err error) *Error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, echo.ErrNotFound):
		return &Error{Code: CodeNotFound, Detail: "no such route", Err: err}
	case errors.Is(err, echo.ErrMethodNotAllowed):
		return &Error{Code: CodeMethodNotAllowed, Detail: "the route does not accept this method", Err: err}
	}
	return problem.Of(err)
}

// statusClientClosed is recorded for requests whose client went away
// before the answer (nginx's 499); it is never sent, nobody is there.
const statusClientClosed = 499

// clientLeft reports whether err is the consequence of the client having
// gone away: its request's context is cancelled (the connection closed)
// and the handler failed because of it, or failed in any way the client
// cannot see any more.
func clientLeft(r *http.Request, err error) bool {
	if r.Context().Err() == nil {
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	return problemFor(err).Status() >= http.StatusInternalServerError
}

// problemType is the URI prefix of the "type" member; the code completes it.
const problemType = "urn:promptd:problem:"

// handleError is Echo's HTTPErrorHandler: the one place where errors become
// responses, as application/problem+json. Internal errors are logged with
// their cause; the client sees only the code.
func (s *Server) handleError(err error, c echo.Context) {
	r := c.Request()
	if clientLeft(r, err) {
		// Nobody reads this answer: not a fault of promptd's, so neither an
		// error log line nor a 5xx in the metrics. 499 (nginx's "client
		// closed request") is what the access log and metrics record.
		s.log.DebugContext(r.Context(), "client closed the request", "method", r.Method,
			"route", routeOf(c, err), "request_id", requestIDOf(c), "err", err)
		if !c.Response().Committed {
			c.Response().WriteHeader(statusClientClosed)
		}
		return
	}
	p := problemFor(err)
	status := p.Status()
	if status >= http.StatusInternalServerError {
		s.log.ErrorContext(r.Context(), "request failed", "code", p.Code, "method", r.Method,
			"route", routeOf(c, err), "request_id", requestIDOf(c), "err", err)
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
