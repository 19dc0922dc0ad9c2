package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/session"
	"github.com/promptd/promptd/sqlstore"
)

// lostOnGrant is a Locker whose leases are already lost when granted: the
// job's lease taken over (or expired) before the run's first write.
type lostOnGrant struct{ locks.Locker }

func (l lostOnGrant) Acquire(ctx context.Context, key string, _ time.Duration, opts ...locks.Option) (*locks.Lease, error) {
	lease, err := l.Locker.Acquire(ctx, key, 5*time.Millisecond, append(opts, locks.WithoutKeepalive())...)
	if err != nil {
		return nil, err
	}
	<-lease.Done() // its local deadline passed
	return lease, nil
}

// The sweeper's work is bound to its job lease: a run whose lease is lost
// closes nothing (the replica that took the lease over sweeps instead).
func TestSweep_leaseLost_closesNothing(t *testing.T) {
	db := testenv.OpenDB(t, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "promptd.db")}, migrations())
	locker := locks.NewMemory(locks.Options{})
	t.Cleanup(func() { _ = locker.Close(context.Background()) })
	store := promptstore.New(db, promptstore.Options{Locker: locker, Instance: "t"})
	t.Cleanup(func() { _ = store.Close() })
	ctx := ctxT(t)
	if _, err := store.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "a", Config: json.RawMessage(`{"system":"v1"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.SwitchPointer(ctx, promptstore.SwitchInput{Agent: "a", Env: "prod", Version: 1, ExpectedRevision: new(int64)}); err != nil {
		t.Fatal(err)
	}
	var skew atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	rel := release.New(release.Options{Store: store, DB: db, Locker: locker})
	o := session.Options{Store: store, DB: db, Locker: locker, Resolver: rel, Now: now, IdleTTL: time.Minute}
	if _, _, err := session.New(o).Create(ctx, session.CreateInput{SessionID: "s1", Agent: "a", Env: "prod", UserID: "u1"}); err != nil {
		t.Fatal(err)
	}
	skew.Store(int64(time.Hour)) // s1 is idle past its TTL

	o.Locker = lostOnGrant{locker}
	closed, _, err := session.New(o).Sweep(ctx)
	if closed != 0 || err == nil {
		t.Fatalf("closed = %d, err = %v: the sweep went on after its lease was lost", closed, err)
	}
	// The lost lease's local deadline (Done) comes a safety margin before
	// the lock store lets the key go: wait until it does.
	key, _ := o.Keys.Job(session.SweepJob)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, err := locker.Holder(ctx, key); errors.Is(err, locks.ErrNotHeld) {
			break
		}
	}
	o.Locker = locker
	sess := session.New(o)
	if s, err := sess.Get(ctx, "s1", 0, 1); err != nil || s.State != session.Open {
		t.Fatalf("s1 after the run without its lease: %+v, %v", s, err)
	}
	if closed, _, err := sess.Sweep(ctx); closed != 1 || err != nil {
		t.Fatalf("a run under its lease: closed = %d, err = %v", closed, err)
	}
}
