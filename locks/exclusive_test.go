package locks_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/promptd/promptd/locks"
)

// runExclusiveSuite is RunExclusive's behaviour on a backend: one run at a
// time across processes, a skip that is not an error, and a run that stops
// with its lease or its caller.
func runExclusiveSuite(t *testing.T, mk func(t *testing.T, prefix string) (locks.Backend, locks.Backend)) {
	w := func(t *testing.T) *world { return newWorld(t, mk, locks.Options{}) }

	t.Run("RunExclusive_free_runsUnderTheLease_thenReleases", func(t *testing.T) {
		w := w(t)
		k := w.key(t, "job-a")
		ran, err := locks.RunExclusive(ctxT(t), w.a, k, 5*time.Second, func(ctx context.Context) error {
			if _, err := w.b.Acquire(ctxT(t), k, time.Second); !errors.Is(err, locks.ErrHeld) {
				return fmt.Errorf("another process acquired the key during the run: %v", err)
			}
			// A nested Acquire with the run's context re-enters the lease.
			l, err := w.a.Acquire(ctx, k, time.Second)
			if err != nil || l.Count() != 2 {
				return fmt.Errorf("nested acquire: %v (count %d)", err, l.Count())
			}
			return l.Release(ctx)
		})
		if !ran || err != nil {
			t.Fatalf("ran = %v, err = %v", ran, err)
		}
		l, err := w.b.Acquire(ctxT(t), k, time.Second)
		if err != nil {
			t.Fatalf("the key was not released after the run: %v", err)
		}
		_ = l.Release(context.Background())
	})

	t.Run("RunExclusive_heldElsewhere_skipsWithoutError", func(t *testing.T) {
		w := w(t)
		k := w.key(t, "job-a")
		l, err := w.b.Acquire(ctxT(t), k, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(context.Background())
		called := false
		ran, err := locks.RunExclusive(ctxT(t), w.a, k, 5*time.Second, func(context.Context) error { called = true; return nil })
		if ran || err != nil || called {
			t.Fatalf("ran = %v, err = %v, fn called = %v; want a silent skip", ran, err, called)
		}
	})

	t.Run("RunExclusive_fnError_isReturned_andTheKeyFreed", func(t *testing.T) {
		w := w(t)
		k := w.key(t, "job-a")
		boom := errors.New("boom")
		ran, err := locks.RunExclusive(ctxT(t), w.a, k, 5*time.Second, func(context.Context) error { return boom })
		if !ran || !errors.Is(err, boom) || errors.Is(err, locks.ErrLeaseLost) {
			t.Fatalf("ran = %v, err = %v", ran, err)
		}
		ran, err = locks.RunExclusive(ctxT(t), w.b, k, 5*time.Second, func(context.Context) error { return nil })
		if !ran || err != nil {
			t.Fatalf("the next run: ran = %v, err = %v", ran, err)
		}
	})

	t.Run("RunExclusive_leaseLost_endsTheRunsContext", func(t *testing.T) {
		w := w(t)
		k := w.key(t, "job-a")
		ttl := 300 * time.Millisecond
		inside := make(chan struct{})
		taken := make(chan *locks.Lease, 1)
		go func() {
			<-inside
			l, err := w.b.Acquire(ctxT(t), k, 5*time.Second, locks.WithPreempt())
			if err != nil {
				t.Error(err)
			}
			taken <- l
		}()
		var cause error
		ran, err := locks.RunExclusive(ctxT(t), w.a, k, ttl, func(ctx context.Context) error {
			close(inside)
			select {
			case <-ctx.Done():
				cause = context.Cause(ctx)
				return ctx.Err()
			case <-time.After(10 * ttl): // generous: the loss is seen at the first renewal (ttl/3)
				return errors.New("the run's context outlived its lease")
			}
		})
		defer func() { _ = (<-taken).Release(context.Background()) }()
		if !ran || !errors.Is(err, locks.ErrLeaseLost) || !errors.Is(cause, locks.ErrLeaseLost) {
			t.Fatalf("ran = %v, err = %v, cause = %v", ran, err, cause)
		}
	})

	t.Run("RunExclusive_callerCancelled_endsTheRun_andStillReleases", func(t *testing.T) {
		w := w(t)
		k := w.key(t, "job-a")
		ctx, cancel := context.WithCancel(ctxT(t))
		ran, err := locks.RunExclusive(ctx, w.a, k, 5*time.Second, func(ctx context.Context) error {
			cancel()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(5 * time.Second):
				return errors.New("the run's context outlived its caller's")
			}
		})
		if !ran || !errors.Is(err, context.Canceled) {
			t.Fatalf("ran = %v, err = %v", ran, err)
		}
		l, err := w.b.Acquire(ctxT(t), k, time.Second)
		if err != nil {
			t.Fatalf("the key was not released with a fresh context after the caller's ended: %v", err)
		}
		_ = l.Release(context.Background())
		if ran, err := locks.RunExclusive(ctx, w.a, k, time.Second, func(context.Context) error { return nil }); ran || !errors.Is(err, context.Canceled) {
			t.Fatalf("a run with a done context: ran = %v, err = %v", ran, err)
		}
	})
}

// downBackend is a lock store that cannot be reached.
type downBackend struct{ locks.Backend }

func (downBackend) Acquire(context.Context, string, locks.Request) (locks.Grant, error) {
	return locks.Grant{}, fmt.Errorf("%w: acquire: connection refused", locks.ErrUnavailable)
}

func TestRunExclusive_lockStoreUnavailable_skipsWithTheError_orRunsUnlockedWhenAsked(t *testing.T) {
	m := locks.New(downBackend{locks.NewMemoryBackend(nil)}, locks.Options{})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	k, _ := locks.Keys{}.Job("job-a")
	runs := 0
	fn := func(context.Context) error { runs++; return nil }
	if ran, err := locks.RunExclusive(ctxT(t), m, k, time.Second, fn); ran || !errors.Is(err, locks.ErrUnavailable) || runs != 0 {
		t.Fatalf("by default: ran = %v, err = %v, runs = %d; want skipped with ErrUnavailable", ran, err, runs)
	}
	if ran, err := locks.RunExclusive(ctxT(t), m, k, time.Second, fn, locks.RunUnlockedIfUnavailable()); !ran || err != nil || runs != 1 {
		t.Fatalf("RunUnlockedIfUnavailable: ran = %v, err = %v, runs = %d; want one unlocked run", ran, err, runs)
	}
}
