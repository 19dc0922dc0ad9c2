package events_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/events"
	"github.com/promptd/promptd/internal/harness/testenv"
)

func appendEvents(t *testing.T, db *gorm.DB, at time.Time, n int) {
	t.Helper()
	l := audit.Log{Instance: "w", Now: func() time.Time { return at }}
	for range n {
		if err := db.Transaction(func(tx *gorm.DB) error {
			return l.Append(context.Background(), tx, audit.Event{Action: "test.event", Resource: "r"}, map[string]any{})
		}); err != nil {
			t.Fatal(err)
		}
	}
	for {
		n, _, err := audit.Stamp(context.Background(), db, 100)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

// A reader resuming into events that a prune has just deleted is told so
// (CursorExpiredError, resume after the highest pruned position), whatever
// the feed's cached oldest position says: it used to be checked against
// that cache, apart from the read, and got the events left, the pruned
// ones skipped in silence. A position beyond the head is refused.
func TestFeed_resumingIntoJustPrunedEvents_isCursorExpired_notSkipped(t *testing.T) {
	testenv.ForEachDialect(t, audit.Migrations(), func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		feed := events.NewFeed(events.FeedOptions{DB: db, Retention: 1000 * time.Hour})
		appendEvents(t, db, time.Now().Add(-48*time.Hour), 5)
		appendEvents(t, db, time.Now(), 3)
		if oldest, err := feed.Oldest(ctx); err != nil || oldest != 0 {
			t.Fatalf("Oldest = %d, %v", oldest, err) // cached from here on
		}
		if n, err := audit.Prune(ctx, db, time.Now().Add(-time.Hour)); n != 5 || err != nil {
			t.Fatalf("Prune = %d, %v", n, err)
		}
		evs, _, err := feed.Read(ctx, 2, 10)
		var expired *events.CursorExpiredError
		if !errors.As(err, &expired) || expired.Oldest != 5 {
			t.Fatalf("Read(2) after 1..5 were pruned = %d events, %v; want CursorExpiredError resuming from 5", len(evs), err)
		}
		if evs, _, err := feed.Read(ctx, 5, 10); err != nil || len(evs) != 3 || evs[0].Seq != 6 {
			t.Fatalf("Read(5) = %v, %v; want 6..8", evs, err)
		}
		var ahead *audit.AheadError
		if err := feed.CheckPosition(ctx, 9); !errors.As(err, &ahead) || ahead.Head != 8 {
			t.Fatalf("CheckPosition(9) with head 8 = %v", err)
		}
		if err := feed.CheckPosition(ctx, 8); err != nil {
			t.Fatalf("CheckPosition(head) = %v", err)
		}
	})
}

// A position older than the feed's cached oldest is told to resume at or
// past every position pruned by now, not at the cached oldest, which may
// lie in events pruned since it was read: a reader sent there met a second
// 410 on its next read (the e2e retention run caught it). A reader from
// the oldest (OldestNow, since 0) starts past them too.
func TestFeed_expiredCursor_isSentPastEverythingPrunedSinceTheOldestWasCached(t *testing.T) {
	testenv.ForEachDialect(t, audit.Migrations(), func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		feed := events.NewFeed(events.FeedOptions{DB: db, Retention: 24 * time.Hour})
		appendEvents(t, db, time.Now().Add(-48*time.Hour), 3) // 1..3: past the retention
		appendEvents(t, db, time.Now().Add(-12*time.Hour), 3) // 4..6
		appendEvents(t, db, time.Now(), 2)                    // 7..8
		if oldest, err := feed.Oldest(ctx); err != nil || oldest != 3 {
			t.Fatalf("Oldest = %d, %v; want 3", oldest, err) // cached from here on
		}
		if n, err := audit.Prune(ctx, db, time.Now().Add(-time.Hour)); n != 6 || err != nil {
			t.Fatalf("Prune = %d, %v", n, err)
		}
		_, _, err := feed.Read(ctx, 1, 10)
		var expired *events.CursorExpiredError
		if !errors.As(err, &expired) || expired.Oldest != 6 {
			t.Fatalf("Read(1) after 1..6 were pruned = %v; want CursorExpiredError resuming from 6, not the cached 3", err)
		}
		if err := feed.Kept(ctx, 2); !errors.As(err, &expired) || expired.Oldest != 6 {
			t.Fatalf("Kept(2) = %v; want CursorExpiredError resuming from 6", err)
		}
		if oldest, err := feed.OldestNow(ctx); err != nil || oldest != 6 {
			t.Fatalf("OldestNow = %d, %v; want 6", oldest, err)
		}
		if evs, _, err := feed.Read(ctx, 6, 10); err != nil || len(evs) != 2 || evs[0].Seq != 7 {
			t.Fatalf("Read(6) = %v, %v; want 7..8", evs, err)
		}
	})
}

// A store restored from an older backup has a feed head below positions
// this instance has already read. A reader resuming there (read from the
// store: the ring no longer holds it) gets *audit.AheadError, never the
// reused positions, and the instance raises the alarm:
// promptd_feed_store_behind_total counts it. Control: the same read before
// the store went back is served, and counts nothing.
func TestFeed_storeHeadBelowWhatThisInstanceRead_isAnAlarm_notAnswered(t *testing.T) {
	testenv.ForEachDialect(t, audit.Migrations(), func(t *testing.T, db *gorm.DB) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		reg := prometheus.NewRegistry()
		metrics := events.NewFeedMetrics(reg)
		feed := events.NewFeed(events.FeedOptions{DB: db, Retention: 1000 * time.Hour, Ring: 1, Metrics: metrics})
		done := make(chan struct{})
		go func() { defer close(done); feed.Run(ctx) }()
		defer func() { cancel(); <-done }()
		appendEvents(t, db, time.Now(), 8)
		for deadline := time.Now().Add(10 * time.Second); feed.Head() < 8; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the feed read up to %d, want 8", feed.Head())
			}
		}
		behind := func() float64 { return counterValue(t, reg, "promptd_feed_store_behind_total") }
		if evs, _, err := feed.Read(ctx, 5, 10); err != nil || len(evs) != 3 || behind() != 0 {
			t.Fatalf("control: Read(5) = %d events, %v, alarm %v; want 6..8 and no alarm", len(evs), err, behind())
		}
		// The store goes back to position 4.
		if err := db.Exec(`DELETE FROM audit_events WHERE seq > 4`).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Exec(`UPDATE audit_feed SET head = 4 WHERE id = 1`).Error; err != nil {
			t.Fatal(err)
		}
		evs, _, err := feed.Read(ctx, 5, 10)
		var ahead *audit.AheadError
		if !errors.As(err, &ahead) || len(evs) != 0 || ahead.Head != 4 {
			t.Fatalf("Read(5) with the store's head at 4 = %d events, %v; want *audit.AheadError (head 4)", len(evs), err)
		}
		if behind() < 1 {
			t.Fatalf("promptd_feed_store_behind_total = %v after the store went back, want at least 1", behind())
		}
	})
}

// counterValue is the value of reg's counter name (0 when absent).
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			var sum float64
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
			return sum
		}
	}
	return 0
}
