package board

import (
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// Summary is a board as the list of boards shows it: its revision and
// how many records are in each of its states (every state of its machine,
// 0 when empty).
type Summary struct {
	Board     string
	Revision  int64
	CreatedBy string
	Counts    map[string]int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ListBoards returns boards by name after cursor (the last name of the
// previous page; "" for the first), those in boards only (a scoped
// token's, in the query before the limit; nil: every board), and the
// cursor of the next page ("" at the end). The record counts of the page
// come from one grouped query.
func (s *Service) ListBoards(ctx context.Context, limit int, cursor string, boards sqlstore.Names) ([]*Summary, string, error) {
	if limit <= 0 {
		return nil, "", invalidf("limit", "limit must be positive")
	}
	if cursor != "" && checkID("cursor", cursor) != nil {
		return nil, "", invalidf("cursor", "cursor is not one this list returned")
	}
	if boards.None() {
		return []*Summary{}, "", nil
	}
	where, args := `board > ?`, []any{cursor}
	if cond, a := boards.Cond("board"); cond != "" {
		where, args = where+` AND `+cond, append(args, a...)
	}
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	var rows []boardRow
	more := false
	var counts []struct {
		Board, State string
		N            int64
	}
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Raw(`SELECT board, revision, definition, created_by, created_at_ms, updated_at_ms FROM boards WHERE `+where+`
			ORDER BY board LIMIT ?`, append(args, limit+1)...).Scan(&rows).Error; err != nil {
			return err
		}
		if more = len(rows) > limit; more {
			rows = rows[:limit]
		}
		if len(rows) == 0 {
			return nil
		}
		return tx.Raw(`SELECT board, state, COUNT(*) AS n FROM board_records WHERE board >= ? AND board <= ?
			GROUP BY board, state`, rows[0].Board, rows[len(rows)-1].Board).Scan(&counts).Error
	})
	if err != nil {
		return nil, "", storeErr(err)
	}
	next := ""
	if more {
		next = rows[len(rows)-1].Board
	}
	out := make([]*Summary, len(rows))
	byName := make(map[string]*Summary, len(rows))
	for i := range rows {
		b, err := rows[i].board()
		if err != nil {
			return nil, "", err
		}
		sum := &Summary{Board: b.Board, Revision: b.Revision, CreatedBy: b.CreatedBy, Counts: make(map[string]int64, len(b.Definition.States)),
			CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt}
		for _, st := range b.Definition.States {
			sum.Counts[st] = 0
		}
		out[i], byName[b.Board] = sum, sum
	}
	for _, c := range counts {
		if sum, ok := byName[c.Board]; ok {
			sum.Counts[c.State] = c.N
		}
	}
	return out, next, nil
}
