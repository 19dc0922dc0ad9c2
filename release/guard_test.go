package release_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/release/guard"
)

// fakeOutcomes is an outcome source in memory: rows per release, each
// with the time it was reported (rows before a guard's start are left out,
// as the SQL source does with at).
type fakeOutcomes struct {
	mu   sync.Mutex
	rows map[string][]timedRow
}

type timedRow struct {
	at  time.Time
	row guard.Row
}

func (f *fakeOutcomes) add(id string, rows ...guard.Row) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rows == nil {
		f.rows = map[string][]timedRow{}
	}
	for _, r := range rows {
		f.rows[id] = append(f.rows[id], timedRow{time.Now(), r})
	}
}

func (f *fakeOutcomes) GuardRows(_ context.Context, id string, since time.Time) ([]guard.Row, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []guard.Row
	for _, r := range f.rows[id] {
		if !r.at.Before(since) {
			out = append(out, r.row)
		}
	}
	return out, nil
}

func rollbackGuard() *guard.Config {
	return &guard.Config{Metric: guard.FailureRate, MaxDegradation: 2, MinSamples: 200, Confidence: 0.95, Action: guard.Rollback, GateSteps: true}
}

func guardedEnv(t *testing.T, db *gorm.DB, src *fakeOutcomes, now func() time.Time) *env {
	e := newEnv(t, db, promptd.Options{Releases: release.Options{Outcomes: src, Now: now}})
	e.seed(t)
	return e
}

func TestRunGuards_whenTheCandidateFailsMore_rollsBackWithTheFiguresAudited(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		src := &fakeOutcomes{}
		e := guardedEnv(t, db, src, nil)
		ctx := ctxT(t)
		r, err := e.rel.Create(ctx, release.CreateInput{Agent: "a", Env: "prod", CandidateVersion: 2, Percent: "20", Guard: rollbackGuard()})
		if err != nil {
			t.Fatal(err)
		}
		src.add(r.ID, guard.Row{Arm: guard.Baseline, Token: "rt", N: 4000, Failures: 200},
			guard.Row{Arm: guard.Candidate, Token: "rt", N: 1000, Failures: 150})
		n, err := e.rel.RunGuards(ctx)
		if err != nil || n != 1 {
			t.Fatalf("RunGuards = %d, %v; want 1 trip", n, err)
		}
		got, err := e.rel.Get(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != release.RolledBack || got.Guard == nil || got.Guard.State != guard.Tripped || got.Guard.DecidedAt == nil || got.Guard.Reason == "" {
			t.Fatalf("after the trip: state %s, guard %+v", got.State, got.Guard)
		}
		last := got.History[len(got.History)-1]
		if last.Actor != release.GuardActor || last.Action != "rollback" {
			t.Fatalf("last transition %+v, want a rollback by %q", last, release.GuardActor)
		}
		var details []string
		if err := db.Raw(`SELECT details FROM audit_events WHERE action = 'release.guard_tripped'`).Scan(&details).Error; err != nil || len(details) != 1 {
			t.Fatalf("guard_tripped events: %v (%v)", details, err)
		}
		var d struct {
			Baseline, Candidate guard.ArmStats
			Difference          guard.Difference
			Action              string
		}
		if err := json.Unmarshal([]byte(details[0]), &d); err != nil {
			t.Fatal(err)
		}
		if d.Baseline.N != 4000 || d.Baseline.Rate != 5 || d.Candidate.N != 1000 || d.Candidate.Rate != 15 || d.Difference.Lower <= 2 || d.Action != "rollback" {
			t.Fatalf("audited figures %+v", d)
		}
		env, _ := e.store.GetEnv(ctx, "a", "prod")
		if env.Version != 1 || len(env.Revoked) != 1 || env.Revoked[0] != 2 {
			t.Fatalf("env after the guard's rollback: %+v", env)
		}
	})
}

func TestRunGuards_whenArmsAreAlike_keepsWatching(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		src := &fakeOutcomes{}
		e := guardedEnv(t, db, src, nil)
		ctx := ctxT(t)
		r, err := e.rel.Create(ctx, release.CreateInput{Agent: "a", Env: "prod", CandidateVersion: 2, Percent: "20", Guard: rollbackGuard()})
		if err != nil {
			t.Fatal(err)
		}
		src.add(r.ID, guard.Row{Arm: guard.Baseline, N: 4000, Failures: 200}, guard.Row{Arm: guard.Candidate, N: 1000, Failures: 55})
		if n, err := e.rel.RunGuards(ctx); n != 0 || err != nil {
			t.Fatalf("RunGuards = %d, %v; want no trip", n, err)
		}
		got, _ := e.rel.Get(ctx, r.ID)
		if err := e.rel.Describe(ctx, got); err != nil {
			t.Fatal(err)
		}
		if got.State != release.Running || got.Guard.State != guard.Watching || got.Stats == nil || got.Stats.Candidate.N != 1000 {
			t.Fatalf("state %s guard %+v stats %+v", got.State, got.Guard, got.Stats)
		}
	})
}

