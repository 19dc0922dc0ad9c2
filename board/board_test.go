package board_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/board"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/sqlstore"
)

func migrations() []sqlstore.Migration { return append(audit.Migrations(), board.Migrations()...) }

func forEachDialect(t *testing.T, f func(t *testing.T, s *board.Service, db *gorm.DB)) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		f(t, board.New(board.Options{DB: db, Instance: "test"}), db)
	})
}

func mysqlService(t *testing.T) (*board.Service, *gorm.DB) {
	db := testenv.OpenDB(t, sqlstore.Config{MySQLDSN: testenv.MySQLDSN(t)}, migrations())
	return board.New(board.Options{DB: db, Instance: "test"}), db
}

func ptr[T any](v T) *T { return &v }

func mustCreate(t *testing.T, s *board.Service, b, id string, prio int64) *board.Record {
	t.Helper()
	r, created, err := s.Create(context.Background(), b, board.RecordInput{ID: id, Payload: []byte(`{"n":1}`), Priority: prio})
	if err != nil || !created {
		t.Fatalf("create %s: %v %v", id, created, err)
	}
	return r
}

func TestRecord_claimRunDone_withFence_andTheWriteRule(t *testing.T) {
	forEachDialect(t, func(t *testing.T, s *board.Service, _ *gorm.DB) {
		ctx := context.Background()
		if _, err := s.Get(ctx, "tasks", "x"); !errors.Is(err, board.ErrBoardNotFound) {
			t.Fatalf("get on an undefined board: %v", err)
		}
		low := mustCreate(t, s, "tasks", "low", 1)
		mustCreate(t, s, "tasks", "high", 9)
		if low.State != "pending" || low.Revision != 1 || low.Fence != 0 {
			t.Fatalf("created = %+v", low)
		}
		c, err := s.ClaimNext(ctx, "tasks", board.ClaimInput{Holder: "w1"})
		if err != nil || c == nil || c.ID != "high" || c.State != "claimed" || c.Owner != "w1" || c.Fence != 1 || c.Attempts != 1 {
			t.Fatalf("claim = %+v, %v", c, err)
		}
		// Unfenced write to a claimed record: claimed; another fence: stale.
		var cl *board.Claimed
		if _, err := s.Patch(ctx, "tasks", "high", board.Update{ExpectedRevision: c.Revision, Payload: []byte(`1`)}); !errors.As(err, &cl) || cl.Owner != "w1" {
			t.Fatalf("unfenced = %v", err)
		}
		var sf *board.StaleFence
		if _, err := s.Patch(ctx, "tasks", "high", board.Update{ExpectedRevision: c.Revision, Fence: ptr(int64(7))}); !errors.As(err, &sf) || sf.Current != 1 {
			t.Fatalf("stale = %v", err)
		}
		var it *board.InvalidTransition
		if _, err := s.Patch(ctx, "tasks", "high", board.Update{ExpectedRevision: c.Revision, Fence: &c.Fence, State: ptr("done")}); !errors.As(err, &it) {
			t.Fatalf("claimed -> done = %v", err)
		}
		r, err := s.Patch(ctx, "tasks", "high", board.Update{ExpectedRevision: c.Revision, Fence: &c.Fence, State: ptr("running")})
		if err != nil || r.State != "running" || r.Owner != "w1" {
			t.Fatalf("running = %+v %v", r, err)
		}
		hb, err := s.Heartbeat(ctx, "tasks", "high", c.Fence, 0)
		if err != nil || hb.Revision != r.Revision || !hb.ClaimExpiresAt.After(time.Now().Add(20*time.Second)) {
			t.Fatalf("heartbeat = %+v %v", hb, err)
		}
		d, err := s.Patch(ctx, "tasks", "high", board.Update{ExpectedRevision: r.Revision, Fence: &c.Fence, State: ptr("done"), Payload: []byte(`{"ok":true}`)})
		if err != nil || d.State != "done" || d.Owner != "" || d.ClaimExpiresAt != nil || string(d.Payload) != `{"ok":true}` {
			t.Fatalf("done = %+v %v", d, err)
		}
		if _, err := s.Patch(ctx, "tasks", "high", board.Update{ExpectedRevision: d.Revision, Payload: []byte(`2`)}); !errors.As(err, &it) {
			t.Fatalf("write to terminal = %v", err)
		}
		// Release: back to pending, fence raised, the old fence stale.
		c2, _ := s.ClaimNext(ctx, "tasks", board.ClaimInput{Holder: "w2"})
		rel, err := s.Release(ctx, "tasks", c2.ID, c2.Fence)
		if err != nil || rel.State != "pending" || rel.Owner != "" || rel.Fence != c2.Fence+1 {
			t.Fatalf("release = %+v %v", rel, err)
		}
		if _, err := s.Heartbeat(ctx, "tasks", c2.ID, c2.Fence, 0); !errors.As(err, &sf) {
			t.Fatalf("heartbeat after release = %v", err)
		}
		// Nothing eligible: nil after the wait.
		s.ClaimNext(ctx, "tasks", board.ClaimInput{Holder: "w3"})
		if got, err := s.ClaimNext(ctx, "tasks", board.ClaimInput{Holder: "w3", Wait: 50 * time.Millisecond}); got != nil || err != nil {
			t.Fatalf("empty claim = %+v %v", got, err)
		}
		list, next, err := s.List(ctx, "tasks", board.ListFilter{Limit: 1})
		if err != nil || len(list) != 1 || list[0].ID != "high" || next == "" {
			t.Fatalf("list = %v %q %v", list, next, err)
		}
		list, next, _ = s.List(ctx, "tasks", board.ListFilter{Limit: 1, Cursor: next})
		if len(list) != 1 || list[0].ID != "low" || next != "" {
			t.Fatalf("page 2 = %v %q", list, next)
		}
	})
}

