package locks

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// runReleaseTimeout bounds the release that ends a RunExclusive run. The
// release runs with a fresh context (the caller's may be cancelled by then);
// if it cannot be sent in time the key frees itself at the lease's TTL.
const runReleaseTimeout = 5 * time.Second

// MaxRunTTL bounds the lease of a RunExclusive run, whatever ttl the
// caller asks for: the lease is renewed at a third of its TTL while fn
// runs, so a long run keeps it, and a process killed in the middle of a
// run (kill -9, a lost machine) keeps the key from the others for at most
// MaxRunTTL. A successor that tries every second takes over within
// MaxRunTTL plus a second of the kill, whatever the job's period.
const MaxRunTTL = 3 * time.Second

// RunOption adjusts one RunExclusive.
type RunOption func(*runOpts)

type runOpts struct {
	unlockedIfUnavailable bool
}

// RunUnlockedIfUnavailable runs fn without the lease when the lock store is
// unavailable, instead of skipping the run. Use it only for work whose
// storage writes are conditional anyway (revision or fence in the SQL
// condition), so that two processes running it at once stay correct.
func RunUnlockedIfUnavailable() RunOption {
	return func(o *runOpts) { o.unlockedIfUnavailable = true }
}

// RunExclusive runs fn while this process holds key, so that one process
// at a time runs it: one run of a cluster-singleton job.
//
// The lease is taken without waiting. When another owner holds key the run
// is skipped: ran is false and err nil. Any other failure to take the lease
// (the lock store unavailable, the Locker closed, ctx done) is ran false
// with that error; with RunUnlockedIfUnavailable an unavailable store runs
// fn without the lease instead.
//
// The lease's TTL is ttl, at most MaxRunTTL. fn's context ends when ctx
// ends or when the lease is lost (its cause is then ErrLeaseLost), and
// re-enters the lease in nested Acquire calls. The lease is kept alive
// (renewed at a third of its TTL) while fn runs and released when fn returns (or
// panics), with a fresh context bounded by a few seconds, never ctx's
// cancellation. When ran is true err is fn's error, joined with
// ErrLeaseLost if the lease was lost during the run.
func RunExclusive(ctx context.Context, l Locker, key string, ttl time.Duration, fn func(context.Context) error, opts ...RunOption) (ran bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	var o runOpts
	for _, f := range opts {
		f(&o)
	}
	lease, err := l.Acquire(ctx, key, min(ttl, MaxRunTTL))
	switch {
	case errors.Is(err, ErrHeld):
		return false, nil
	case errors.Is(err, ErrUnavailable) && o.unlockedIfUnavailable:
		return true, fn(ctx)
	case err != nil:
		return false, err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), runReleaseTimeout)
		defer cancel()
		_ = lease.Release(rctx) // a lost lease is reported below; a failed release expires at its TTL
	}()
	runCtx, stop := lease.bind(ctx)
	defer stop()
	err = fn(runCtx)
	if errors.Is(lease.Err(), ErrLeaseLost) {
		err = errors.Join(err, fmt.Errorf("locks: %s: lease lost during the run: %w", key, ErrLeaseLost))
	}
	return true, err
}

// bind returns a context derived from parent that also ends, with the
// lease's cause, when the lease is released or lost, and that re-enters
// the lease in nested Acquire calls. stop frees what bind set up.
func (l *Lease) bind(parent context.Context) (ctx context.Context, stop func()) {
	lctx := l.Context()
	ctx, cancel := context.WithCancelCause(context.WithValue(parent, leaseCtxKey{}, &leaseChain{l: l, parent: l.parent}))
	if lctx.Err() != nil {
		// Already released or lost: end ctx now. AfterFunc would do it
		// in a goroutine of its own, after fn may have started.
		cancel(context.Cause(lctx))
	}
	unwatch := context.AfterFunc(lctx, func() { cancel(context.Cause(lctx)) })
	return ctx, func() {
		unwatch()
		cancel(context.Canceled)
	}
}
