package release

import (
	"errors"
	"fmt"

	"github.com/promptd/promptd/promptstore"
)

// Errors of the release package; test with errors.Is / errors.As.
var (
	ErrNotFound = errors.New("release: not found")
)

// Codes of validation errors (the API's codes).
const (
	CodeInvalidPercent = "invalid_percent"
	CodeInvalidSteps   = "invalid_steps"
	CodeInvalidField   = "invalid_field"
)

// InvalidError is bad input, with the field it concerns: promptstore's
// type, so every domain package says "invalid" the same way.
type InvalidError = promptstore.InvalidError

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
