package problem

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"time"
)

// Coded is an error that knows the problem it is answered with. Every
// error a promptd package returns to its callers is Coded (or wraps one):
// its code is chosen where the error is defined, beside the condition it
// names, and Of only finds it.
type Coded interface {
	error
	// Problem is a new *Problem (the caller may add to it); its Err is
	// set by Of.
	Problem() *Problem
}

// Sentinel is a fixed error with its code: what a domain package declares
// as a variable and callers test with errors.Is (identity).
type Sentinel struct {
	msg, code, detail string
	fields            map[string]any
	header            http.Header
}

// New returns a Sentinel whose Error is msg ("release: not found", for
// logs and errors.Is) and whose problem is code with detail (for the
// client: no internal text).
func New(code, msg, detail string) *Sentinel {
	return &Sentinel{msg: msg, code: code, detail: detail}
}

// With adds an extra member to every problem of s and returns s; for
// declarations only.
func (s *Sentinel) With(key string, value any) *Sentinel {
	if s.fields == nil {
		s.fields = map[string]any{}
	}
	s.fields[key] = value
	return s
}

// WithHeader adds a response header to every problem of s and returns s;
// for declarations only.
func (s *Sentinel) WithHeader(key, value string) *Sentinel {
	if s.header == nil {
		s.header = http.Header{}
	}
	s.header.Add(key, value)
	return s
}

func (s *Sentinel) Error() string { return s.msg }

// Code is s's code.
func (s *Sentinel) Code() string { return s.code }

// Problem is s's problem: a new one each time.
func (s *Sentinel) Problem() *Problem {
	p := &Problem{Code: s.code, Detail: s.detail}
	if s.fields != nil {
		p.Fields = maps.Clone(s.fields)
	}
	if s.header != nil {
		p.Header = s.header.Clone()
	}
	return p
}

// Unavailable is 503 store_unavailable naming the store ("sql",
// "redis") with a Retry-After of one second: nothing was changed.
func Unavailable(msg, store, detail string) *Sentinel {
	return New(StoreUnavailable, msg, detail).With("store", store).WithHeader("Retry-After", "1")
}

// InvalidError is bad input: Code says what kind (InvalidField,
// InvalidID, InvalidConfig, the variable codes, ...), Field (a JSON path)
// or Variable says where. It is the one validation error every domain
// package returns.
type InvalidError struct {
	Code     string
	Field    string
	Variable string
	Detail   string
}

func (e *InvalidError) Error() string {
	where := e.Field
	if e.Variable != "" {
		where = "variable " + e.Variable
	}
	return fmt.Sprintf("%s: %s: %s", e.Code, where, e.Detail)
}

// Problem is e's code with its field or variable.
func (e *InvalidError) Problem() *Problem {
	p := &Problem{Code: e.Code, Detail: e.Detail}
	if e.Field != "" {
		p.With("field", e.Field)
	}
	if e.Variable != "" {
		p.With("variable", e.Variable)
	}
	return p
}

// Invalid is an *InvalidError with a formatted detail.
func Invalid(code, field, format string, args ...any) *InvalidError {
	return &InvalidError{Code: code, Field: field, Detail: fmt.Sprintf(format, args...)}
}

// RevisionConflictError: a conditional write found another revision. It
// is 409 revision_conflict, or 412 precondition_failed when the
// precondition came from a header (FromHeader).
type RevisionConflictError struct {
	Expected int64
	Current  int64
}

func (e *RevisionConflictError) Error() string {
	return fmt.Sprintf("expected revision %d, current %d", e.Expected, e.Current)
}

// Problem is 409 revision_conflict with the current revision.
func (e *RevisionConflictError) Problem() *Problem {
	return (&Problem{Code: RevisionConflict, Detail: fmt.Sprintf(
		"expected_revision is not the current revision (%d); re-read and retry", e.Current)}).With("current_revision", e.Current)
}

// LimitError: the request would pass a configured limit; nothing was
// written or rendered. Name is the limit's stable name ("session_turns",
// "assembled_bytes", "boards_per_token", ...), Limit its value, and
// Detail, when set, a sentence with one %d for Limit that says what the
// limit bounds.
type LimitError struct {
	Name   string
	Limit  int64
	Detail string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("over the %s limit (%d)", e.Name, e.Limit)
}

// Problem is 422 limit_exceeded naming the limit.
func (e *LimitError) Problem() *Problem {
	what := e.Detail
	if what == "" {
		what = e.Name + " is limited to %d"
	}
	return (&Problem{Code: LimitExceeded, Detail: fmt.Sprintf(what, e.Limit)}).
		With("field", e.Name).With("limit", e.Limit)
}

// Of maps any error a promptd package returns to the Problem it is
// answered with. A *Problem (even wrapping a domain error) keeps its own
// code; otherwise the first Coded error in err's chain gives it; an error
// that is neither is internal, which the caller logs.
func Of(err error) *Problem {
	var (
		p        *Problem
		tooLarge *http.MaxBytesError
		rc       *RevisionConflictError
		header   fromHeader
		c        Coded
	)
	switch {
	case errors.As(err, &p):
		return p
	case errors.As(err, &rc) && errors.As(err, &header):
		return (&Problem{Code: PreconditionFailed, Err: err, Detail: fmt.Sprintf(
			"If-Match names another revision; the current revision is %d", rc.Current)}).With("current_revision", rc.Current)
	case errors.As(err, &tooLarge):
		return (&Problem{Code: BodyTooLarge, Err: err,
			Detail: fmt.Sprintf("the request body is larger than %d bytes", tooLarge.Limit)}).With("limit", tooLarge.Limit)
	case errors.As(err, &c):
		p := c.Problem()
		p.Err = err
		return p
	}
	return &Problem{Code: Internal, Detail: "an unexpected error occurred", Err: err}
}

// HeldBy is 423 lease_held naming the holder and when its lease
// expires (each when known).
func HeldBy(holder string, expires time.Time) *Problem {
	p := &Problem{Code: LeaseHeld, Detail: "the lease is held by another holder"}
	if holder != "" {
		p.Detail = fmt.Sprintf("the lease is held by %q", holder)
		p.With("holder", holder)
	}
	if !expires.IsZero() {
		p.With("expires_at", Timestamp(expires))
	}
	return p
}
