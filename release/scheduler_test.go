package release_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/sqlstore"
)

// cancelOnAcquire is a Locker that ends its caller's context right after
// granting a lease: the scheduler stopping (or the run's timeout passing)
// once the job's lease is taken.
type cancelOnAcquire struct {
	locks.Locker
	cancel func()
}

func (c cancelOnAcquire) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...locks.Option) (*locks.Lease, error) {
	l, err := c.Locker.Acquire(ctx, key, ttl, opts...)
	c.cancel()
	return l, err
}

// A run of the steps job whose caller's context ends after the job's lease
// was taken applies nothing: the run's context is the caller's and the
// lease's at once, not the lease's alone.
func TestRunDueSteps_callerCancelledUnderTheLease_appliesNothing(t *testing.T) {
	db := testenv.OpenDB(t, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "promptd.db")}, migrations())
	locker := locks.NewMemory(locks.Options{})
	t.Cleanup(func() { _ = locker.Close(context.Background()) })
	e := newEnv(t, db, promptd.Options{Locker: locker})
	e.seed(t)
	var skew atomic.Int64 // the steps' clock runs ahead by this much
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	ctx := ctxT(t)
	r, err := e.rel.Create(ctx, release.CreateInput{Agent: "a", Env: "prod", CandidateVersion: 2, Percent: "5",
		Steps: []release.Step{{Percent: "25", After: "1m"}}})
	if err != nil {
		t.Fatal(err)
	}
	skew.Store(int64(time.Hour)) // the step is due

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	steps := release.New(release.Options{Store: e.store, DB: db, Locker: cancelOnAcquire{Locker: locker, cancel: cancel}, Now: now})
	applied, err := steps.RunDueSteps(runCtx)
	got, gerr := e.rel.Get(ctx, r.ID)
	if gerr != nil {
		t.Fatal(gerr)
	}
	if applied != 0 || got.StepsApplied != 0 {
		t.Fatalf("applied = %d (err %v), steps_applied = %d: the run went on after its caller's context ended", applied, err, got.StepsApplied)
	}
	if err == nil {
		t.Fatal("RunDueSteps returned no error for a run its caller cancelled")
	}

	// With a live context the same step is applied, once.
	steps = release.New(release.Options{Store: e.store, DB: db, Locker: locker, Now: now})
	if applied, err := steps.RunDueSteps(ctx); applied != 1 || err != nil {
		t.Fatalf("a live run: applied = %d, err = %v", applied, err)
	}
}
