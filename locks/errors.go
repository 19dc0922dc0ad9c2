package locks

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrHeld: the key is held by another owner. The error is a *HeldError.
	ErrHeld = errors.New("locks: held by another owner")
	// ErrLeaseLost: the lease expired or was taken over; the caller no longer holds it.
	ErrLeaseLost = errors.New("locks: lease lost")
	// ErrNotHeld: a holder query found the key free.
	ErrNotHeld = errors.New("locks: not held")
	// ErrUnavailable: the backend could not be reached in time. The grant
	// state is unknown only for the failed call; the lease was not obtained.
	ErrUnavailable = errors.New("locks: backend unavailable")
	// ErrClosed: the Locker was closed.
	ErrClosed = errors.New("locks: locker closed")
	// ErrStaleFence: a fenced write carried a fence lower than the highest
	// one the storage has seen. The error is a *StaleFenceError.
	ErrStaleFence = errors.New("locks: stale fence")
	// ErrTooManyWaiters: Options.MaxWaiters acquires of this process already
	// wait for held keys; the acquire was not sent to wait. The error is a
	// *TooManyWaitersError. Retry later.
	ErrTooManyWaiters = errors.New("locks: too many waiters")
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

// unavailable wraps a backend failure so that errors.Is(err, ErrUnavailable)
// holds while the cause stays visible.
func unavailable(op string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
}
