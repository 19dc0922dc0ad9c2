package bundle

import (
	"errors"
	"fmt"

	"github.com/promptd/promptd/prompt"
)

// ErrAskServer: only the server can answer; resolve or assemble over
// HTTP. *AskServer says why.
var ErrAskServer = errors.New("bundle: ask the server")

// AskServer is the answer for what a bundle cannot decide locally.
type AskServer struct {
	Reason string // "pin_unknown", "pin_revoked", "version_missing", "format_unknown"
}

func (e *AskServer) Error() string        { return "bundle: ask the server: " + e.Reason }
func (e *AskServer) Is(target error) bool { return target == ErrAskServer }

// Reasons of an AskServer answer.
const (
	ReasonPinUnknown     = "pin_unknown"     // a session without a pinned version
	ReasonPinRevoked     = "pin_revoked"     // the pin is revoked: the server re-pins
	ReasonVersionMissing = "version_missing" // the bundle lacks the version's config
	ReasonFormatUnknown  = "format_unknown"  // the bundle's format is newer than this evaluator
)

// Error is an answer the server gives as a problem: its code and status,
// and the field or variable at fault.
type Error struct {
	Code     string
	Status   int
	Field    string
	Variable string
	Detail   string
}

func (e *Error) Error() string { return fmt.Sprintf("bundle: %s (%d): %s", e.Code, e.Status, e.Detail) }

// fromInvalid is the server's answer to a *prompt.InvalidError.
func fromInvalid(err error) error {
	var ie *prompt.InvalidError
	if !errors.As(err, &ie) {
		return err
	}
	status := 422
	if ie.Code == prompt.CodeInvalidField || ie.Code == prompt.CodeInvalidID {
		status = 400
	}
	return &Error{Code: ie.Code, Status: status, Field: ie.Field, Variable: ie.Variable, Detail: ie.Detail}
}
