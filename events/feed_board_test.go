package events_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/sqlstore"
)

// ReadBoard returns one board's events, in feed order, each once, when a
// reader resumes from the position it was given: from the store (the
// ring holds 64 events, 300 are written) and from the ring.
func TestFeed_readBoard_returnsOneBoardsEventsOnceInOrder_fromStoreAndRing(t *testing.T) {
	testenv.ForEachDialect(t, audit.Migrations(), func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		in := startInstances(t, db, 1)[0]
		var want []string
		for i := range 300 {
			board := []string{"a", "b", "c"}[i%3]
			if board == "a" {
				want = append(want, fmt.Sprint("r", i))
			}
			if _, err := sqlstore.Transact(ctx, db, func(tx *gorm.DB) (struct{}, error) {
				return struct{}{}, (audit.Log{Instance: "w"}).Append(ctx, tx,
					audit.Event{Action: "board.record_created", Board: board, Resource: fmt.Sprint("r", i)}, map[string]any{})
			}); err != nil {
				t.Fatal(err)
			}
		}
		for deadline := time.Now().Add(10 * time.Second); in.feed.Head() < 300; {
			if time.Now().After(deadline) {
				t.Fatalf("feed head %d, want 300", in.feed.Head())
			}
			time.Sleep(10 * time.Millisecond)
		}
		var got []string
		after, reads := int64(0), 0
		for ; reads < 100; reads++ {
			evs, scanned, err := in.feed.ReadBoard(ctx, "a", after, 7)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range evs {
				if e.Board != "a" || e.Seq <= after {
					t.Fatalf("read after %d gave %+v", after, e)
				}
				after = e.Seq
				got = append(got, e.Resource)
			}
			if scanned < after {
				t.Fatalf("scanned %d before the last event returned %d", scanned, after)
			}
			if after = scanned; len(evs) == 0 {
				break
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("board a's events over %d reads:\n got %v\nwant %v", reads, got, want)
		}
		if after != 300 {
			t.Fatalf("the last position scanned = %d, want the head 300", after)
		}
	})
}
