package locks

import (
	"errors"
	"fmt"
	"time"

	"github.com/promptd/promptd/problem"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrHeld: the key is held by another owner. The error is a *HeldError.
	ErrHeld = errors.New("locks: held by another owner")
	// ErrLeaseLost: the lease expired or was taken over; the caller no longer holds it.
	ErrLeaseLost = problem.New(problem.LeaseLost, "locks: lease lost",
		"the token is not the lease's current token (expired, released or taken over)")
	// ErrNotHeld: a holder query found the key free.
	ErrNotHeld = errors.New("locks: not held")
	// ErrUnavailable: the backend could not be reached in time. The grant
	// state is unknown only for the failed call; the lease was not obtained.
	ErrUnavailable = problem.Unavailable("locks: backend unavailable", "redis", "the lock store is unavailable; retry later")
	// ErrClosed: the Locker was closed.
	ErrClosed = errors.New("locks: locker closed")
	// ErrStaleFence: a fenced write carried a fence lower than the highest
	// one the storage has seen. The error is a *StaleFenceError.
	ErrStaleFence = errors.New("locks: stale fence")
	// ErrTooManyWaiters: Options.MaxWaiters acquires of this process already
	// wait for held keys; the acquire was not sent to wait. The error is a
	// *TooManyWaitersError. Retry later.
	ErrTooManyWaiters = problem.New(problem.QuotaExceeded, "locks: too many waiters",
		"too many lease requests are waiting on this instance; retry later").WithHeader("Retry-After", "1")
)

// TooManyWaitersError is returned by an acquire that would wait while
// Limit acquires of this process already do.
type TooManyWaitersError struct {
	Limit int
}

func (e *TooManyWaitersError) Error() string {
	return fmt.Sprintf("locks: %d acquires already wait for held keys in this process", e.Limit)
}

// Is makes errors.Is(err, ErrTooManyWaiters) true.
func (e *TooManyWaitersError) Is(target error) bool { return target == ErrTooManyWaiters }

// Problem is ErrTooManyWaiters' problem.
func (e *TooManyWaitersError) Problem() *problem.Problem { return ErrTooManyWaiters.Problem() }

// Conflict describes who holds a key that could not be obtained.
type Conflict struct {
	Key       string
	Holder    string
	Fence     int64
	ExpiresAt time.Time
}

// HeldError is returned when a key (or, for AcquireAll, one of the keys) is
// held by another owner. Conflicts lists the blocking keys.
type HeldError struct {
	Conflicts []Conflict
}

func (e *HeldError) Error() string {
	if len(e.Conflicts) == 0 {
		return ErrHeld.Error()
	}
	c := e.Conflicts[0]
	return fmt.Sprintf("locks: %s held by %q until %s", c.Key, c.Holder, c.ExpiresAt.UTC().Format(time.RFC3339Nano))
}

// Is makes errors.Is(err, ErrHeld) true.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// Problem is 423 lease_held naming the first conflict's holder.
func (e *HeldError) Problem() *problem.Problem {
	if len(e.Conflicts) == 0 {
		return problem.HeldBy("", time.Time{})
	}
	return problem.HeldBy(e.Conflicts[0].Holder, e.Conflicts[0].ExpiresAt)
}

// StaleFenceError is returned by fenced writes whose fence is below the
// storage's current one.
type StaleFenceError struct {
	Fence   int64 // the fence the writer presented
	Current int64 // the highest fence the storage knows, 0 if unknown
}

func (e *StaleFenceError) Error() string {
	return fmt.Sprintf("locks: stale fence %d (current %d)", e.Fence, e.Current)
}

// Is makes errors.Is(err, ErrStaleFence) true.
func (e *StaleFenceError) Is(target error) bool { return target == ErrStaleFence }

// Problem is 409 stale_fence with the current fence.
func (e *StaleFenceError) Problem() *problem.Problem {
	return (&problem.Problem{Code: problem.StaleFence, Detail: fmt.Sprintf(
		"fence %d is not the session's current fence %d: the lease was taken over", e.Fence, e.Current)}).With("current_fence", e.Current)
}

// unavailable wraps a backend failure so that errors.Is(err, ErrUnavailable)
// holds while the cause stays visible.
func unavailable(op string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
}
