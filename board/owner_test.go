package board_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/board"
	"github.com/promptd/promptd/internal/harness/testenv"
)

func TestDeleteBoard_onlyItsCreatorOrAnAdmin_andOnlyWhenClosed(t *testing.T) {
	forEachDialect(t, func(t *testing.T, s *board.Service, _ *gorm.DB) {
		alice, bob := audit.WithActor(context.Background(), "alice"), audit.WithActor(context.Background(), "bob")
		if _, _, err := s.Create(alice, "b", board.RecordInput{ID: "r", Payload: []byte(`1`)}); err != nil {
			t.Fatal(err)
		}
		if b, err := s.GetBoard(alice, "b"); err != nil || b.CreatedBy != "alice" {
			t.Fatalf("board = %+v, %v; want created by alice", b, err)
		}
		var nc *board.NotCreator
		if err := s.DeleteBoard(bob, "b", board.Deleter{Name: "bob"}); !errors.As(err, &nc) || nc.CreatedBy != "alice" {
			t.Fatalf("delete by bob: %v", err)
		}
		var open *board.OpenRecords
		if err := s.DeleteBoard(alice, "b", board.Deleter{Name: "alice"}); !errors.As(err, &open) || open.Open != 1 {
			t.Fatalf("delete with an open record: %v", err)
		}
		if _, err := s.Patch(alice, "b", "r", board.Update{ExpectedRevision: 1, State: ptr("done")}); err == nil {
			t.Fatal("pending -> done is no transition of the default machine")
		}
		if _, err := s.Patch(alice, "b", "r", board.Update{ExpectedRevision: 1, State: ptr("cancelled")}); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteBoard(bob, "b", board.Deleter{Name: "bob", Admin: true}); err != nil {
			t.Fatalf("delete by an admin: %v", err)
		}
		if err := s.DeleteBoard(alice, "b", board.Deleter{Name: "alice"}); !errors.Is(err, board.ErrBoardNotFound) {
			t.Fatalf("delete again: %v", err)
		}
	})
}

func TestCreate_perTokenBoardLimit_isACount_notAQuota(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		s := board.New(board.Options{DB: db, Instance: "test", MaxBoardsPerToken: 2})
		alice, bob := audit.WithActor(context.Background(), "alice"), audit.WithActor(context.Background(), "bob")
		for _, b := range []string{"a1", "a2"} {
			if _, _, err := s.Define(alice, b, board.DefaultDefinition(), 0); err != nil {
				t.Fatal(err)
			}
		}
		var lim *board.LimitError
		if _, _, err := s.Create(alice, "a3", board.RecordInput{Payload: []byte(`1`)}); !errors.As(err, &lim) ||
			lim.Name != board.LimitBoardsPerToken || lim.Limit != 2 {
			t.Fatalf("alice's third board: %v", err)
		}
		if _, err := s.GetBoard(alice, "a3"); !errors.Is(err, board.ErrBoardNotFound) {
			t.Fatalf("the refused board: %v", err)
		}
		if _, _, err := s.Define(bob, "b1", board.DefaultDefinition(), 0); err != nil {
			t.Fatalf("bob's first board: %v", err)
		}
		if err := s.DeleteBoard(alice, "a1", board.Deleter{Name: "alice"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Define(alice, "a3", board.DefaultDefinition(), 0); err != nil {
			t.Fatalf("alice's board after deleting one: %v", err)
		}
	})
}

func TestCreate_perTokenBoardLimit_holdsUnderConcurrentCreates(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		const limit, tries = 3, 12
		s := board.New(board.Options{DB: db, Instance: "test", MaxBoardsPerToken: limit})
		alice := audit.WithActor(context.Background(), "alice")
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			ok, over int
			others   []error
		)
		for i := 0; i < tries; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				_, _, err := s.Create(alice, fmt.Sprintf("c%02d", i), board.RecordInput{Payload: []byte(`1`)})
				var lim *board.LimitError
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case errors.As(err, &lim):
					over++
				default:
					others = append(others, err)
				}
			}(i)
		}
		wg.Wait()
		if ok != limit || over != tries-limit || len(others) > 0 {
			t.Fatalf("%d concurrent first creates of one token: %d created, %d over the limit, others %v; want %d created",
				tries, ok, over, others, limit)
		}
	})
}
