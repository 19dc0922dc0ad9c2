package session

import (
	"errors"
	"fmt"
	"time"
)

// Errors of the session package; test with errors.Is / errors.As.
var (
	ErrNotFound = errors.New("session: not found")
	ErrClosed   = errors.New("session: closed")
	// ErrExists: the id is taken by another agent, env or user, or closed.
	ErrExists = errors.New("session: exists")
	// ErrMismatch: the session belongs to another agent or env.
	ErrMismatch = errors.New("session: belongs to another agent or env")
	// ErrLeaseLost: the presented lease token is not the current one.
	ErrLeaseLost = errors.New("session: lease lost")
)

// RevisionConflict: the session (or state entry) is at another revision.
type RevisionConflict struct {
	Current int64
}

func (e *RevisionConflict) Error() string {
	return fmt.Sprintf("session: revision conflict (current %d)", e.Current)
}

// StaleFence: the write's fence is not the session's current fence.
type StaleFence struct {
	Fence   int64
	Current int64
}

func (e *StaleFence) Error() string {
	return fmt.Sprintf("session: stale fence %d (current %d)", e.Fence, e.Current)
}

// LeaseHeld: an unfenced write (or a lease request) met a held lease.
type LeaseHeld struct {
	Holder    string
	ExpiresAt time.Time
}

func (e *LeaseHeld) Error() string {
	return fmt.Sprintf("session: lease held by %q until %s", e.Holder, e.ExpiresAt.UTC().Format(time.RFC3339))
}

// InvalidError is bad input, with the field it concerns.
type InvalidError struct {
	Code   string // invalid_field, invalid_id
	Field  string
	Detail string
}

func (e *InvalidError) Error() string { return "session: " + e.Code + ": " + e.Field + ": " + e.Detail }

func invalidf(field, format string, args ...any) *InvalidError {
	return &InvalidError{Code: "invalid_field", Field: field, Detail: fmt.Sprintf(format, args...)}
}
