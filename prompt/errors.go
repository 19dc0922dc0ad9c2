package prompt

import (
	"github.com/promptd/promptd/problem"
)

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
// Variable says where. It is problem's type, the one validation error of
// every domain package.
type InvalidError = problem.InvalidError

// invalid is an *InvalidError with a formatted detail.
var invalid = problem.Invalid
