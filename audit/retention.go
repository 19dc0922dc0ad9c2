package audit

import (
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// pruneBatch bounds one DELETE of Prune, so no statement holds locks long.
const pruneBatch = 1000

// Prune deletes the events recorded before cutoff and returns how many.
// It walks the table by id (the primary key) in batches of pruneBatch rows,
// each deleted by its own statement, and stops at the first batch with
// nothing to delete: ids follow recording time closely (a batched event is
// written within moments), so what lies beyond is newer. An old event
// written behind newer ones is deleted by a later run. It stops early,
// with what it deleted so far, when ctx ends; the next run continues.
// Run it periodically on one instance (cmd takes a job lease for it).
func Prune(ctx context.Context, db *gorm.DB, cutoff time.Time) (int64, error) {
	db = db.WithContext(ctx)
	before := cutoff.UnixMilli()
	var total, after int64
	for {
		var rows []struct {
			ID   int64
			AtMs int64
		}
		if err := db.Raw(`SELECT id, at_ms FROM audit_events WHERE id > ? ORDER BY id LIMIT ?`, after, pruneBatch).
			Scan(&rows).Error; err != nil {
			return total, sqlstore.Translate(err)
		}
		old := 0
		for _, r := range rows {
			if r.AtMs < before {
				old++
			}
		}
		if old == 0 {
			return total, nil
		}
		last := rows[len(rows)-1].ID
		res := db.Exec(`DELETE FROM audit_events WHERE id > ? AND id <= ? AND at_ms < ?`, after, last, before)
		if res.Error != nil {
			return total, sqlstore.Translate(res.Error)
		}
		total += res.RowsAffected
		if len(rows) < pruneBatch {
			return total, nil
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
		after = last
	}
}
