package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/api/idempotency"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/board"
	"github.com/promptd/promptd/events"
	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/leases"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/session"
	"github.com/promptd/promptd/sqlstore"
)

// Error codes, the stable "code" member of problem details (api/openapi.yaml, Errors).
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
	CodePreconditionFailed   = "precondition_failed"
	CodeSessionNotFound      = "session_not_found"
	CodeIdempotencyReused    = "idempotency_key_reused"
	CodeIdempotencyBusy      = "idempotency_in_progress"
	CodeLimitExceeded        = "limit_exceeded"
)

// statuses maps every code of the HTTP contract's (api/openapi.yaml) error table to its HTTP status. It
// is the only place in promptd where a status is chosen for an error.
var statuses = map[string]int{
	"invalid_json":             400,
	"invalid_field":            400,
	"invalid_id":               400,
	"unauthorized":             401,
	"forbidden":                403,
	"not_found":                404,
	"agent_not_found":          404,
	"version_not_found":        404,
	"release_not_found":        404,
	"session_not_found":        404,
	"lease_not_found":          404,
	"method_not_allowed":       405,
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
	"idempotency_in_progress":  409,
	"import_rejected":          409,
	"stale_fence":              409,
	"lease_lost":               409,
	"precondition_failed":      412,
	"body_too_large":           413,
	"undeclared_variable":      422,
	"missing_variable":         422,
	"invalid_variable":         422,
	"invalid_guard":            422,
	"invalid_config":           422,
	"invalid_percent":          422,
	"invalid_steps":            422,
	"idempotency_key_reused":   422,
	"limit_exceeded":           422,
	"lease_held":               423,
	"precondition_required":    428,
	"cursor_expired":           410,
	"quota_exceeded":           429,
	"overloaded":               503,
	"board_not_found":          404,
	"record_not_found":         404,
	"claim_expired":            409,
	"board_in_use":             409,
	"claimed":                  423,
	"internal":                 500,
	"store_unavailable":        503,
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

// fromHeader marks a precondition that came from a request header
// (If-Match, If-None-Match): its failure is 412 precondition_failed rather
// than 409 revision_conflict.
type fromHeader struct{ error }

func (e fromHeader) Unwrap() error { return e.error }

// problemFor maps any error a handler returned to the *Error sent to the
// client: the one place where domain errors meet HTTP. Unknown errors
// become internal; the caller logs those.
func problemFor(err error) *Error {
	var (
		e        *Error
		tooLarge *http.MaxBytesError
		invalid  *ident.InvalidError
		bad      *promptstore.InvalidError
		rejected *promptstore.ImportRejected
		vc       *promptstore.VersionConflict
		rc       *promptstore.RevisionConflict
		ra       *promptstore.ReleaseActive
		limit    *promptstore.LimitError
		header   fromHeader
		expired  *events.CursorExpiredError
		ahead    *audit.AheadError
	)
	if p := coordinationProblem(err); p != nil {
		return p
	}
	if p := boardProblem(err); p != nil {
		return p
	}
	if p := webhookProblem(err); p != nil {
		return p
	}
	if p := dataProblem(err); p != nil {
		return p
	}
	if p := accessProblem(err); p != nil {
		return p
	}
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &tooLarge):
		return (&Error{Code: CodeBodyTooLarge, Err: err,
			Detail: fmt.Sprintf("the request body is larger than %d bytes", tooLarge.Limit)}).With("limit", tooLarge.Limit)
	case errors.As(err, &invalid):
		return (&Error{Code: CodeInvalidID, Detail: fmt.Sprintf("%s: %s", invalid.Field, invalid.Reason), Err: err}).With("field", invalid.Field)
	case errors.As(err, &bad):
		p := &Error{Code: bad.Code, Detail: bad.Detail, Err: err}
		if bad.Field != "" {
			p.With("field", bad.Field)
		}
		if bad.Variable != "" {
			p.With("variable", bad.Variable)
		}
		return p
	case errors.As(err, &rejected):
		r := rejected.Result
		return (&Error{Code: "import_rejected", Err: err, Detail: fmt.Sprintf(
			"all_or_nothing: %d conflict and %d invalid items; nothing was written", r.Summary.Conflict, r.Summary.Invalid)}).
			With("batch_fingerprint", r.BatchFingerprint).With("results", r.Results).With("summary", r.Summary)
	case errors.As(err, &vc):
		return (&Error{Code: "version_conflict", Err: err, Detail: fmt.Sprintf(
			"base_version %d is not the latest version of %s (%d)", vc.Base, vc.Agent, vc.Latest)}).With("latest_version", vc.Latest)
	case errors.As(err, &rc) && errors.As(err, &header):
		return (&Error{Code: CodePreconditionFailed, Err: err, Detail: fmt.Sprintf(
			"If-Match names another revision; the current revision is %d", rc.Current)}).With("current_revision", rc.Current)
	case errors.As(err, &rc):
		return (&Error{Code: "revision_conflict", Err: err, Detail: fmt.Sprintf(
			"expected_revision is not the current revision (%d); re-read and retry", rc.Current)}).With("current_revision", rc.Current)
	case errors.As(err, &ra):
		return (&Error{Code: "release_active", Err: err, Detail: fmt.Sprintf(
			"release %s is active; the pointer moves only through it", ra.ReleaseID)}).With("release_id", ra.ReleaseID)
	case errors.As(err, &limit):
		return (&Error{Code: CodeLimitExceeded, Err: err, Detail: limitDetail(limit)}).
			With("field", limit.Name).With("limit", limit.Limit)
	case errors.Is(err, promptstore.ErrAgentNotFound):
		return &Error{Code: "agent_not_found", Detail: "no such agent", Err: err}
	case errors.Is(err, promptstore.ErrVersionNotFound):
		return &Error{Code: "version_not_found", Detail: "no such version of the agent", Err: err}
	case errors.Is(err, promptstore.ErrNoPointer):
		return &Error{Code: "no_pointer", Detail: "the env has no pointer yet: no version was published to it", Err: err}
	case errors.Is(err, promptstore.ErrVersionRevoked):
		return &Error{Code: "version_revoked", Detail: "the version is revoked in this env", Err: err}
	case errors.Is(err, promptstore.ErrVersionCurrent):
		return &Error{Code: "version_current", Detail: "the version is the one the env pointer names; move the pointer first", Err: err}
	case errors.Is(err, promptstore.ErrPreconditionRequired):
		return &Error{Code: CodePreconditionRequired, Err: err,
			Detail: `send expected_revision in the body or If-Match: "<revision>" (expected_revision 0 or If-None-Match: * creates the pointer)`}
	case errors.Is(err, idempotency.ErrKeyReused):
		return (&Error{Code: CodeIdempotencyReused, Err: err,
			Detail: "this Idempotency-Key was used with another request body"}).With("field", headerIdempotencyKey)
	case errors.Is(err, idempotency.ErrInProgress):
		return &Error{Code: CodeIdempotencyBusy, Err: err, Detail: "a request with this Idempotency-Key is still in progress; retry shortly"}
	case errors.Is(err, promptstore.ErrUnavailable), errors.Is(err, sqlstore.ErrUnavailable):
		return (&Error{Code: CodeStoreUnavailable, Detail: "the database is unavailable; nothing was changed; retry later", Err: err}).
			With("store", "sql").WithHeader("Retry-After", "1")
	case errors.Is(err, locks.ErrUnavailable):
		return (&Error{Code: CodeStoreUnavailable, Detail: "the lock store is unavailable; retry later", Err: err}).
			With("store", "redis").WithHeader("Retry-After", "1")
	case errors.Is(err, locks.ErrTooManyWaiters):
		return (&Error{Code: "quota_exceeded", Detail: "too many lease requests are waiting on this instance; retry later", Err: err}).
			WithHeader("Retry-After", "1")
	case errors.As(err, &expired):
		return (&Error{Code: "cursor_expired", Err: err, Detail: fmt.Sprintf(
			"the feed no longer keeps events after this position; resume from %d (or since=0)", expired.Oldest)}).With("oldest", strconv.FormatInt(expired.Oldest, 10))
	case errors.As(err, &ahead): // a position checked at the start, then the store went back
		return (&Error{Code: CodeStoreUnavailable, Err: err, Detail: fmt.Sprintf(
			"the feed's store is behind position %d (its head is %d); retry later", ahead.After, ahead.Head)}).
			With("store", "sql").WithHeader("Retry-After", "1")
	case errors.Is(err, echo.ErrNotFound):
		return &Error{Code: CodeNotFound, Detail: "no such route", Err: err}
	case errors.Is(err, echo.ErrMethodNotAllowed):
		return &Error{Code: CodeMethodNotAllowed, Detail: "the route does not accept this method", Err: err}
	}
	return &Error{Code: CodeInternal, Detail: "an unexpected error occurred", Err: err}
}

