package board

import (
	"fmt"
	"time"

	"github.com/promptd/promptd/problem"
)

// Errors of the board package; test with errors.Is / errors.As.
var (
	ErrBoardNotFound  = problem.New(problem.BoardNotFound, "board: no such board", "no such board")
	ErrRecordNotFound = problem.New(problem.RecordNotFound, "board: no such record", "no such record on the board")
)

// RevisionConflict: the record (or board) is at another revision. It is
// problem's: one revision-conflict type across promptd.
type RevisionConflict = problem.RevisionConflictError

// LimitError: a count over its limit that retrying does not lower (Name:
// LimitBoards, LimitBoardsPerToken). It is problem's: one limit type
// across promptd.
type LimitError = problem.LimitError

// limitError is a LimitError of this package, with its sentence.
func limitError(name string, limit int64) *LimitError {
	return &LimitError{Name: name, Limit: limit, Detail: map[string]string{
		LimitBoardsPerToken: "this token created %d boards, its limit; delete one it no longer uses (empty boards also expire)",
		LimitBoards:         "the server holds %d boards, its limit; delete boards no longer used (empty boards also expire)",
	}[name]}
}

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

// Problem is 403 forbidden naming the creator.
func (e *NotCreator) Problem() *problem.Problem {
	return (&problem.Problem{Code: problem.Forbidden, Detail: "only the token that created the board, or an admin token, may delete it"}).
		With("created_by", e.CreatedBy)
}

// OpenRecords: the board has records not yet in a terminal state.
type OpenRecords struct {
	Open int64
}

func (e *OpenRecords) Error() string {
	return fmt.Sprintf("board: %d records are not in a terminal state", e.Open)
}

// Problem is 409 board_in_use with the count of open records.
func (e *OpenRecords) Problem() *problem.Problem {
	return (&problem.Problem{Code: problem.BoardInUse, Detail: fmt.Sprintf(
		"%d records of the board are not in a terminal state; finish or cancel them first", e.Open)}).With("open_records", e.Open)
}

// InvalidError is bad input, with the field it concerns (problem's type,
// so every domain package says "invalid" the same way).
type InvalidError = problem.InvalidError

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

// Problem is 409 invalid_transition naming the record's state.
func (e *InvalidTransition) Problem() *problem.Problem {
	d := fmt.Sprintf("a record in state %s cannot move to %s", e.State, e.To)
	if e.To == "" {
		d = fmt.Sprintf("a record in state %s cannot be written", e.State)
	}
	return (&problem.Problem{Code: problem.InvalidTransition, Detail: d}).With("state", e.State)
}

// Claimed: an unfenced write met a claimed record.
type Claimed struct {
	Owner     string
	ExpiresAt time.Time
}

func (e *Claimed) Error() string {
	return fmt.Sprintf("board: record claimed by %q until %s", e.Owner, e.ExpiresAt.UTC().Format(time.RFC3339Nano))
}

// Problem is 423 claimed naming the owner and when the claim expires.
func (e *Claimed) Problem() *problem.Problem {
	return (&problem.Problem{Code: problem.Claimed, Detail: fmt.Sprintf("the record is claimed by %q; writes carry its fence", e.Owner)}).
		With("owner", e.Owner).With("claim_expires_at", problem.Timestamp(e.ExpiresAt))
}

// ClaimExpired: the write carried the claim's fence, but the claim
// expired (by the SQL server's clock) before it.
type ClaimExpired struct {
	ExpiresAt time.Time
}

func (e *ClaimExpired) Error() string {
	return fmt.Sprintf("board: the claim expired at %s", e.ExpiresAt.UTC().Format(time.RFC3339Nano))
}

// Problem is 409 claim_expired with when it expired.
func (e *ClaimExpired) Problem() *problem.Problem {
	return (&problem.Problem{Code: problem.ClaimExpired, Detail: "the claim expired before this write; claim the record again"}).
		With("claim_expires_at", problem.Timestamp(e.ExpiresAt))
}

// StaleFence: the write's fence is not the record's current fence (the
// claim was released, reclaimed or taken by another).
type StaleFence struct {
	Fence, Current int64
}

func (e *StaleFence) Error() string {
	return fmt.Sprintf("board: stale fence %d (current %d)", e.Fence, e.Current)
}

// Problem is 409 stale_fence with the record's current fence.
func (e *StaleFence) Problem() *problem.Problem {
	return (&problem.Problem{Code: problem.StaleFence, Detail: fmt.Sprintf(
		"fence %d is not the record's current fence %d: the claim was released, reclaimed or taken", e.Fence, e.Current)}).
		With("current_fence", e.Current)
}

// InUse: a definition change would remove states that records are in.
type InUse struct {
	States []string
}

func (e *InUse) Error() string { return fmt.Sprintf("board: records are in states %v", e.States) }

// Problem is 409 board_in_use naming the states.
func (e *InUse) Problem() *problem.Problem {
	return (&problem.Problem{Code: problem.BoardInUse, Detail: "records are in states the new definition removes"}).
		With("states", e.States)
}

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

// Problem is 429 quota_exceeded with the limit and a Retry-After.
func (e *QuotaExceeded) Problem() *problem.Problem {
	return (&problem.Problem{Code: problem.QuotaExceeded, Detail: fmt.Sprintf("over the board's %s limit (%d); retry later", e.What, e.Limit)}).
		With("limit", e.Limit).WithHeader("Retry-After", problem.RetryAfter(e.RetryAfter))
}
