package session

import (
	"fmt"
	"time"

	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/problem"
)

// Errors of the session package; test with errors.Is / errors.As.
var (
	ErrNotFound = problem.New(problem.SessionNotFound, "session: not found", "no such session")
	ErrClosed   = problem.New(problem.SessionClosed, "session: closed", "the session is closed").With("state", Closed)
	// ErrExists: the id is taken by another agent, env or user, or closed.
	ErrExists = problem.New(problem.SessionExists, "session: exists",
		"a session with this id exists for another agent, env or user, or is closed")
	// ErrMismatch: the session belongs to another agent or env.
	ErrMismatch = problem.New(problem.SessionMismatch, "session: belongs to another agent or env",
		"the session belongs to another agent or env")
	// ErrLeaseLost: the presented lease token is not the current one
	// (locks' sentinel: one lease-lost error whichever package noticed).
	ErrLeaseLost = locks.ErrLeaseLost
)

// RevisionConflict: the session (or state entry) is at another revision.
// It is problem's: one revision-conflict type across promptd.
type RevisionConflict = problem.RevisionConflictError

// StaleFence: the write's fence is not the session's current fence. It is
// locks' StaleFenceError (errors.Is(err, locks.ErrStaleFence) holds).
type StaleFence = locks.StaleFenceError

// LeaseHeld: an unfenced write (or a lease request) met a held lease.
type LeaseHeld struct {
	Holder    string
	ExpiresAt time.Time
}

func (e *LeaseHeld) Error() string {
	return fmt.Sprintf("session: lease held by %q until %s", e.Holder, e.ExpiresAt.UTC().Format(time.RFC3339))
}

// Problem is 423 lease_held naming the holder.
func (e *LeaseHeld) Problem() *problem.Problem { return problem.HeldBy(e.Holder, e.ExpiresAt) }

// InvalidError is bad input, with the field it concerns: problem's type,
// so every domain package says "invalid" the same way.
type InvalidError = problem.InvalidError

func invalidf(field, format string, args ...any) *InvalidError {
	return &InvalidError{Code: "invalid_field", Field: field, Detail: fmt.Sprintf(format, args...)}
}

// limitError is a LimitError of this package, with its sentence.
func limitError(name string, limit int64) *problem.LimitError {
	return &problem.LimitError{Name: name, Limit: limit, Detail: map[string]string{
		LimitTurns:      "the session would hold more than %d turns; nothing was written",
		LimitBytes:      "the session's turns and state entries would take more than %d bytes; nothing was written",
		LimitStateKeys:  "the session would hold more than %d state entries; nothing was written",
		LimitStateBytes: "the state entries take more than %d bytes in one answer; ask for fewer with ?keys=",
	}[name]}
}