func TestResume_afterAPauseTrip_restartsTheGuardCollecting(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		src := &fakeOutcomes{}
		e := guardedEnv(t, db, src, nil)
		ctx := ctxT(t)
		g := rollbackGuard()
		g.Action = guard.Pause
		r, err := e.rel.Create(ctx, release.CreateInput{Agent: "a", Env: "prod", CandidateVersion: 2, Percent: "20", Guard: g})
		if err != nil {
			t.Fatal(err)
		}
		src.add(r.ID, guard.Row{Arm: guard.Baseline, N: 4000, Failures: 200}, guard.Row{Arm: guard.Candidate, N: 1000, Failures: 150})
		if n, err := e.rel.RunGuards(ctx); n != 1 || err != nil {
			t.Fatalf("RunGuards = %d, %v", n, err)
		}
		got, _ := e.rel.Get(ctx, r.ID)
		if got.State != release.Paused || got.Guard.State != guard.Tripped {
			t.Fatalf("after the trip: %s %+v", got.State, got.Guard)
		}
		time.Sleep(5 * time.Millisecond) // the restart is strictly after the old outcomes
		got, err = e.rel.Transition(ctx, r.ID, release.ActResume, release.TransitionInput{})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.rel.Describe(ctx, got); err != nil {
			t.Fatal(err)
		}
		if got.State != release.Running || got.Guard.State != guard.Collecting || got.Guard.DecidedAt != nil || got.Stats.Candidate.N != 0 {
			t.Fatalf("after resume: %s guard %+v stats %+v", got.State, got.Guard, got.Stats)
		}
		if n, err := e.rel.RunGuards(ctx); n != 0 || err != nil {
			t.Fatalf("RunGuards after resume = %d, %v: the old outcomes must not count", n, err)
		}
	})
}

// must-show 3: a scheduled step waits while an arm lacks min_samples and
// is applied once both have them.
func TestRunDueSteps_withGateSteps_holdsTheStepUntilBothArmsHaveMinSamples(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		src := &fakeOutcomes{}
		var mu sync.Mutex
		skew := time.Duration(0)
		now := func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(skew) }
		e := guardedEnv(t, db, src, now)
		ctx := ctxT(t)
		r, err := e.rel.Create(ctx, release.CreateInput{Agent: "a", Env: "prod", CandidateVersion: 2, Percent: "10",
			Steps: []release.Step{{Percent: "50", After: "1m"}}, Guard: rollbackGuard()})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		skew = time.Hour // the step is due
		mu.Unlock()
		src.add(r.ID, guard.Row{Arm: guard.Baseline, N: 1800, Failures: 90}, guard.Row{Arm: guard.Candidate, N: 199, Failures: 10})
		if n, err := e.rel.RunDueSteps(ctx); n != 0 || err != nil {
			t.Fatalf("RunDueSteps with 199 candidate samples = %d, %v; want the step held", n, err)
		}
		if got, _ := e.rel.Get(ctx, r.ID); got.StepsApplied != 0 || got.Percent != "10" {
			t.Fatalf("held step applied: %+v", got)
		}
		src.add(r.ID, guard.Row{Arm: guard.Candidate, N: 1})
		if n, err := e.rel.RunDueSteps(ctx); n != 1 || err != nil {
			t.Fatalf("RunDueSteps with 200 samples each = %d, %v; want the step applied", n, err)
		}
		if got, _ := e.rel.Get(ctx, r.ID); got.StepsApplied != 1 || got.Percent != "50" {
			t.Fatalf("step not applied: %+v", got)
		}
	})
}

func TestCreate_withAGuardOutOfRange_isRejectedNamingTheField(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		e := guardedEnv(t, db, &fakeOutcomes{}, nil)
		ctx := ctxT(t)
		g := rollbackGuard()
		g.Confidence = 1.5
		_, err := e.rel.Create(ctx, release.CreateInput{Agent: "a", Env: "prod", CandidateVersion: 2, Percent: "20", Guard: g})
		var inv *release.InvalidError
		if !errors.As(err, &inv) || inv.Code != release.CodeInvalidGuard || inv.Field != "guard.confidence" {
			t.Fatalf("err = %v, want invalid_guard on guard.confidence", err)
		}
		if n := count(t, db, `SELECT COUNT(*) FROM releases`); n != 0 {
			t.Fatalf("%d releases written", n)
		}
	})
}

func TestPatch_guardAlone_keepsTheStepsAndBumpsTheRevision(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		e := guardedEnv(t, db, &fakeOutcomes{}, nil)
		ctx := ctxT(t)
		r, err := e.rel.Create(ctx, release.CreateInput{Agent: "a", Env: "prod", CandidateVersion: 2, Percent: "10",
			Steps: []release.Step{{Percent: "50", After: "1h"}}})
		if err != nil {
			t.Fatal(err)
		}
		rev := r.Revision
		got, err := e.rel.Transition(ctx, r.ID, release.ActGuard, release.TransitionInput{ExpectedRevision: &rev, Guard: &release.GuardChange{Config: rollbackGuard()}})
		if err != nil {
			t.Fatal(err)
		}
		if got.Revision != rev+1 || got.NextStepAt == nil || got.Guard == nil || got.Guard.MaxDegradation != 2 {
			t.Fatalf("after PATCH guard: %+v guard %+v", got, got.Guard)
		}
		again, _ := e.rel.Get(ctx, r.ID)
		if again.Guard == nil || *again.Guard != *got.Guard {
			t.Fatalf("stored guard %+v, want %+v", again.Guard, got.Guard)
		}
		if _, err := e.rel.Transition(ctx, r.ID, release.ActGuard, release.TransitionInput{ExpectedRevision: &rev, Guard: &release.GuardChange{}}); err == nil {
			t.Fatal("a stale revision was accepted")
		}
	})
}
