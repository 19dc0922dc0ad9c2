// Package ident is promptd's identifier rule (api/openapi.yaml, Conventions:
// Identifiers), checked once where a value enters: agent, env,
// session_id, board, record and state-key names are 1..128 characters of
// [A-Za-z0-9._-], the first alphanumeric; generic lease resource names
// may also hold ':' and '/', up to 256. They become Redis key parts and
// SQL keys, so braces, spaces and control characters never pass.
package ident

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/promptd/promptd/problem"
)

// ErrInvalid: a value does not follow the identifier rule.
var ErrInvalid = errors.New("ident: invalid identifier")

// InvalidError names the field whose value is not a valid identifier and
// says why.
type InvalidError struct {
	Field  string
	Reason string
}

func (e *InvalidError) Error() string { return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason) }

// Is makes errors.Is(err, ErrInvalid) hold.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Problem is 400 invalid_id naming the field.
func (e *InvalidError) Problem() *problem.Problem {
	return (&problem.Problem{Code: problem.InvalidID, Detail: fmt.Sprintf("%s: %s", e.Field, e.Reason)}).With("field", e.Field)
}

// Check is Validate giving the one validation error of the domain
// packages (*problem.InvalidError, code invalid_id, naming field).
func Check(field, s string) error {
	if err := Validate(field, s); err != nil {
		return AsInvalid(err)
	}
	return nil
}

// AsInvalid turns an *InvalidError of this package into a
// *problem.InvalidError (code invalid_id); other errors are returned as
// they are.
func AsInvalid(err error) error {
	var ie *InvalidError
	if errors.As(err, &ie) {
		return &problem.InvalidError{Code: problem.InvalidID, Field: ie.Field, Detail: ie.Reason}
	}
	return err
}

// CheckOpaque checks an opaque identifier (user_id, holder, actor): 1..256
// bytes of printable UTF-8.
func CheckOpaque(field, s string) error {
	if s == "" || len(s) > 256 || !utf8.ValidString(s) {
		return &problem.InvalidError{Code: problem.InvalidID, Field: field, Detail: "must be 1..256 bytes of printable UTF-8"}
	}
	for _, r := range s {
		if !unicode.IsPrint(r) && r != ' ' {
			return &problem.InvalidError{Code: problem.InvalidID, Field: field, Detail: "control or non-printable characters are not allowed"}
		}
	}
	return nil
}

// Max lengths of the two rules.
const (
	MaxID       = 128
	MaxResource = 256
)

// Validate checks the identifier rule (agent, env, session_id, state
// keys, boards, records): 1..128 characters of [A-Za-z0-9._-], the first
// alphanumeric.
func Validate(field, s string) error { return check(field, s, MaxID, "") }

// ValidateResource checks a generic lease resource name: the identifier
// rule plus ':' and '/', up to 256 characters.
func ValidateResource(field, s string) error { return check(field, s, MaxResource, ":/") }

func check(field, s string, max int, extra string) error {
	switch {
	case s == "":
		return &InvalidError{Field: field, Reason: "empty"}
	case len(s) > max:
		return &InvalidError{Field: field, Reason: fmt.Sprintf("longer than %d characters", max)}
	case !alnum(s[0]):
		return &InvalidError{Field: field, Reason: "must start with a letter or digit"}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if alnum(c) || c == '.' || c == '_' || c == '-' || strings.IndexByte(extra, c) >= 0 {
			continue
		}
		return &InvalidError{Field: field, Reason: fmt.Sprintf("character %q at %d is not allowed", c, i)}
	}
	return nil
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