// coordinationProblem maps the errors of releases, sessions and leases
// (nil for any other error; problemFor maps those).
func coordinationProblem(err error) *Error {
	var (
		e     *Error
		trans *release.InvalidTransition
		sf    *locks.StaleFenceError
		lh    *session.LeaseHeld
		hr    *leases.HeldError
		held  *locks.HeldError
		lost  *leases.LostError
		lq    *leases.QuotaError
	)
	switch {
	case errors.As(err, &e):
		return nil // an *Error wrapping a domain error keeps its own code
	case errors.As(err, &lq):
		return (&Error{Code: "quota_exceeded", Err: err, Detail: fmt.Sprintf(
			"this token holds %d live generic leases, the limit; release one or retry when one expires", lq.Limit)}).
			With("limit", lq.Limit).WithHeader("Retry-After", retryAfter(lq.RetryAfter))
	case errors.As(err, &trans):
		return (&Error{Code: "invalid_transition", Err: err, Detail: fmt.Sprintf("a release that is %s cannot %s", trans.State, trans.Action)}).
			With("state", string(trans.State))
	case errors.Is(err, release.ErrNotFound):
		return &Error{Code: "release_not_found", Detail: "no such release", Err: err}
	case errors.As(err, &sf):
		return (&Error{Code: "stale_fence", Err: err, Detail: fmt.Sprintf(
			"fence %d is not the session's current fence %d: the lease was taken over", sf.Fence, sf.Current)}).With("current_fence", sf.Current)
	case errors.As(err, &lh):
		return leaseHeld(err, lh.Holder, lh.ExpiresAt)
	case errors.As(err, &hr) && len(hr.Conflicts) > 0:
		p := leaseHeld(err, hr.Conflicts[0].Holder, hr.Conflicts[0].ExpiresAt)
		conflicts := make([]map[string]any, len(hr.Conflicts))
		for i, c := range hr.Conflicts {
			conflicts[i] = map[string]any{"resource": c.Resource, "holder": c.Holder, "expires_at": timestamp(c.ExpiresAt)}
		}
		return p.With("conflicts", conflicts)
	case errors.As(err, &held) && len(held.Conflicts) > 0:
		return leaseHeld(err, held.Conflicts[0].Holder, held.Conflicts[0].ExpiresAt)
	case errors.As(err, &lost):
		return (&Error{Code: "lease_lost", Err: err, Detail: "the lease no longer holds some of its resources (expired or taken over)"}).
			With("resources", lost.Resources)
	case errors.Is(err, leases.ErrNotFound):
		return &Error{Code: "lease_not_found", Detail: "no such lease: a lease_id is the one POST /v1/leases answered", Err: err}
	case errors.Is(err, session.ErrLeaseLost):
		return &Error{Code: "lease_lost", Detail: "the token is not the lease's current token (expired, released or taken over)", Err: err}
	case errors.Is(err, session.ErrNotFound):
		return &Error{Code: CodeSessionNotFound, Detail: "no such session", Err: err}
	case errors.Is(err, session.ErrClosed):
		return (&Error{Code: "session_closed", Detail: "the session is closed", Err: err}).With("state", session.Closed)
	case errors.Is(err, session.ErrExists):
		return &Error{Code: "session_exists", Err: err,
			Detail: "a session with this id exists for another agent, env or user, or is closed"}
	case errors.Is(err, session.ErrMismatch):
		return &Error{Code: "session_mismatch", Detail: "the session belongs to another agent or env", Err: err}
	}
	return nil
}

