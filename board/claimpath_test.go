package board_test

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/board"
)

// A claim-next keeps the machine it read and checks its revision in the
// candidate's own read: the claim after a redefinition follows the new
// machine, not the kept one.
func TestClaimNext_afterTheBoardIsRedefined_followsTheNewMachine(t *testing.T) {
	forEachDialect(t, func(t *testing.T, s *board.Service, _ *gorm.DB) {
		ctx := context.Background()
		def := board.Definition{States: []string{"pending", "claimed", "working", "done", "failed"}, Initial: "pending",
			Transitions: map[string][]string{"pending": {"claimed", "working"}, "claimed": {"done", "pending"}, "working": {"done", "pending"}},
			Claim:       board.ClaimRule{From: "pending", To: "claimed", TTLMs: 60000, ReclaimTo: "pending", MaxAttempts: 5, Exhausted: "failed"},
			Terminal:    []string{"done", "failed"}}
		if _, _, err := s.Define(ctx, "b", def, 0); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, s, "b", "r1", 0)
		mustCreate(t, s, "b", "r2", 0)
		if c, err := s.ClaimNext(ctx, "b", board.ClaimInput{Holder: "w1"}); err != nil || c.State != "claimed" {
			t.Fatalf("first claim = %+v, %v", c, err)
		}
		def.Claim.To = "working"
		if _, _, err := s.Define(ctx, "b", def, 1); err != nil {
			t.Fatal(err)
		}
		c, err := s.ClaimNext(ctx, "b", board.ClaimInput{Holder: "w2"})
		if err != nil || c == nil || c.ID != "r2" || c.State != "working" {
			t.Fatalf("claim after the redefinition = %+v, %v; want r2 in working (the new claim.to)", c, err)
		}
	})
}

// An expired claim of a higher priority is reclaimed by the next claim
// before a pending record of a lower one, on the quick path too.
func TestClaimNext_expiredHigherPriority_isReclaimedBeforeALowerPendingRecord(t *testing.T) {
	forEachDialect(t, func(t *testing.T, s *board.Service, _ *gorm.DB) {
		ctx := context.Background()
		mustCreate(t, s, "b", "high", 9)
		mustCreate(t, s, "b", "low", 0)
		first, err := s.ClaimNext(ctx, "b", board.ClaimInput{Holder: "w1", TTL: 100 * time.Millisecond})
		if err != nil || first.ID != "high" {
			t.Fatalf("first claim = %+v, %v", first, err)
		}
		time.Sleep(150 * time.Millisecond)
		c, err := s.ClaimNext(ctx, "b", board.ClaimInput{Holder: "w2"})
		if err != nil || c == nil || c.ID != "high" || c.Owner != "w2" || c.Fence != first.Fence+1 {
			t.Fatalf("claim after high's expiry = %+v, %v; want high reclaimed by w2", c, err)
		}
	})
}
