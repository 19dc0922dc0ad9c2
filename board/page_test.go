package board_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/promptd/promptd/board"
)

// A page of records carries at most PageMaxBytes of payloads (plus the
// record that passes it): 40 records of 200 KB used to come in one answer
// of 8 MB whatever their size (record lists of 128 MB, ten at once 2.5 GB).
func TestList_largePayloads_pageEndsPastPageMaxBytes(t *testing.T) {
	forEachDialect(t, func(t *testing.T, s *board.Service, _ *gorm.DB) {
		ctx := context.Background()
		payload := []byte(`"` + strings.Repeat("x", 200_000) + `"`)
		for i := range 40 {
			if _, _, err := s.Create(ctx, "big", board.RecordInput{ID: fmt.Sprintf("r%02d", i), Payload: payload}); err != nil {
				t.Fatal(err)
			}
		}
		seen := map[string]bool{}
		pages, cursor := 0, ""
		for {
			rs, next, err := s.List(ctx, "big", board.ListFilter{Limit: 500, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			pages++
			size := 0
			for _, r := range rs {
				if seen[r.ID] {
					t.Fatalf("record %s twice", r.ID)
				}
				seen[r.ID], size = true, size+len(r.Payload)
			}
			if size > 4<<20+300_000 { // board.PageMaxBytes and the record that passes it
				t.Fatalf("a page of %d records, %d bytes", len(rs), size)
			}
			if next == "" {
				break
			}
			cursor = next
		}
		if len(seen) != 40 || pages < 2 {
			t.Fatalf("%d records over %d pages; want all 40 over at least 2", len(seen), pages)
		}
	})
}
