package audit

import (
	"context"
	"database/sql"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// pruneBatch bounds one DELETE of Prune, so no statement holds locks long.
const pruneBatch = 1000

// pruneBatchOf deletes the events of ids (after, last] recorded before
// before and raises the feed's pruned_through mark to the highest position
// deleted, in one transaction: a reader that reads the mark after its rows
// knows whether any row after its position went.
func pruneBatchOf(ctx context.Context, db *gorm.DB, after, last, before int64) (int64, error) {
	// READ COMMITTED: at REPEATABLE READ the DELETE's range on the primary
	// key locks the gap after the newest event, where every new event is
	// inserted, so a pruner stopped before its commit held up every write.
	// The feed row is locked first: no stamp runs between the read of the
	// highest position and the DELETE, which sees what that read saw.
	return sqlstore.TransactIsolated(ctx, db, sql.LevelReadCommitted, func(tx *gorm.DB) (int64, error) {
		if _, err := readMarks(tx, true); err != nil {
			return 0, err
		}
		var r struct{ High *int64 }
		if err := tx.Raw(`SELECT MAX(seq) AS high FROM audit_events WHERE id > ? AND id <= ? AND at_ms < ?`, after, last, before).
			Scan(&r).Error; err != nil {
			return 0, err
		}
		if r.High != nil {
			if err := tx.Exec(`UPDATE audit_feed SET pruned_through = ? WHERE id = 1 AND pruned_through < ?`, *r.High, *r.High).Error; err != nil {
				return 0, err
			}
		}
		res := tx.Exec(`DELETE FROM audit_events WHERE id > ? AND id <= ? AND at_ms < ?`, after, last, before)
		return res.RowsAffected, res.Error
	})
}

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
		n, err := pruneBatchOf(ctx, db, after, last, before)
		if err != nil {
			return total, err
		}
		total += n
		if len(rows) < pruneBatch {
			return total, nil
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
		after = last
	}
}
