package prompt

import "fmt"

// Validation codes, stable across versions (they are the API's codes).
const (
	CodeInvalidConfig      = "invalid_config"
	CodeInvalidField       = "invalid_field"
	CodeInvalidID          = "invalid_id"
	CodeUndeclaredVariable = "undeclared_variable"
	CodeMissingVariable    = "missing_variable"
	CodeInvalidVariable    = "invalid_variable"
)

// InvalidError is bad input: Code says what kind, Field (a JSON path) or
// Variable says where.
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
	return fmt.Sprintf("prompt: %s: %s: %s", e.Code, where, e.Detail)
}

func invalid(code, field, format string, args ...any) *InvalidError {
	return &InvalidError{Code: code, Field: field, Detail: fmt.Sprintf(format, args...)}
}
