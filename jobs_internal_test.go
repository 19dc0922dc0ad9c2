package promptd

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"

	"github.com/promptd/promptd/api/idempotency"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
)

func TestSingletonJob_runsOnOneReplicaAtATime(t *testing.T) {
	backend := locks.NewMemoryBackend(nil) // one lock store, two replicas
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	keys := locks.Keys{Prefix: "jobs-test"}
	replica := func(name string) *scheduler {
		m := locks.New(backend, locks.Options{Holder: name})
		t.Cleanup(func() { _ = m.Close(context.Background()) })
		s := newScheduler(m, keys, quiet)
		t.Cleanup(func() { s.stop(context.Background()) })
		return s
	}
	a, b := replica("a"), replica("b")
	key, _ := keys.Job("idempotency-sweep")

	var runs atomic.Int32
	inside, release := make(chan struct{}), make(chan struct{})
	job := func(ctx context.Context) error {
		runs.Add(1)
		close(inside)
		<-release
		return nil
	}
	done := make(chan bool)
	go func() { done <- a.runSingleton("idempotency-sweep", key, job) }()
	<-inside
	if b.runSingleton("idempotency-sweep", key, func(context.Context) error { runs.Add(1); return nil }) {
		t.Fatal("replica b ran the job while a held its lease")
	}
	close(release)
	if !<-done {
		t.Fatal("replica a did not run the job")
	}
	if !b.runSingleton("idempotency-sweep", key, func(context.Context) error { runs.Add(1); return nil }) {
		t.Fatal("replica b could not run the job after a finished")
	}
	if runs.Load() != 2 {
		t.Fatalf("runs = %d", runs.Load())
	}
}

// stop cancels the runs in progress, singleton runs included: their
// context is the lease's and the scheduler's at once.
func TestSingletonJob_stop_cancelsTheRunInProgress(t *testing.T) {
	keys := locks.Keys{Prefix: "jobs-stop-test"}
	m := locks.NewMemory(locks.Options{})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	s := newScheduler(m, keys, slog.New(slog.NewTextHandler(io.Discard, nil)))
	key, _ := keys.Job("audit-retention")
	inside, ended := make(chan struct{}), make(chan error, 1)
	go s.runSingleton("audit-retention", key, func(ctx context.Context) error {
		close(inside)
		select {
		case <-ctx.Done():
			ended <- nil
		case <-time.After(10 * time.Second):
			ended <- errors.New("the run went on for 10s after stop")
		}
		return nil
	})
	<-inside
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.stop(ctx)
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
}

