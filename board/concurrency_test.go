package board_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/board"
)

// TestClaimNext_32ConcurrentClaimersOnMariaDB_claimEachRecordOnceWithoutError:
// 32 claimers claiming and completing as fast as they can (claims and
// completions interleaved on one index range): no claim fails (InnoDB
// deadlocks among claims were the finding), every record is claimed once
// and ends done.
func TestClaimNext_32ConcurrentClaimersOnMariaDB_claimEachRecordOnceWithoutError(t *testing.T) {
	s, db := mysqlService(t)
	ctx := context.Background()
	d := quick()
	d.Claim.TTLMs = 60000
	if _, _, err := s.Define(ctx, "cc", d, 0); err != nil {
		t.Fatal(err)
	}
	const n, claimers = 1500, 32
	for i := 0; i < n; i++ {
		if _, _, err := s.Create(ctx, "cc", board.RecordInput{ID: fmt.Sprint("r", i), Payload: []byte(`{}`), Priority: int64(i % 7)}); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu     sync.Mutex
		claims = map[string]int{}
		errs   []error
		wg     sync.WaitGroup
	)
	for w := 0; w < claimers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := s.ClaimNext(ctx, "cc", board.ClaimInput{Holder: fmt.Sprint("w", w)})
				if err == nil && c != nil {
					_, err = s.Patch(ctx, "cc", c.ID, board.Update{ExpectedRevision: c.Revision, Fence: &c.Fence, State: ptr("done")})
				}
				mu.Lock()
				if c != nil {
					claims[c.ID]++
				}
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
				if err != nil || c == nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Errorf("%d claimers failed; first: %v", len(errs), errs[0])
		logDeadlock(t, db)
	}
	var left int64
	db.Raw(`SELECT COUNT(*) FROM board_records WHERE board = 'cc' AND state <> 'done'`).Scan(&left)
	twice := 0
	for _, k := range claims {
		if k != 1 {
			twice++
		}
	}
	if len(claims) != n || twice != 0 || left != 0 {
		t.Errorf("%d of %d records claimed, %d more than once, %d not done", len(claims), n, twice, left)
	}
}

// logDeadlock logs InnoDB's latest detected deadlock (what the two
// transactions held and waited for).
func logDeadlock(t *testing.T, db *gorm.DB) {
	var rows []struct{ Type, Name, Status string }
	db.Raw(`SHOW ENGINE INNODB STATUS`).Scan(&rows)
	for _, r := range rows {
		t.Logf("SHOW ENGINE INNODB STATUS:\n%s", r.Status)
	}
}

// A claim expires, another claimer reclaims the record and completes it:
// the first holder's late write with its old fence is stale_fence (its
// claim was lost), not invalid_transition (which would tell it nothing of
// the claim); its heartbeat and release too.
func TestPatch_withTheFenceOfALostClaim_whenAnotherCompletedTheRecord_isStaleFence(t *testing.T) {
	forEachDialect(t, func(t *testing.T, s *board.Service, _ *gorm.DB) {
		ctx := context.Background()
		if _, _, err := s.Define(ctx, "lost", quick(), 0); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, s, "lost", "a", 0)
		first, err := s.ClaimOne(ctx, "lost", "a", board.ClaimInput{Holder: "first", TTL: board.MinClaimTTL})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(board.MinClaimTTL + 50*time.Millisecond)
		second, err := s.ClaimOne(ctx, "lost", "a", board.ClaimInput{Holder: "second"})
		if err != nil {
			t.Fatalf("reclaim by the second: %v", err)
		}
		if _, err := s.Patch(ctx, "lost", "a", board.Update{ExpectedRevision: second.Revision, Fence: &second.Fence, State: ptr("done")}); err != nil {
			t.Fatal(err)
		}
		var sf *board.StaleFence
		_, err = s.Patch(ctx, "lost", "a", board.Update{ExpectedRevision: first.Revision, Fence: &first.Fence, State: ptr("done")})
		if !errors.As(err, &sf) || sf.Fence != first.Fence {
			t.Errorf("the first holder's late patch = %v, want stale_fence", err)
		}
		if _, err := s.Heartbeat(ctx, "lost", "a", first.Fence, 0); !errors.As(err, &sf) {
			t.Errorf("the first holder's late heartbeat = %v, want stale_fence", err)
		}
		if _, err := s.Release(ctx, "lost", "a", first.Fence); !errors.As(err, &sf) {
			t.Errorf("the first holder's late release = %v, want stale_fence", err)
		}
		var it *board.InvalidTransition
		if _, err := s.Patch(ctx, "lost", "a", board.Update{ExpectedRevision: second.Revision + 1, State: ptr("pending")}); !errors.As(err, &it) {
			t.Errorf("an unfenced write to the done record = %v, want invalid_transition", err)
		}
	})
}
