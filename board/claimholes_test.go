package board_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/board"
	"github.com/promptd/promptd/sqlstore"
)

// waitSignal makes s report each claimer that starts to wait.
func waitSignal(s *board.Service) <-chan struct{} {
	ch := make(chan struct{}, 64)
	board.SetWaitHook(s, func(string) {
		select {
		case ch <- struct{}{}:
		default:
		}
	})
	return ch
}

func TestPatch_handBackOnTheLastAttempt_exhaustsTheRecord(t *testing.T) {
	forEachDialect(t, func(t *testing.T, s *board.Service, _ *gorm.DB) {
		ctx := context.Background()
		d := board.DefaultDefinition()
		d.Claim.MaxAttempts = 2
		if _, _, err := s.Define(ctx, "hb", d, 0); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, s, "hb", "r", 0)
		handBack := func() *board.Record {
			t.Helper()
			c, err := s.ClaimNext(ctx, "hb", board.ClaimInput{Holder: "w"})
			if err != nil || c == nil {
				t.Fatalf("claim = %+v, %v", c, err)
			}
			r, err := s.Patch(ctx, "hb", "r", board.Update{ExpectedRevision: c.Revision, Fence: &c.Fence, State: ptr("pending")})
			if err != nil {
				t.Fatalf("hand back: %v", err)
			}
			return r
		}
		// control: a hand-back with attempts left is a plain hand-back
		if r := handBack(); r.State != "pending" || r.Owner != "" || r.Attempts != 1 {
			t.Fatalf("first hand-back = %+v, want pending, unowned, 1 attempt", r)
		}
		if r := handBack(); r.State != "failed" || r.Owner != "" || r.Attempts != 2 {
			t.Fatalf("hand-back on the last attempt = state %q owner %q attempts %d, want the exhausted state failed", r.State, r.Owner, r.Attempts)
		}
		if c, err := s.ClaimNext(ctx, "hb", board.ClaimInput{Holder: "w"}); err != nil || c != nil {
			t.Fatalf("claim after exhaustion = %+v, %v; want nothing", c, err)
		}
	})
}

func TestClaimNext_waiter_takesARecordThatNoChangeAnnounced(t *testing.T) {
	forEachDialect(t, func(t *testing.T, s *board.Service, db *gorm.DB) {
		ctx := context.Background()
		board.SetClaimRecheck(s, 20*time.Millisecond)
		waiting := waitSignal(s)
		mustCreate(t, s, "nb", "r", 0)
		if c, err := s.ClaimNext(ctx, "nb", board.ClaimInput{Holder: "x", TTL: board.MaxClaimTTL}); err != nil || c == nil {
			t.Fatalf("claim by x = %+v, %v", c, err)
		}
		type result struct {
			r   *board.Record
			err error
		}
		// The claim's last attempt, when its wait runs out, finds what a
		// change nobody announced left: the waiter must take it before.
		claim := func() <-chan result {
			out := make(chan result, 1)
			go func() {
				end := time.Now().Add(board.MaxWait)
				r, err := s.ClaimNext(ctx, "nb", board.ClaimInput{Holder: "w", TTL: board.MaxClaimTTL, Wait: board.MaxWait})
				if err == nil && !time.Now().Before(end) {
					err = fmt.Errorf("took %v only when its wait of %s ran out", r != nil, board.MaxWait)
				}
				out <- result{r, err}
			}()
			return out
		}
		// x's claim expires: nothing announces it (no sweeper runs here)
		got := claim()
		select {
		case <-waiting: // control: the claimed record was not claimable
		case res := <-got:
			t.Fatalf("the waiter returned before waiting: %+v, %v", res.r, res.err)
		}
		if err := db.Exec(`UPDATE board_records SET claim_expires_at_ms = 1 WHERE board = 'nb' AND id = 'r'`).Error; err != nil {
			t.Fatal(err)
		}
		if res := <-got; res.err != nil || res.r == nil || res.r.ID != "r" || res.r.Owner != "w" {
			t.Fatalf("waiter after an unannounced expiry = %+v, %v; want record r claimed by w", res.r, res.err)
		}
		if sqlstore.Dialect(db) != sqlstore.MySQL {
			return
		}
		// a claim's transaction that locked the candidate rolls back
		mustCreate(t, s, "nb", "q", 0)
		tx := db.Begin()
		defer tx.Rollback()
		var ids []string
		if err := tx.Raw(`SELECT id FROM board_records WHERE board = 'nb' AND id = 'q' FOR UPDATE`).Scan(&ids).Error; err != nil || len(ids) != 1 {
			t.Fatalf("lock q: %v %v", ids, err)
		}
		got = claim()
		select {
		case <-waiting: // control: the locked record was skipped
		case res := <-got:
			t.Fatalf("the waiter returned before waiting: %+v, %v", res.r, res.err)
		}
		tx.Rollback()
		if res := <-got; res.err != nil || res.r == nil || res.r.ID != "q" {
			t.Fatalf("waiter after a rolled-back lock = %+v, %v; want record q", res.r, res.err)
		}
	})
}

func TestClaimQuota_waitingClaimer_spendsNoneOfIt(t *testing.T) {
	forEachDialect(t, func(t *testing.T, s *board.Service, _ *gorm.DB) {
		ctx := audit.WithActor(context.Background(), "t1")
		d := board.DefaultDefinition()
		d.Quota.ClaimsPerMinute = 1
		if _, _, err := s.Define(ctx, "qb", d, 0); err != nil {
			t.Fatal(err)
		}
		waiting := waitSignal(s)
		wctx, stop := context.WithCancel(ctx)
		defer stop()
		done := make(chan error, 1)
		go func() { // waits for a priority no record has
			_, err := s.ClaimNext(wctx, "qb", board.ClaimInput{Holder: "waiter", Wait: board.MaxWait, MinPriority: ptr(int64(10))})
			done <- err
		}()
		<-waiting
		for _, id := range []string{"p0", "p1", "p2"} {
			mustCreate(t, s, "qb", id, 0)
		}
		c, err := s.ClaimNext(ctx, "qb", board.ClaimInput{Holder: "taker"})
		if err != nil || c == nil {
			t.Fatalf("claim beside a waiting claimer of the same token = %+v, %v; want a record", c, err)
		}
		// control: the quota still holds (a second try, should a new minute
		// have begun between the two claims)
		var q *board.QuotaExceeded
		for i := 0; i < 2 && !errors.As(err, &q); i++ {
			_, err = s.ClaimNext(ctx, "qb", board.ClaimInput{Holder: "taker"})
		}
		if q == nil || q.What != "claims_per_minute" {
			t.Fatalf("claims over the quota: %v; want QuotaExceeded", err)
		}
		stop()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("waiter: %v", err)
		}
	})
}
