package session

import (
	"errors"
	"fmt"
	"time"

	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
)

// Errors of the session package; test with errors.Is / errors.As.
var (
	ErrNotFound = errors.New("session: not found")
	ErrClosed   = errors.New("session: closed")
	// ErrExists: the id is taken by another agent, env or user, or closed.
	ErrExists = errors.New("session: exists")
	// ErrMismatch: the session belongs to another agent or env.
	ErrMismatch = errors.New("session: belongs to another agent or env")
	// ErrLeaseLost: the presented lease token is not the current one
	// (locks' sentinel: one lease-lost error whichever package noticed).
	ErrLeaseLost = locks.ErrLeaseLost
)

// RevisionConflict: the session (or state entry) is at another revision.
// It is promptstore's: one revision-conflict type across promptd.
type RevisionConflict = promptstore.RevisionConflict

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

// InvalidError is bad input, with the field it concerns: promptstore's
// type, so every domain package says "invalid" the same way.
type InvalidError = promptstore.InvalidError

func invalidf(field, format string, args ...any) *InvalidError {
	return &InvalidError{Code: "invalid_field", Field: field, Detail: fmt.Sprintf(format, args...)}
}