func TestClaim_whenExpired_isReclaimedByTheSweeper_andOldFenceIsRejected(t *testing.T) {
	forEachDialect(t, func(t *testing.T, s *board.Service, _ *gorm.DB) {
		ctx := context.Background()
		mustCreate(t, s, "b", "r1", 0)
		c, _ := s.ClaimNext(ctx, "b", board.ClaimInput{Holder: "w1", TTL: 100 * time.Millisecond})
		time.Sleep(150 * time.Millisecond)
		var ce *board.ClaimExpired
		if _, err := s.Patch(ctx, "b", "r1", board.Update{ExpectedRevision: c.Revision, Fence: &c.Fence, State: ptr("running")}); !errors.As(err, &ce) {
			t.Fatalf("write after expiry = %v", err)
		}
		res, err := s.Sweep(ctx, 0, time.Millisecond)
		if err != nil || res.Reclaimed != 1 {
			t.Fatalf("sweep = %+v %v", res, err)
		}
		r, _ := s.Get(ctx, "b", "r1")
		if r.State != "pending" || r.Owner != "" || r.Fence != c.Fence+1 {
			t.Fatalf("reclaimed = %+v", r)
		}
		var sf *board.StaleFence
		if _, err := s.Patch(ctx, "b", "r1", board.Update{ExpectedRevision: r.Revision, Fence: &c.Fence, State: ptr("cancelled")}); !errors.As(err, &sf) {
			t.Fatalf("old fence after reclaim = %v", err)
		}
	})
}

func TestDefine_validatesAndRefusesRemovingUsedStates(t *testing.T) {
	forEachDialect(t, func(t *testing.T, s *board.Service, _ *gorm.DB) {
		ctx := context.Background()
		d := board.DefaultDefinition()
		d.States = append(d.States, "orphan")
		var bad *board.InvalidError
		if _, _, err := s.Define(ctx, "b", d, 0); !errors.As(err, &bad) || bad.Field != "states" {
			t.Fatalf("unreachable state: %v", err)
		}
		d = board.DefaultDefinition()
		d.Transitions["done"] = []string{"pending"}
		if _, _, err := s.Define(ctx, "b", d, 0); !errors.As(err, &bad) || bad.Field != "transitions" {
			t.Fatalf("out of terminal: %v", err)
		}
		b, created, err := s.Define(ctx, "b", board.DefaultDefinition(), 0)
		if err != nil || !created || b.Revision != 1 {
			t.Fatalf("define = %+v %v %v", b, created, err)
		}
		mustCreate(t, s, "b", "r1", 0)
		d = board.DefaultDefinition()
		d.States = []string{"todo", "claimed", "running", "done", "failed", "cancelled"}
		d.Initial = "todo"
		d.Transitions = map[string][]string{"todo": {"claimed", "cancelled"}, "claimed": {"running", "todo"}, "running": {"done", "failed", "todo"}}
		d.Claim.From, d.Claim.ReclaimTo = "todo", "todo"
		var inUse *board.InUse
		if _, _, err := s.Define(ctx, "b", d, 1); !errors.As(err, &inUse) || fmt.Sprint(inUse.States) != "[pending]" {
			t.Fatalf("in use: %v", err)
		}
		var rc *board.RevisionConflict
		if _, _, err := s.Define(ctx, "b", board.DefaultDefinition(), 5); !errors.As(err, &rc) || rc.Current != 1 {
			t.Fatalf("revision: %v", err)
		}
	})
}

