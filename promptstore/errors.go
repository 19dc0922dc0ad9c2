package promptstore

import (
	"fmt"

	"github.com/promptd/promptd/problem"
	"github.com/promptd/promptd/prompt"
	"github.com/promptd/promptd/sqlstore"
)

// Sentinel errors; test with errors.Is.
var (
	ErrAgentNotFound   = problem.New(problem.AgentNotFound, "promptstore: agent not found", "no such agent")
	ErrVersionNotFound = problem.New(problem.VersionNotFound, "promptstore: version not found", "no such version of the agent")
	ErrNoPointer       = problem.New(problem.NoPointer, "promptstore: env has no pointer",
		"the env has no pointer yet: no version was published to it")
	ErrVersionRevoked = problem.New(problem.VersionRevoked, "promptstore: version revoked in this env", "the version is revoked in this env")
	ErrVersionCurrent = problem.New(problem.VersionCurrent, "promptstore: version is the env's current one",
		"the version is the one the env pointer names; move the pointer first")
	// ErrPreconditionRequired: a pointer write named no expected revision.
	ErrPreconditionRequired = problem.New(problem.PreconditionRequired, "promptstore: expected revision required",
		`send expected_revision in the body or If-Match: "<revision>" (expected_revision 0 or If-None-Match: * creates the pointer)`)
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

// Problem is 409 version_conflict with the latest version.
func (e *VersionConflict) Problem() *problem.Problem {
	return (&problem.Problem{Code: problem.VersionConflict, Detail: fmt.Sprintf(
		"base_version %d is not the latest version of %s (%d)", e.Base, e.Agent, e.Latest)}).With("latest_version", e.Latest)
}

// RevisionConflict: a conditional write found another revision. It is
// problem's type: one revision-conflict error across promptd.
type RevisionConflict = problem.RevisionConflictError

// ReleaseActive: the env pointer names an active release, so the pointer
// can only move through that release.
type ReleaseActive struct {
	ReleaseID string
}

func (e *ReleaseActive) Error() string {
	return fmt.Sprintf("promptstore: release %s is active", e.ReleaseID)
}

// Problem is 409 release_active naming the release.
func (e *ReleaseActive) Problem() *problem.Problem {
	return (&problem.Problem{Code: problem.ReleaseActive, Detail: fmt.Sprintf(
		"release %s is active; the pointer moves only through it", e.ReleaseID)}).With("release_id", e.ReleaseID)
}

// Validation codes, stable across versions (they are the API's codes).
const (
	CodeInvalidConfig      = problem.InvalidConfig
	CodeInvalidField       = problem.InvalidField
	CodeInvalidID          = problem.InvalidID
	CodeUndeclaredVariable = problem.UndeclaredVariable
	CodeMissingVariable    = problem.MissingVariable
	CodeInvalidVariable    = problem.InvalidVariable
)

// InvalidError is bad input: Code says what kind, Field (a JSON path) or
// Variable says where. It is problem's type, the one validation error
// every domain package returns.
type InvalidError = prompt.InvalidError

// invalid is an *InvalidError with a formatted detail.
var invalid = problem.Invalid

// LimitError: the request would pass a configured limit; nothing was
// written or rendered. It is problem's type: one limit error across
// promptd.
type LimitError = problem.LimitError

// limitError is a LimitError of this package, with its sentence.
func limitError(name string, limit int64) *LimitError {
	return &LimitError{Name: name, Limit: limit, Detail: map[string]string{
		LimitAssembledBytes: "the assembled answer would take more than %d bytes",
		LimitDiffBytes:      "the two configs take more than %d bytes together, too large to diff",
		LimitDiffLines:      "the two configs have more than %d lines together, too many to diff",
	}[name]}
}
