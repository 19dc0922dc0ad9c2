package audit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/internal/harness/testenv"
)

func stampAll(t *testing.T, db *gorm.DB) int64 {
	t.Helper()
	for {
		n, head, err := audit.Stamp(context.Background(), db, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return head
		}
	}
}

// Once retention has pruned the newest events (a deployment idle past its
// retention), new events still get positions after every one handed out
// before: Stamp used to take MAX(seq)+1 over the rows left, and gave the
// pruned positions out again.
func TestStamp_afterRetentionPrunedTheNewestEvents_neverReusesAPosition(t *testing.T) {
	testenv.ForEachDialect(t, audit.Migrations(), func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		old := time.Now().Add(-48 * time.Hour)
		appendAt(t, db, old, "old", 5)
		if head := stampAll(t, db); head != 5 {
			t.Fatalf("head = %d, want 5", head)
		}
		if n, err := audit.Prune(ctx, db, time.Now().Add(-time.Hour)); n != 5 || err != nil {
			t.Fatalf("Prune = %d, %v", n, err)
		}
		if head, err := audit.Head(ctx, db); head != 5 || err != nil {
			t.Fatalf("head after everything was pruned = %d, %v; want 5", head, err)
		}
		appendAt(t, db, time.Now(), "new", 2)
		if head := stampAll(t, db); head != 7 {
			t.Fatalf("head after two new events = %d, want 7", head)
		}
		evs, err := audit.ReadAfter(ctx, db, 5, 10)
		if err != nil || len(evs) != 2 || evs[0].Seq != 6 || evs[1].Seq != 7 {
			t.Fatalf("ReadAfter(5) = %v, %v; want positions 6 and 7", evs, err)
		}
	})
}

// A reader resuming after a position some of whose later events a prune
// deleted gets *PrunedError, decided with the read (it used to get the
// events left and skip the pruned ones); one resuming beyond the head gets
// *AheadError. A reader after the pruned ones reads on.
func TestReadAfter_intoPrunedEvents_isPrunedError_beyondTheHead_isAheadError(t *testing.T) {
	testenv.ForEachDialect(t, audit.Migrations(), func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		appendAt(t, db, time.Now().Add(-48*time.Hour), "old", 3)
		appendAt(t, db, time.Now(), "new", 3)
		stampAll(t, db)
		if n, err := audit.Prune(ctx, db, time.Now().Add(-time.Hour)); n != 3 || err != nil {
			t.Fatalf("Prune = %d, %v", n, err)
		}
		var pruned *audit.PrunedError
		if evs, err := audit.ReadAfter(ctx, db, 1, 10); !errors.As(err, &pruned) || pruned.Through != 3 {
			t.Fatalf("ReadAfter(1) after positions 1..3 were pruned = %d events, %v; want *PrunedError through 3", len(evs), err)
		}
		if _, err := audit.ReadBoardAfter(ctx, db, "b", 2, 10); !errors.As(err, &pruned) {
			t.Fatalf("ReadBoardAfter(2) = %v; want *PrunedError", err)
		}
		if evs, err := audit.ReadAfter(ctx, db, 3, 10); err != nil || len(evs) != 3 {
			t.Fatalf("ReadAfter(3) = %d events, %v; want the 3 kept", len(evs), err)
		}
		if evs, err := audit.ReadAfter(ctx, db, 0, 10); err != nil || len(evs) != 3 {
			t.Fatalf("ReadAfter(0) (from the oldest kept) = %d events, %v", len(evs), err)
		}
		var ahead *audit.AheadError
		if _, err := audit.ReadAfter(ctx, db, 7, 10); !errors.As(err, &ahead) || ahead.Head != 6 {
			t.Fatalf("ReadAfter(7) with head 6 = %v; want *AheadError", err)
		}
		if evs, err := audit.ReadAfter(ctx, db, 6, 10); err != nil || len(evs) != 0 {
			t.Fatalf("ReadAfter(head) = %v, %v", evs, err)
		}
	})
}