// limitDetail says which limit a request would pass.
func limitDetail(l *promptstore.LimitError) string {
	what := map[string]string{
		session.LimitTurns:              "the session would hold more than %d turns; nothing was written",
		session.LimitBytes:              "the session's turns and state entries would take more than %d bytes; nothing was written",
		session.LimitStateKeys:          "the session would hold more than %d state entries; nothing was written",
		session.LimitStateBytes:         "the state entries take more than %d bytes in one answer; ask for fewer with ?keys=",
		promptstore.LimitAssembledBytes: "the assembled answer would take more than %d bytes",
		promptstore.LimitDiffBytes:      "the two configs take more than %d bytes together, too large to diff",
		promptstore.LimitDiffLines:      "the two configs have more than %d lines together, too many to diff",
		board.LimitBoardsPerToken:       "this token created %d boards, its limit; delete one it no longer uses (empty boards also expire)",
		board.LimitBoards:               "the server holds %d boards, its limit; delete boards no longer used (empty boards also expire)",
	}[l.Name]
	if what == "" {
		what = l.Name + " is limited to %d"
	}
	return fmt.Sprintf(what, l.Limit)
}

// leaseHeld is 423 lease_held naming the holder and when its lease
// expires (when known).
func leaseHeld(err error, holder string, expires time.Time) *Error {
	p := &Error{Code: "lease_held", Detail: "the lease is held by another holder", Err: err}
	if holder != "" {
		p.Detail = fmt.Sprintf("the lease is held by %q", holder)
		p.With("holder", holder)
	}
	if !expires.IsZero() {
		p.With("expires_at", timestamp(expires))
	}
	return p
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

// boardProblem maps the errors of boards (nil for any other error).
func boardProblem(err error) *Error {
	var (
		e     *Error
		trans *board.InvalidTransition
		sf    *board.StaleFence
		cl    *board.Claimed
		ce    *board.ClaimExpired
		inUse *board.InUse
		open  *board.OpenRecords
		nc    *board.NotCreator
		quota *board.QuotaExceeded
	)
	switch {
	case errors.As(err, &e):
		return nil
	case errors.Is(err, board.ErrBoardNotFound):
		return &Error{Code: "board_not_found", Detail: "no such board", Err: err}
	case errors.Is(err, board.ErrRecordNotFound):
		return &Error{Code: "record_not_found", Detail: "no such record on the board", Err: err}
	case errors.As(err, &trans):
		d := fmt.Sprintf("a record in state %s cannot move to %s", trans.State, trans.To)
		if trans.To == "" {
			d = fmt.Sprintf("a record in state %s cannot be written", trans.State)
		}
		return (&Error{Code: "invalid_transition", Detail: d, Err: err}).With("state", trans.State)
	case errors.As(err, &sf):
		return (&Error{Code: "stale_fence", Err: err, Detail: fmt.Sprintf(
			"fence %d is not the record's current fence %d: the claim was released, reclaimed or taken", sf.Fence, sf.Current)}).
			With("current_fence", sf.Current)
	case errors.As(err, &cl):
		return (&Error{Code: "claimed", Err: err, Detail: fmt.Sprintf("the record is claimed by %q; writes carry its fence", cl.Owner)}).
			With("owner", cl.Owner).With("claim_expires_at", timestamp(cl.ExpiresAt))
	case errors.As(err, &ce):
		return (&Error{Code: "claim_expired", Err: err, Detail: "the claim expired before this write; claim the record again"}).
			With("claim_expires_at", timestamp(ce.ExpiresAt))
	case errors.As(err, &inUse):
		return (&Error{Code: "board_in_use", Err: err, Detail: "records are in states the new definition removes"}).
			With("states", inUse.States)
	case errors.As(err, &open):
		return (&Error{Code: "board_in_use", Err: err, Detail: fmt.Sprintf(
			"%d records of the board are not in a terminal state; finish or cancel them first", open.Open)}).With("open_records", open.Open)
	case errors.As(err, &nc):
		return (&Error{Code: CodeForbidden, Err: err, Detail: "only the token that created the board, or an admin token, may delete it"}).
			With("created_by", nc.CreatedBy)
	case errors.As(err, &quota):
		return (&Error{Code: "quota_exceeded", Err: err, Detail: fmt.Sprintf("over the board's %s limit (%d); retry later", quota.What, quota.Limit)}).
			With("limit", quota.Limit).WithHeader("Retry-After", retryAfter(quota.RetryAfter))
	}
	return nil
}

// dataProblem maps the errors of bundles, exposures and outcomes.
func dataProblem(err error) *Error {
	var tooLarge *release.BundleTooLarge
	if errors.As(err, &tooLarge) {
		return (&Error{Code: "bundle_too_large", Err: err,
			Detail: fmt.Sprintf("the bundle is larger than %d bytes; ask for fewer agents or envs", tooLarge.Limit)}).With("limit", tooLarge.Limit)
	}
	return nil
}
