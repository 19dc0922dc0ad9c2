package events_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/events"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/sqlstore"
)

// instance is one promptd process's share of the feed: its own bus (no
// Redis: it learns of new events from the store), sequencer and feed.
type instance struct {
	seq  *events.Sequencer
	feed *events.Feed
}

func startInstances(t *testing.T, db *gorm.DB, n int) []instance {
	t.Helper()
	backend := locks.NewMemoryBackend(nil) // one lock store shared by the "processes"
	keys := locks.Keys{Prefix: "feedtest"}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	out := make([]instance, n)
	for i := range out {
		bus := events.NewBus(events.Options{})
		locker := locks.New(backend, locks.Options{Holder: fmt.Sprintf("proc-%d", i)})
		out[i] = instance{
			seq:  events.NewSequencer(events.SequencerOptions{DB: db, Bus: bus, Locker: locker, Keys: keys, Every: 20 * time.Millisecond}),
			feed: events.NewFeed(events.FeedOptions{DB: db, Bus: bus, Poll: 20 * time.Millisecond, Ring: 64}),
		}
		wg.Go(func() { out[i].seq.Run(ctx) })
		wg.Go(func() { out[i].feed.Run(ctx) })
		t.Cleanup(func() { _ = locker.Close(context.Background()); _ = bus.Close() })
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, in := range out {
		for !in.feed.Started() {
			time.Sleep(5 * time.Millisecond)
		}
	}
	return out
}

// write appends one event in its own transaction, holding the transaction
// open for hold after the insert, so commits interleave out of id order.
func write(ctx context.Context, db *gorm.DB, action string, hold time.Duration) error {
	_, err := sqlstore.Transact(ctx, db, func(tx *gorm.DB) (struct{}, error) {
		if err := (audit.Log{Instance: "w"}).Append(ctx, tx, audit.Event{Action: action, Resource: "r"}, map[string]any{}); err != nil {
			return struct{}{}, err
		}
		time.Sleep(hold)
		return struct{}{}, nil
	})
	return err
}

func committedInSeqOrder(t *testing.T, db *gorm.DB) (ids []int64, unstamped int64) {
	t.Helper()
	if err := db.Raw(`SELECT id FROM audit_events WHERE seq IS NOT NULL ORDER BY seq`).Scan(&ids).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Raw(`SELECT COUNT(*) FROM audit_events WHERE seq IS NULL`).Scan(&unstamped).Error; err != nil {
		t.Fatal(err)
	}
	return ids, unstamped
}

// TestFeed_resumingReaders_getEveryCommittedEventOnce_inOrder: writers
// commit concurrently (out of id order), two instances stamp (one holds
// the job lease; a third stamper runs without it), and readers read small
// pages, each page from a random instance as a client that reconnects
// would. Every reader receives exactly the stamped events in seq order:
// no gap, no duplicate, nothing left unstamped.
func TestFeed_resumingReaders_getEveryCommittedEventOnce_inOrder(t *testing.T) {
	testenv.ForEachDialect(t, audit.Migrations(), func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		ins := startInstances(t, db, 2)
		writers, each := 8, 40
		if sqlstore.Dialect(db) == sqlstore.SQLite {
			writers, each = 4, 30
		}
		total := int64(writers * each)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					if err := write(ctx, db, "test.written", time.Duration(rand.IntN(3000))*time.Microsecond); err != nil {
						t.Errorf("writer %d/%d: %v", w, i, err)
						return
					}
				}
			})
		}
		// An unleased stamper racing the sequencers: races cost a retry, never a position.
		stop := make(chan struct{})
		rogue := events.NewSequencer(events.SequencerOptions{DB: db})
		var rogueDone sync.WaitGroup
		rogueDone.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := rogue.StampOnce(ctx); err != nil {
					t.Errorf("rogue stamp: %v", err)
				}
				time.Sleep(time.Millisecond)
			}
		})
		readers := make([][]audit.Stamped, 3)
		var rwg sync.WaitGroup
		for r := range readers {
			rwg.Go(func() {
				var after int64
				deadline := time.Now().Add(60 * time.Second)
				for int64(len(readers[r])) < total && time.Now().Before(deadline) {
					f := ins[rand.IntN(len(ins))].feed // "reconnect" to any instance
					evs, next, err := f.Read(ctx, after, 1+rand.IntN(40))
					if err != nil {
						t.Errorf("reader %d: %v", r, err)
						return
					}
					readers[r] = append(readers[r], evs...)
					after = next
					if len(evs) == 0 {
						wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
						f.Wait(wctx, after)
						cancel()
					}
				}
			})
		}
		wg.Wait()
		rwg.Wait()
		close(stop)
		rogueDone.Wait()
		ids, unstamped := committedInSeqOrder(t, db)
		if unstamped != 0 || int64(len(ids)) != total {
			t.Fatalf("stamped %d of %d events, %d unstamped", len(ids), total, unstamped)
		}
		for r, got := range readers {
			gotIDs := make([]int64, len(got))
			for i, e := range got {
				gotIDs[i] = e.ID
				if e.Seq != int64(i)+1 {
					t.Fatalf("reader %d: event %d has seq %d, want %d (a gap or duplicate)", r, i, e.Seq, i+1)
				}
			}
			if !slices.Equal(gotIDs, ids) {
				t.Fatalf("reader %d received %d events, not the %d stamped ones in seq order", r, len(gotIDs), len(ids))
			}
		}
		t.Logf("%d events committed by %d writers; 3 resuming readers each received all %d in seq order", total, writers, total)
	})
}

