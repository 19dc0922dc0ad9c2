package leases

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/promptd/promptd/locks"
)

// ErrNotFound: a lease ID that no lease can have (not one Acquire made).
var ErrNotFound = errors.New("leases: no such lease")

// Conflict names a resource another holder has.
type Conflict struct {
	Resource  string
	Holder    string
	ExpiresAt time.Time
}

// HeldError: Acquire found resources held by another holder (after its
// wait, if any) and took none. Conflicts names the blocking ones; the
// cause is the *locks.HeldError, so errors.Is(err, locks.ErrHeld) holds.
type HeldError struct {
	Conflicts []Conflict
	cause     *locks.HeldError
}

func (e *HeldError) Error() string { return "leases: " + e.cause.Error() }

// Unwrap returns the *locks.HeldError.
func (e *HeldError) Unwrap() error { return e.cause }

// LostError: a renew or release found that the token no longer holds
// Resources (expired or taken over); the rest of the lease was renewed or
// released. errors.Is(err, locks.ErrLeaseLost) holds.
type LostError struct {
	Resources []string
}

func (e *LostError) Error() string {
	return "lease lost on " + strings.Join(e.Resources, ", ")
}

// Is makes errors.Is(err, locks.ErrLeaseLost) true.
func (e *LostError) Is(target error) bool { return target == locks.ErrLeaseLost }

// QuotaError: the owner already holds Limit live leases; nothing was
// taken. RetryAfter is when the first of them expires (at least a second).
type QuotaError struct {
	Limit      int
	RetryAfter time.Duration
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("leases: the owner holds %d live leases, the limit", e.Limit)
}
