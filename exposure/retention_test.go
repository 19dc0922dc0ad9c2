package exposure_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/exposure"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/sqlstore"
)

func migrations() []sqlstore.Migration {
	return append(append(append(audit.Migrations(), promptstore.Migrations()...), release.Migrations()...), exposure.Migrations()...)
}

// services are the stores an exposure service checks against, with
// support v1..v4 and prod at 1.
func services(t *testing.T, db *gorm.DB) (*exposure.Service, *release.Service) {
	t.Helper()
	ctx := audit.WithActor(context.Background(), "test")
	locker := locks.NewMemory(locks.Options{Holder: "test"})
	store := promptstore.New(db, promptstore.Options{Instance: "test", Locker: locker})
	t.Cleanup(func() { store.Close() })
	for i := range 4 {
		if _, err := store.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "support", BaseVersion: i,
			Config: json.RawMessage(fmt.Sprintf(`{"system": "v%d"}`, i+1))}); err != nil {
			t.Fatal(err)
		}
	}
	zero := int64(0)
	if _, err := store.SwitchPointer(ctx, promptstore.SwitchInput{Agent: "support", Env: "prod", Version: 1, ExpectedRevision: &zero}); err != nil {
		t.Fatal(err)
	}
	releases := release.New(release.Options{Store: store, DB: db, Locker: locker, Instance: "test"})
	return exposure.New(exposure.Options{DB: db, Releases: releases, Envs: store}), releases
}

func count(t *testing.T, db *gorm.DB, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.Raw(q, args...).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// Exposures older than the retention go, in batches, the newer stay;
// outcomes go only with their release ended before the retention: an
// active release's outcomes (its guard reads them from its start) stay
// however old, and so do those of a release that ended recently.
func TestPrune_oldExposuresAndEndedReleasesOutcomes_goTheRestStay(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		ctx := audit.WithActor(context.Background(), "test")
		xs, releases := services(t, db)
		now := time.Now()
		const retention = 2160 * time.Hour
		old, recent := now.Add(-retention-time.Hour).UnixMilli(), now.Add(-retention+time.Hour).UnixMilli()
		for i := range 1203 { // more than one batch, each row its own key
			ms := old - int64(i)*60000
			if i >= 1200 {
				ms = recent
			}
			if err := db.Exec(`INSERT INTO exposures (agent, env, minute_ms, release_id, version, arm, count) VALUES (?, ?, ?, '', ?, '', 1)`,
				"support", "prod", ms, 1+i%1200).Error; err != nil {
				t.Fatal(err)
			}
		}
		// ended long ago (rolled back), ended now, running
		var ended []string
		for _, v := range []int{2, 3} {
			r, err := releases.Create(ctx, release.CreateInput{Agent: "support", Env: "prod", CandidateVersion: v, Percent: "10"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := releases.Transition(ctx, r.ID, release.ActRollback, release.TransitionInput{Reason: "t"}); err != nil {
				t.Fatal(err)
			}
			ended = append(ended, r.ID)
		}
		active, err := releases.Create(ctx, release.CreateInput{Agent: "support", Env: "prod", CandidateVersion: 4, Percent: "10"})
		if err != nil {
			t.Fatal(err)
		}
		db.Exec(`UPDATE releases SET updated_at_ms = ? WHERE id = ?`, old, ended[0])
		for id, n := range map[string]int{ended[0]: 1100, ended[1]: 2, active.ID: 3} {
			for i := range n {
				if err := db.Exec(`INSERT INTO release_outcomes (agent, env, release_id, arm, version, reason, period, period_bp, success,
					at_ms, token, created_at_ms) VALUES ('support', 'prod', ?, 'candidate', 2, 'bucket', 0, 1000, 1, ?, 't', ?)`,
					id, old+int64(i), old+int64(i)).Error; err != nil {
					t.Fatal(err)
				}
			}
		}
		cutoff := now.Add(-retention)
		if n, err := xs.PruneExposures(ctx, cutoff); err != nil || n != 1200 {
			t.Fatalf("PruneExposures = %d, %v; want 1200", n, err)
		}
		if n, err := xs.PruneOutcomes(ctx, cutoff); err != nil || n != 1100 {
			t.Fatalf("PruneOutcomes = %d, %v; want 1100", n, err)
		}
		if n := count(t, db, `SELECT COUNT(*) FROM exposures`); n != 3 {
			t.Fatalf("%d exposure rows left, want the 3 recent", n)
		}
		for id, want := range map[string]int64{ended[0]: 0, ended[1]: 2, active.ID: 3} {
			if n := count(t, db, `SELECT COUNT(*) FROM release_outcomes WHERE release_id = ?`, id); n != want {
				t.Errorf("release %s: %d outcomes left, want %d", id, n, want)
			}
		}
		// The control: a second run finds nothing more.
		if n, err := xs.PruneExposures(ctx, cutoff); err != nil || n != 0 {
			t.Fatalf("again: PruneExposures = %d, %v", n, err)
		}
		if n, err := xs.PruneOutcomes(ctx, cutoff); err != nil || n != 0 {
			t.Fatalf("again: PruneOutcomes = %d, %v", n, err)
		}
	})
}