// TestCreate_sameDedupeKey100TimesConcurrently_createsOneRecord: the
// processed-ID set holds under concurrency.
func TestCreate_sameDedupeKey100TimesConcurrently_createsOneRecord(t *testing.T) {
	forEachDialect(t, func(t *testing.T, s *board.Service, db *gorm.DB) {
		var created atomic.Int64
		ids := sync.Map{}
		var wg sync.WaitGroup
		for i := 0; i < 100; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, c, err := s.Create(context.Background(), "dd", board.RecordInput{Payload: []byte(`{}`), DedupeKey: "msg-42"})
				if err != nil {
					t.Errorf("create: %v", err)
					return
				}
				if c {
					created.Add(1)
				}
				ids.Store(r.ID, true)
			}()
		}
		wg.Wait()
		var n int64
		db.Raw(`SELECT COUNT(*) FROM board_records WHERE board = 'dd'`).Scan(&n)
		distinct := 0
		ids.Range(func(any, any) bool { distinct++; return true })
		if created.Load() != 1 || n != 1 || distinct != 1 {
			t.Fatalf("created %d, rows %d, distinct ids answered %d; want 1, 1, 1", created.Load(), n, distinct)
		}
	})
}

// TestClaim_61stInAMinute_isQuotaExceeded: claims_per_minute per actor.
func TestClaim_61stInAMinute_isQuotaExceeded(t *testing.T) {
	forEachDialect(t, func(t *testing.T, s *board.Service, _ *gorm.DB) {
		ctx := audit.WithActor(context.Background(), "tok-a")
		d := board.DefaultDefinition()
		d.Quota.ClaimsPerMinute = 60
		if _, _, err := s.Define(ctx, "q", d, 0); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 70; i++ {
			mustCreate(t, s, "q", fmt.Sprint("r", i), 0)
		}
		// Wait for a fresh window when the minute is nearly over.
		if sec := time.Now().Second(); sec > 50 {
			time.Sleep(time.Duration(61-sec) * time.Second)
		}
		for i := 0; i < 60; i++ {
			if r, err := s.ClaimNext(ctx, "q", board.ClaimInput{Holder: "w"}); err != nil || r == nil {
				t.Fatalf("claim %d: %v %v", i+1, r, err)
			}
		}
		var q *board.QuotaExceeded
		if _, err := s.ClaimNext(ctx, "q", board.ClaimInput{Holder: "w"}); !errors.As(err, &q) || q.RetryAfter <= 0 || q.RetryAfter > time.Minute {
			t.Fatalf("61st claim = %v", err)
		}
		// Another token has its own count.
		if r, err := s.ClaimNext(audit.WithActor(context.Background(), "tok-b"), "q", board.ClaimInput{Holder: "w"}); err != nil || r == nil {
			t.Fatalf("other token: %v %v", r, err)
		}
	})
}

// TestClaim_waiting_isWokenByANewRecord: a waiting claim takes a record
// created during its wait, long before its wait ends.
func TestClaim_waiting_isWokenByANewRecord(t *testing.T) {
	forEachDialect(t, func(t *testing.T, s *board.Service, _ *gorm.DB) {
		mustCreate(t, s, "w", "first", 0)
		s.ClaimNext(context.Background(), "w", board.ClaimInput{Holder: "x"})
		got := make(chan *board.Record, 1)
		go func() {
			r, err := s.ClaimNext(context.Background(), "w", board.ClaimInput{Holder: "waiter", Wait: 20 * time.Second})
			if err != nil {
				t.Error(err)
			}
			got <- r
		}()
		time.Sleep(100 * time.Millisecond)
		mustCreate(t, s, "w", "second", 0)
		select {
		case r := <-got:
			if r == nil || r.ID != "second" {
				t.Fatalf("woken claim = %+v", r)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the waiting claim was not woken by the new record")
		}
	})
}

func payloadOf(r *board.Record) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(r.Payload, &m)
	return m
}
