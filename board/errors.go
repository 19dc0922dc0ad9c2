package board

import (
	"errors"
	"fmt"
	"time"

	"github.com/promptd/promptd/promptstore"
)

// Errors of the board package; test with errors.Is / errors.As.
var (
	ErrBoardNotFound  = errors.New("board: no such board")
	ErrRecordNotFound = errors.New("board: no such record")
)

// RevisionConflict: the record (or board) is at another revision. It is
// promptstore's: one revision-conflict type across promptd.
type RevisionConflict = promptstore.RevisionConflict

// LimitError: a count over its limit that retrying does not lower (Name:
// LimitBoards, LimitBoardsPerToken). It is promptstore's: one limit type
// across promptd.
type LimitError = promptstore.LimitError

// Names of the limits of LimitError.
const (
	LimitBoards         = "boards"
	LimitBoardsPerToken = "boards_per_token"
)

// NotCreator: only the board's creator (or an admin token) may delete it.
type NotCreator struct {
	CreatedBy string
}

func (e *NotCreator) Error() string {
	return fmt.Sprintf("board: created by %q; only its creator or an admin token may delete it", e.CreatedBy)
}

// OpenRecords: the board has records not yet in a terminal state.
type OpenRecords struct {
	Open int64
}

func (e *OpenRecords) Error() string {
	return fmt.Sprintf("board: %d records are not in a terminal state", e.Open)
}

// InvalidError is bad input, with the field it concerns (promptstore's
// type, so every domain package says "invalid" the same way).
type InvalidError = promptstore.InvalidError

func invalidf(field, format string, args ...any) *InvalidError {
	return &InvalidError{Code: "invalid_field", Field: field, Detail: fmt.Sprintf(format, args...)}
}

func invalidID(field, format string, args ...any) *InvalidError {
	return &InvalidError{Code: "invalid_id", Field: field, Detail: fmt.Sprintf(format, args...)}
}

// InvalidTransition: the write would move the record along a transition
// its board does not have, or touches a terminal record. State is the
// record's state, To the state asked for ("" when none was).
type InvalidTransition struct {
	State, To string
}

func (e *InvalidTransition) Error() string {
	if e.To == "" {
		return fmt.Sprintf("board: a record in state %q cannot be written", e.State)
	}
	return fmt.Sprintf("board: no transition from %q to %q", e.State, e.To)
}

// Claimed: an unfenced write met a claimed record.
type Claimed struct {
	Owner     string
	ExpiresAt time.Time
}

func (e *Claimed) Error() string {
	return fmt.Sprintf("board: record claimed by %q until %s", e.Owner, e.ExpiresAt.UTC().Format(time.RFC3339Nano))
}

// ClaimExpired: the write carried the claim's fence, but the claim
// expired (by the SQL server's clock) before it.
type ClaimExpired struct {
	ExpiresAt time.Time
}

func (e *ClaimExpired) Error() string {
	return fmt.Sprintf("board: the claim expired at %s", e.ExpiresAt.UTC().Format(time.RFC3339Nano))
}

// StaleFence: the write's fence is not the record's current fence (the
// claim was released, reclaimed or taken by another).
type StaleFence struct {
	Fence, Current int64
}

func (e *StaleFence) Error() string {
	return fmt.Sprintf("board: stale fence %d (current %d)", e.Fence, e.Current)
}

// InUse: a definition change would remove states that records are in.
type InUse struct {
	States []string
}

func (e *InUse) Error() string { return fmt.Sprintf("board: records are in states %v", e.States) }

// QuotaExceeded: a claim over the board's claims_per_minute for its
// actor, or a create over the non-terminal record limit. RetryAfter is
// when to try again.
type QuotaExceeded struct {
	What       string // "claims_per_minute", "records"
	Limit      int64
	RetryAfter time.Duration
}

func (e *QuotaExceeded) Error() string {
	return fmt.Sprintf("board: quota %s (%d) exceeded; retry after %s", e.What, e.Limit, e.RetryAfter)
}
