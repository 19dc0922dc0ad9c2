package audit_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/internal/harness/testenv"
)

// Events stamped while OldestAfter runs are not taken for pruned ones: it
// read the lowest seq first and the head after, so with nothing stamped
// yet and a stamp in between it answered head+1, and a reader from the
// oldest (since=0) skipped every event of that stamp. The hook stamps
// just before OldestAfter's first read of the feed's marks.
func TestOldestAfter_eventsStampedDuringTheSearch_areNotTakenForPruned(t *testing.T) {
	testenv.ForEachDialect(t, audit.Migrations(), func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		appendAt(t, db, time.Now(), "new", 3) // committed, not stamped yet
		var armed, fired atomic.Bool
		armed.Store(true)
		err := db.Callback().Row().Before("gorm:row").Register("test:stamp_before_marks", func(tx *gorm.DB) {
			if strings.Contains(tx.Statement.SQL.String(), "FROM audit_feed") && armed.CompareAndSwap(true, false) {
				if _, _, err := audit.Stamp(ctx, db, 1000); err != nil {
					t.Error(err)
				}
				fired.Store(true)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		oldest, err := audit.OldestAfter(ctx, db, time.Now().Add(-time.Hour))
		if err != nil || !fired.Load() {
			t.Fatalf("OldestAfter = %d, %v (hook fired: %v)", oldest, err, fired.Load())
		}
		if oldest != 1 {
			t.Fatalf("OldestAfter = %d with events 1..3 kept and fresh; want 1 (a reader from it resumes after %d and skips them)", oldest, oldest-1)
		}
	})
}
