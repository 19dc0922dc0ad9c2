package release

import (
	"fmt"

	"github.com/promptd/promptd/problem"
)

// Errors of the release package; test with errors.Is / errors.As.
var (
	ErrNotFound = problem.New(problem.ReleaseNotFound, "release: not found", "no such release")
)

// Codes of validation errors (the API's codes).
const (
	CodeInvalidPercent = problem.InvalidPercent
	CodeInvalidSteps   = problem.InvalidSteps
	CodeInvalidField   = problem.InvalidField
)

// InvalidError is bad input, with the field it concerns: problem's type,
// so every domain package says "invalid" the same way.
type InvalidError = problem.InvalidError

func invalidf(code, field, format string, args ...any) *InvalidError {
	return &InvalidError{Code: code, Field: field, Detail: fmt.Sprintf(format, args...)}
}

// InvalidTransition: the transition table has no such move from State.
type InvalidTransition struct {
	State  State
	Action Action
}

func (e *InvalidTransition) Error() string {
	return fmt.Sprintf("release: cannot %s a release that is %s", e.Action, e.State)
}

// Problem is 409 invalid_transition naming the release's state.
func (e *InvalidTransition) Problem() *problem.Problem {
	return (&problem.Problem{Code: problem.InvalidTransition, Detail: fmt.Sprintf("a release that is %s cannot %s", e.State, e.Action)}).
		With("state", string(e.State))
}
