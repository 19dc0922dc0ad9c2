package audit

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/promptd/promptd/problem"
	"github.com/promptd/promptd/sqlstore"
)

// The feed's marks, one row of audit_feed kept in SQL beside the events:
//
//   - head is the highest position ever stamped. Stamp raises it in the
//     transaction that stamps, under the row's lock, and nothing lowers it:
//     positions are never handed out twice, even once retention has pruned
//     every event (a deployment idle past its retention).
//   - pruned_through is the highest position Prune has deleted, raised in
//     the transaction of each DELETE. Every event after it is still kept,
//     so a reader resuming after a position below it may have lost events:
//     its read is a *PrunedError, decided from the mark read after the
//     rows (a prune that deleted any of them committed its mark first).
//
// A store whose head is below a position a reader or the dispatcher
// already holds has gone back (restored from an older backup): the read
// is a *AheadError, which they report as an alarm rather than wait on.

// PrunedError: events after the position asked for were pruned. Through
// is the highest position pruned; a reader resumes after it.
type PrunedError struct{ After, Through int64 }

func (e *PrunedError) Error() string {
	return fmt.Sprintf("audit: the feed's events after %d were pruned through %d", e.After, e.Through)
}

// AheadError: the position asked for is beyond the feed's head.
type AheadError struct{ After, Head int64 }

// Problem is 503 store_unavailable: the position was checked at the
// start, then the store went back.
func (e *AheadError) Problem() *problem.Problem {
	return (&problem.Problem{Code: problem.StoreUnavailable, Detail: fmt.Sprintf(
		"the feed's store is behind position %d (its head is %d); retry later", e.After, e.Head)}).
		With("store", "sql").WithHeader("Retry-After", "1")
}

func (e *AheadError) Error() string {
	return fmt.Sprintf("audit: position %d is beyond the feed's head %d", e.After, e.Head)
}

// Marks are the feed's head and the highest position pruned.
type Marks struct{ Head, PrunedThrough int64 }

// ReadMarks reads the feed's marks.
func ReadMarks(ctx context.Context, db *gorm.DB) (Marks, error) {
	return readMarks(db.WithContext(ctx), false)
}

func readMarks(tx *gorm.DB, lock bool) (Marks, error) {
	q := `SELECT head, pruned_through FROM audit_feed WHERE id = 1`
	if lock {
		q += sqlstore.ForUpdate(tx)
	}
	var rs []Marks
	if err := tx.Raw(q).Scan(&rs).Error; err != nil {
		return Marks{}, sqlstore.Translate(err)
	}
	if len(rs) == 0 {
		return Marks{}, errors.New("audit: the audit_feed row is missing (migration audit/6 has not run)")
	}
	return rs[0], nil
}

// checkAfter tells whether a read after position after, whose rows were
// read before m, saw every event after it.
func checkAfter(after int64, m Marks) error {
	switch {
	case after > m.Head:
		return &AheadError{After: after, Head: m.Head}
	case after < m.PrunedThrough:
		return &PrunedError{After: after, Through: m.PrunedThrough}
	}
	return nil
}

// addFeedMarks is migration audit/6: the audit_feed row, seeded from the
// events kept (head: the highest position; pruned_through: the position
// before the lowest kept, or the head when none is).
func addFeedMarks(tx *gorm.DB) error {
	if err := sqlstore.CreateTable(tx, sqlstore.Table{
		Name:    "audit_feed",
		Columns: []string{"id INT NOT NULL", "head BIGINT NOT NULL", "pruned_through BIGINT NOT NULL"},
		Primary: []string{"id"},
	}); err != nil {
		return err
	}
	var n int64
	if err := tx.Raw(`SELECT COUNT(*) FROM audit_feed`).Scan(&n).Error; err != nil || n > 0 {
		return err
	}
	var r struct{ Low, High *int64 }
	if err := tx.Raw(`SELECT MIN(seq) AS low, MAX(seq) AS high FROM audit_events`).Scan(&r).Error; err != nil {
		return err
	}
	var head, pruned int64
	if r.High != nil {
		head, pruned = *r.High, *r.Low-1
	}
	return tx.Exec(`INSERT INTO audit_feed (id, head, pruned_through) VALUES (1, ?, ?)`, head, pruned).Error
}
