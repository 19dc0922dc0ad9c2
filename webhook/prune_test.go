package webhook_test

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/webhook"
)

// TestPrune_deletesOnlyFinishedDeliveriesPastTheCutoff: delivered and
// failed deliveries older than the cutoff go; pending ones (whatever their
// age) and newer ones stay.
func TestPrune_deletesOnlyFinishedDeliveriesPastTheCutoff(t *testing.T) {
	testenv.ForEachDialect(t, promptd.Migrations(), func(t *testing.T, db *gorm.DB) {
		rt := runtime(t, db, nil)
		wh, err := rt.Webhooks.Create(context.Background(), webhook.CreateInput{URL: "http://127.0.0.1:1/hook", Actions: []string{"version.created"}})
		if err != nil {
			t.Fatal(err)
		}
		future := time.Now().Add(time.Hour).UnixMilli() // pending ones are not due during the test
		old, recent := time.Now().Add(-48*time.Hour).UnixMilli(), time.Now().UnixMilli()
		seq := 0
		insert := func(state string, at int64, n int) {
			for range n {
				seq++
				if err := db.Exec(`INSERT INTO webhook_deliveries (webhook_id, seq, action, body, state, attempts, retry_base,
					next_attempt_at_ms, lease_until_ms, last_status, last_error, created_at_ms, updated_at_ms)
					VALUES (?, ?, 'version.created', '{}', ?, 1, 0, ?, 0, 200, '', ?, ?)`, wh.ID, seq, state, future, at, at).Error; err != nil {
					t.Fatal(err)
				}
			}
		}
		insert("delivered", old, 1500) // more than one batch
		insert("failed", old, 3)
		insert("pending", old, 4)
		insert("delivered", recent, 5)
		var n int64
		n, err = rt.Webhooks.Prune(context.Background(), time.Now().Add(-24*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		var left []struct {
			State string
			N     int
		}
		db.Raw(`SELECT state, COUNT(*) AS n FROM webhook_deliveries GROUP BY state ORDER BY state`).Scan(&left)
		if n != 1503 || len(left) != 2 || left[0].State != "delivered" || left[0].N != 5 || left[1].State != "pending" || left[1].N != 4 {
			t.Fatalf("pruned %d, left %+v; want 1503 pruned, 5 recent delivered and 4 pending kept", n, left)
		}
	})
}
