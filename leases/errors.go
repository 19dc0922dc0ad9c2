package leases

import (
	"fmt"
	"strings"
	"time"

	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/problem"
)

// ErrNotFound: a lease ID that no lease can have (not one Acquire made).
var ErrNotFound = problem.New(problem.LeaseNotFound, "leases: no such lease",
	"no such lease: a lease_id is the one POST /v1/leases answered")

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

// Problem is 423 lease_held naming every conflict.
func (e *HeldError) Problem() *problem.Problem {
	if len(e.Conflicts) == 0 {
		return problem.HeldBy("", time.Time{})
	}
	p := problem.HeldBy(e.Conflicts[0].Holder, e.Conflicts[0].ExpiresAt)
	conflicts := make([]map[string]any, len(e.Conflicts))
	for i, c := range e.Conflicts {
		conflicts[i] = map[string]any{"resource": c.Resource, "holder": c.Holder, "expires_at": problem.Timestamp(c.ExpiresAt)}
	}
	return p.With("conflicts", conflicts)
}

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

// Problem is 409 lease_lost naming the resources lost.
func (e *LostError) Problem() *problem.Problem {
	return (&problem.Problem{Code: problem.LeaseLost, Detail: "the lease no longer holds some of its resources (expired or taken over)"}).
		With("resources", e.Resources)
}

// QuotaError: the owner already holds Limit live leases; nothing was
// taken. RetryAfter is when the first of them expires (at least a second).
type QuotaError struct {
	Limit      int
	RetryAfter time.Duration
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("leases: the owner holds %d live leases, the limit", e.Limit)
}

// Problem is 429 quota_exceeded with the limit and a Retry-After.
func (e *QuotaError) Problem() *problem.Problem {
	return (&problem.Problem{Code: problem.QuotaExceeded, Detail: fmt.Sprintf(
		"this token holds %d live generic leases, the limit; release one or retry when one expires", e.Limit)}).
		With("limit", e.Limit).WithHeader("Retry-After", problem.RetryAfter(e.RetryAfter))
}
