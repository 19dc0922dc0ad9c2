package exposure_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/exposure"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
)

// Record refuses a report with one item naming what was not served, with
// the item's field, and writes none of it; the same report without that
// item is counted.
func TestRecord_anItemNotServed_refusesTheReportWhole(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		ctx := audit.WithActor(context.Background(), "test")
		xs, releases := services(t, db) // support v1..v4, prod at 1
		rel, err := releases.Create(ctx, release.CreateInput{Agent: "support", Env: "prod", CandidateVersion: 2, Percent: "10"})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		good := []exposure.Item{
			{Agent: "support", Env: "prod", Version: 1, Count: 1, At: now},
			{Agent: "support", Env: "prod", Version: 2, ReleaseID: rel.ID, Arm: release.ArmCandidate, Count: 1, At: now},
		}
		for _, c := range []struct {
			bad   exposure.Item
			field string
		}{
			{exposure.Item{Agent: "ghost", Env: "prod", Version: 1, Count: 1, At: now}, "items[2].agent"},
			{exposure.Item{Agent: "support", Env: "dev", Version: 1, Count: 1, At: now}, "items[2].env"},
			{exposure.Item{Agent: "support", Env: "prod", Version: 4, Count: 1, At: now}, "items[2].version"},
			{exposure.Item{Agent: "support", Env: "prod", Version: 1, ReleaseID: "rel_none", Arm: release.ArmBaseline, Count: 1, At: now}, "items[2].release_id"},
			{exposure.Item{Agent: "support", Env: "prod", Version: 2, ReleaseID: rel.ID, Arm: release.ArmBaseline, Count: 1, At: now}, "items[2].version"},
			{exposure.Item{Agent: "support", Env: "prod", Version: 1, Count: 1_000_000_000, At: now}, "items[2].count"},
		} {
			_, err := xs.Record(ctx, append(append([]exposure.Item{}, good...), c.bad))
			var inv *promptstore.InvalidError
			if !errors.As(err, &inv) || inv.Field != c.field {
				t.Errorf("%+v: err = %v, want invalid %s", c.bad, err, c.field)
			}
		}
		if n := count(t, db, `SELECT COUNT(*) FROM exposures`); n != 0 {
			t.Fatalf("%d rows written by refused reports", n)
		}
		if res, err := xs.Record(ctx, good); err != nil || res.Accepted != 2 {
			t.Fatalf("the good items: %+v, %v", res, err)
		}
	})
}