func TestEveryInstanceJob_runsPeriodically_andStops(t *testing.T) {
	s := newScheduler(locks.NewMemory(locks.Options{}), locks.Keys{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	var runs atomic.Int32
	s.everyInstance("tick", time.Second, func(context.Context) error { runs.Add(1); return nil })
	s.start()
	deadline := time.Now().Add(5 * time.Second)
	for runs.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	s.stop(context.Background())
	n := runs.Load()
	if n == 0 {
		t.Fatal("the job never ran")
	}
	time.Sleep(1500 * time.Millisecond)
	if runs.Load() != n {
		t.Fatal("the job ran after stop")
	}
}

func TestRetentionJobs_deleteOldAuditAndExpiredIdempotency_keepRecent(t *testing.T) {
	ms := append(audit.Migrations(), idempotency.Migrations()...)
	testenv.ForEachDialect(t, ms, func(t *testing.T, db *gorm.DB) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		now := time.Now()
		const retention = 2160 * time.Hour
		for at, n := range map[time.Time]int{now.Add(-retention - time.Hour): 1200, now.Add(-retention + time.Hour): 2, now: 3} {
			l := audit.Log{Instance: "t", Now: func() time.Time { return at }}
			for i := 0; i < n; i++ {
				if err := l.Append(ctx, db, audit.Event{Action: "lease.acquired", Resource: "leases/r"}, map[string]any{}); err != nil {
					t.Fatal(err)
				}
			}
		}
		clock := now.Add(-2 * time.Hour)
		idem := idempotency.New(db, idempotency.Options{TTL: time.Hour, Now: func() time.Time { return clock }})
		save := func(key string) {
			k := idempotency.NewKey("ops", "POST", "/v1/import", nil, key, "h")
			if err := idem.Save(ctx, k, idempotency.Response{Status: 400, ContentType: "application/problem+json", Body: []byte("{}")}); err != nil {
				t.Fatal(err)
			}
		}
		save("expired-1")
		save("expired-2")
		clock = now
		save("live-1")

		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		keys := locks.Keys{Prefix: "retention-test"}
		s := newScheduler(locks.NewMemory(locks.Options{}), keys, quiet)
		t.Cleanup(func() { s.stop(context.Background()) })
		d := jobDeps{db: db, idem: idem, auditRetention: retention}
		for name, job := range map[string]func(context.Context) error{
			"audit-retention":   pruneAudit(d, quiet),
			"idempotency-sweep": sweepIdempotency(d, quiet),
		} {
			key, _ := keys.Job(name)
			if !s.runSingleton(name, key, job) {
				t.Fatalf("%s did not run", name)
			}
		}
		var events, records int64
		db.Raw(`SELECT COUNT(*) FROM audit_events`).Scan(&events)
		db.Raw(`SELECT COUNT(*) FROM idempotency_keys`).Scan(&records)
		if events != 5 || records != 1 {
			t.Fatalf("after the retention jobs: %d audit events (want the 5 recent), %d idempotency records (want the 1 live)", events, records)
		}
	})
}

// The exposure-retention job deletes exposure minutes past
// PROMPTD_EXPOSURE_RETENTION and keeps the newer ones; an outcome of a
// release that has not ended stays however old.
func TestRetentionJobs_deleteOldExposures_keepRecentAndLiveOutcomes(t *testing.T) {
	testenv.ForEachDialect(t, Migrations(), func(t *testing.T, db *gorm.DB) {
		now := time.Now()
		const retention = 2160 * time.Hour
		for i, ms := range []int64{now.Add(-retention - time.Hour).UnixMilli(), now.Add(-retention - 2*time.Hour).UnixMilli(), now.UnixMilli()} {
			if err := db.Exec(`INSERT INTO exposures (agent, env, minute_ms, release_id, version, arm, count) VALUES ('a', 'prod', ?, '', ?, '', 1)`,
				ms, i+1).Error; err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Exec(`INSERT INTO release_outcomes (agent, env, release_id, arm, version, reason, period, period_bp, success,
			at_ms, token, created_at_ms) VALUES ('a', 'prod', 'rel_live', 'candidate', 2, 'bucket', 0, 1000, 1, 1, 't', 1)`).Error; err != nil {
			t.Fatal(err)
		}
		rt := New(db, Options{Instance: "retention"})
		t.Cleanup(func() { _ = rt.Close() })
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		keys := locks.Keys{Prefix: "exposure-retention-test"}
		s := newScheduler(locks.NewMemory(locks.Options{}), keys, quiet)
		t.Cleanup(func() { s.stop(context.Background()) })
		d := jobDeps{exposures: rt.Exposures, exposureRetention: retention, outcomeRetention: retention}
		key, _ := keys.Job("exposure-retention")
		if !s.runSingleton("exposure-retention", key, pruneExposures(d, quiet)) {
			t.Fatal("exposure-retention did not run")
		}
		var exposures, outcomes int64
		db.Raw(`SELECT COUNT(*) FROM exposures`).Scan(&exposures)
		db.Raw(`SELECT COUNT(*) FROM release_outcomes`).Scan(&outcomes)
		if exposures != 1 || outcomes != 1 {
			t.Fatalf("after the job: %d exposure rows (want the 1 recent), %d outcomes (want the 1 of a release not ended)", exposures, outcomes)
		}
	})
}

// Run schedules every job of the server (an embedding program gets them
// all); GuardEvery < 0 leaves the guards out.
func TestRun_schedulesEveryJob(t *testing.T) {
	db := testenv.OpenDB(t, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "promptd.db")}, Migrations())
	for _, c := range []struct {
		guard time.Duration
		want  int
	}{{0, 12}, {-1, 11}} {
		rt := New(db, Options{Instance: "jobs", Jobs: JobOptions{GuardEvery: c.guard}})
		s := rt.scheduler()
		if n := len(s.cron.Entries()); n != c.want {
			t.Errorf("GuardEvery %v: %d jobs scheduled, want %d (reconcile, idempotency sweep, audit retention, webhook retention, outcome dedupe sweep, exposure retention, change-request expiry, release steps, release guards, session sweep, board reclaim, intent expiry)", c.guard, n, c.want)
		}
		s.stop(context.Background())
		_ = rt.Close()
	}
}

// A second Run while one runs is refused; after the first ends, Run runs
// again.
func TestRun_oneAtATime(t *testing.T) {
	db := testenv.OpenDB(t, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "promptd.db")}, Migrations())
	rt := New(db, Options{Instance: "jobs"})
	t.Cleanup(func() { _ = rt.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	for !rt.running.Load() {
		time.Sleep(time.Millisecond)
	}
	if err := rt.Run(context.Background()); !errors.Is(err, ErrRunning) {
		t.Fatalf("a second Run = %v, want ErrRunning", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if err := rt.Run(ctx2); err != nil {
		t.Fatalf("Run after the first ended = %v", err)
	}
}
