package audit_test

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/internal/harness/testenv"
)

// appendAt appends n events at the given time.
func appendAt(t *testing.T, db *gorm.DB, at time.Time, action string, n int) {
	t.Helper()
	l := audit.Log{Instance: "t", Now: func() time.Time { return at }}
	err := db.Transaction(func(tx *gorm.DB) error {
		for i := 0; i < n; i++ {
			if err := l.Append(context.Background(), tx, audit.Event{Action: action, Resource: "leases/r"}, map[string]any{}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func countActions(t *testing.T, db *gorm.DB) map[string]int {
	t.Helper()
	var rows []struct {
		Action string
		N      int
	}
	if err := db.Raw(`SELECT action, COUNT(*) AS n FROM audit_events GROUP BY action`).Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, r := range rows {
		out[r.Action] = r.N
	}
	return out
}

func TestPrune_deletesEventsOlderThanTheCutoff_inBatches_keepsRecent(t *testing.T) {
	testenv.ForEachDialect(t, audit.Migrations(), func(t *testing.T, db *gorm.DB) {
		now := time.Now()
		retention := 90 * 24 * time.Hour
		appendAt(t, db, now.Add(-retention-24*time.Hour), "old", 2500) // more than one batch
		appendAt(t, db, now.Add(-retention+time.Hour), "recent", 3)
		appendAt(t, db, now, "new", 3)
		appendAt(t, db, now.Add(-retention-time.Minute), "late", 2) // written after newer ones

		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		n, err := audit.Prune(ctx, db, now.Add(-retention))
		if err != nil {
			t.Fatal(err)
		}
		got := countActions(t, db)
		if n != 2502 || got["old"] != 0 || got["late"] != 0 || got["recent"] != 3 || got["new"] != 3 {
			t.Fatalf("Prune deleted %d; left %v (want recent:3 new:3)", n, got)
		}
		if n, err := audit.Prune(ctx, db, now.Add(-retention)); n != 0 || err != nil {
			t.Fatalf("second Prune = %d, %v", n, err)
		}
	})
}
