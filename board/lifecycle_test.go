package board_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/board"
)

func TestSweep_emptyBoard_pastTheIdleRetention_isDeleted(t *testing.T) {
	forEachDialect(t, func(t *testing.T, s *board.Service, db *gorm.DB) {
		ctx := context.Background()
		for _, b := range []string{"idle", "fresh"} {
			if _, _, err := s.Define(ctx, b, board.DefaultDefinition(), 0); err != nil {
				t.Fatal(err)
			}
		}
		mustCreate(t, s, "used", "r", 0)
		// idle and used were defined long ago; fresh just now
		if err := db.Exec(`UPDATE boards SET updated_at_ms = 1 WHERE board IN ('idle', 'used')`).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := s.Sweep(ctx, 0, time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetBoard(ctx, "idle"); !errors.Is(err, board.ErrBoardNotFound) {
			t.Fatalf("an empty board past the idle retention, after a sweep: %v; want ErrBoardNotFound", err)
		}
		// controls: an empty board within the retention, an old one with a record
		for _, b := range []string{"fresh", "used"} {
			if _, err := s.GetBoard(ctx, b); err != nil {
				t.Fatalf("board %s after a sweep: %v", b, err)
			}
		}
		var events int64
		if err := db.Raw(`SELECT COUNT(*) FROM audit_events WHERE action = 'board.deleted' AND board = 'idle'`).Scan(&events).Error; err != nil || events != 1 {
			t.Fatalf("board.deleted events = %d, %v", events, err)
		}
	})
}