// TestFeed_slowTransaction_isMissedByAnIDCursor_notByTheFeed is the
// control that shows why the feed does not use ids: an event inserted
// first (smaller id) and committed after a later one. A reader that
// resumes after the largest id it saw (the naive cursor) never sees it;
// the feed gives it to the same reader. MariaDB only: SQLite has a single
// writer, so its commits cannot interleave.
func TestFeed_slowTransaction_isMissedByAnIDCursor_notByTheFeed(t *testing.T) {
	db := testenv.OpenDB(t, sqlstore.Config{MySQLDSN: testenv.MySQLDSN(t)}, audit.Migrations())
	ctx := context.Background()
	ins := startInstances(t, db, 1)
	var naiveMax atomic.Int64
	var naiveSeen sync.Map
	stop := make(chan struct{})
	var nwg sync.WaitGroup
	nwg.Go(func() { // the naive reader: WHERE id > cursor
		for {
			var ids []int64
			if err := db.Raw(`SELECT id FROM audit_events WHERE id > ? ORDER BY id`, naiveMax.Load()).Scan(&ids).Error; err != nil {
				t.Errorf("naive: %v", err)
				return
			}
			for _, id := range ids {
				naiveSeen.Store(id, true)
				naiveMax.Store(id)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	})
	slowID := make(chan int64, 1)
	var swg sync.WaitGroup
	swg.Go(func() { // inserted first, committed after the naive reader moved past it
		_, err := sqlstore.Transact(ctx, db, func(tx *gorm.DB) (struct{}, error) {
			if err := (audit.Log{Instance: "slow"}).Append(ctx, tx, audit.Event{Action: "test.slow", Resource: "r"}, map[string]any{}); err != nil {
				return struct{}{}, err
			}
			var id int64
			if err := tx.Raw(`SELECT LAST_INSERT_ID()`).Scan(&id).Error; err != nil {
				return struct{}{}, err
			}
			slowID <- id
			deadline := time.Now().Add(10 * time.Second)
			for naiveMax.Load() <= id && time.Now().Before(deadline) {
				time.Sleep(2 * time.Millisecond)
			}
			return struct{}{}, nil
		})
		if err != nil {
			t.Errorf("slow writer: %v", err)
		}
	})
	id := <-slowID
	for range 5 {
		if err := write(ctx, db, "test.fast", 0); err != nil {
			t.Fatal(err)
		}
	}
	swg.Wait()
	// Give the naive reader and the feed time to see everything committed.
	var got []audit.Stamped
	var after int64
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < 6 && time.Now().Before(deadline) {
		evs, next, err := ins[0].feed.Read(ctx, after, 100)
		if err != nil {
			t.Fatal(err)
		}
		got, after = append(got, evs...), next
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	close(stop)
	nwg.Wait()

	if _, seen := naiveSeen.Load(id); seen {
		t.Fatalf("control failed: the id cursor saw event %d; the test could not show the hazard", id)
	}
	var feedHasSlow bool
	for _, e := range got {
		feedHasSlow = feedHasSlow || e.ID == id
	}
	if len(got) != 6 || !feedHasSlow {
		t.Fatalf("feed gave %d events (slow event %d among them: %v), want all 6", len(got), id, feedHasSlow)
	}
	t.Logf("id cursor missed event %d (committed after id %d); the feed delivered all 6", id, naiveMax.Load())
}
