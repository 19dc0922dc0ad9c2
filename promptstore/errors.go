package promptstore

import (
	"errors"
	"fmt"

	"github.com/promptd/promptd/prompt"
	"github.com/promptd/promptd/sqlstore"
)

// Sentinel errors; test with errors.Is.
var (
	ErrAgentNotFound   = errors.New("promptstore: agent not found")
	ErrVersionNotFound = errors.New("promptstore: version not found")
	ErrNoPointer       = errors.New("promptstore: env has no pointer")
	ErrVersionRevoked  = errors.New("promptstore: version revoked in this env")
	ErrVersionCurrent  = errors.New("promptstore: version is the env's current one")
	// ErrPreconditionRequired: a pointer write named no expected revision.
	ErrPreconditionRequired = errors.New("promptstore: expected revision required")
	// ErrUnavailable: the SQL store could not be reached; nothing was
	// written. It is sqlstore's sentinel: one "database unavailable" error
	// whichever package met the outage.
	ErrUnavailable = sqlstore.ErrUnavailable
)

// VersionConflict: the agent's latest version is not the base the author
// started from.
type VersionConflict struct {
	Agent  string
	Base   int
	Latest int
}

func (e *VersionConflict) Error() string {
	return fmt.Sprintf("promptstore: %s: base version %d is not the latest (%d)", e.Agent, e.Base, e.Latest)
}

// RevisionConflict: a conditional write found another revision.
type RevisionConflict struct {
	Expected int64
	Current  int64
}

func (e *RevisionConflict) Error() string {
	return fmt.Sprintf("promptstore: expected revision %d, current %d", e.Expected, e.Current)
}

// ReleaseActive: the env pointer names an active release, so the pointer
// can only move through that release.
type ReleaseActive struct {
	ReleaseID string
}

func (e *ReleaseActive) Error() string {
	return fmt.Sprintf("promptstore: release %s is active", e.ReleaseID)
}

// Validation codes, stable across versions (they are the API's codes);
// package prompt defines them with the error type they go with.
const (
	CodeInvalidConfig      = prompt.CodeInvalidConfig
	CodeInvalidField       = prompt.CodeInvalidField
	CodeInvalidID          = prompt.CodeInvalidID
	CodeUndeclaredVariable = prompt.CodeUndeclaredVariable
	CodeMissingVariable    = prompt.CodeMissingVariable
	CodeInvalidVariable    = prompt.CodeInvalidVariable
)

// InvalidError is bad input: Code says what kind, Field (a JSON path) or
// Variable says where. It is prompt's type, the one validation error
// every domain package returns (board, release and session name it the
// same way).
type InvalidError = prompt.InvalidError

func invalid(code, field, format string, args ...any) *InvalidError {
	return &InvalidError{Code: code, Field: field, Detail: fmt.Sprintf(format, args...)}
}

// LimitError: the request would pass a configured limit; nothing was
// written or rendered. Name is the limit's stable name ("session_turns",
// "session_bytes", "session_state_keys", "assembled_bytes", "diff_bytes",
// "diff_lines", ...), Limit its value. The session package uses it too.
type LimitError struct {
	Name  string
	Limit int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("promptstore: over the %s limit (%d)", e.Name, e.Limit)
}
