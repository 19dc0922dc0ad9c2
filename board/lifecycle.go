package board

import (
	"context"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/sqlstore"
)

// Deleter is who asks to delete a board: the token's name and whether it
// is an admin token.
type Deleter struct {
	Name  string
	Admin bool
}

// DeleteBoard deletes a board, its definition and its records, which must
// all be terminal (else *OpenRecords), with a board.deleted audit event.
// Only the board's creator or an admin token may (else *NotCreator). The
// decision is made within the deletion's transaction, from the board row
// it locks (creates and redefinitions of the board lock it too, so none
// slips in) and the records it locks; no such board: ErrBoardNotFound.
func (s *Service) DeleteBoard(ctx context.Context, board string, by Deleter) error {
	if err := checkID("board", board); err != nil {
		return err
	}
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	_, err := sqlstore.Transact(ctx, s.db, func(tx *gorm.DB) (struct{}, error) {
		row, err := s.readBoard(tx, board, true)
		if err != nil {
			return struct{}{}, err
		}
		if !by.Admin && (row.CreatedBy == "" || row.CreatedBy != by.Name) {
			return struct{}{}, &NotCreator{CreatedBy: row.CreatedBy}
		}
		// no record becomes open meanwhile: creates lock the board row
		// first, and a terminal record never leaves its state
		var open int64
		if err := tx.Raw(`SELECT COUNT(*) FROM board_records WHERE board = ? AND open_rec = 1`+sqlstore.ForUpdate(tx), board).Scan(&open).Error; err != nil {
			return struct{}{}, err
		}
		if open > 0 {
			return struct{}{}, &OpenRecords{Open: open}
		}
		return struct{}{}, s.dropBoard(ctx, tx, row, "deleted")
	})
	if err != nil {
		return storeErr(err)
	}
	s.forget(board)
	return nil
}

// dropBoard deletes a locked board row, what belongs to it and its count
// in its creator's, and appends board.deleted (reason: "deleted", or
// "idle" for an expiry).
func (s *Service) dropBoard(ctx context.Context, tx *gorm.DB, row *boardRow, reason string) error {
	res := tx.Exec(`DELETE FROM board_records WHERE board = ?`, row.Board)
	if res.Error != nil {
		return res.Error
	}
	records := res.RowsAffected
	for _, q := range []string{`DELETE FROM board_record_payloads WHERE board = ?`, `DELETE FROM board_batches WHERE board = ?`, `DELETE FROM board_dedupe WHERE board = ?`, `DELETE FROM board_quota WHERE board = ?`, `DELETE FROM boards WHERE board = ?`} {
		if err := tx.Exec(q, row.Board).Error; err != nil {
			return err
		}
	}
	if err := tx.Exec(`UPDATE board_creators SET boards = boards - 1 WHERE created_by = ? AND boards > 0`, row.CreatedBy).Error; err != nil {
		return err
	}
	return s.audit.Append(ctx, tx, audit.Event{Action: "board.deleted", Board: row.Board, Resource: "boards/" + row.Board},
		map[string]any{"board": row.Board, "revision": row.Revision, "created_by": row.CreatedBy, "records": records, "reason": reason})
}

// forget drops a deleted board's cached machine and wakes its waiting
// claimers (here and on the other instances), who then learn it is gone.
func (s *Service) forget(board string) {
	s.mu.Lock()
	delete(s.defs, board)
	s.mu.Unlock()
	s.publish(context.Background(), board, 0)
}

// expireIdle deletes, in a bounded batch, the boards without records whose
// definition was last written before cutoff: each in a transaction of its
// own that locks the board row and finds no record again under it.
func (s *Service) expireIdle(ctx context.Context, cutoff int64) (int, error) {
	db := s.db.WithContext(ctx)
	var idle []string
	if err := db.Raw(`SELECT b.board FROM boards b WHERE b.updated_at_ms < ?
		AND NOT EXISTS (SELECT 1 FROM board_records r WHERE r.board = b.board) LIMIT 100`, cutoff).Scan(&idle).Error; err != nil {
		return 0, err
	}
	n := 0
	for _, board := range idle {
		gone, err := sqlstore.Transact(ctx, s.db, func(tx *gorm.DB) (bool, error) {
			row, err := s.readBoard(tx, board, true)
			if err == ErrBoardNotFound || (err == nil && row.UpdatedAtMs >= cutoff) {
				return false, nil // deleted or redefined since
			}
			if err != nil {
				return false, err
			}
			var ids []string
			if err := tx.Raw(`SELECT id FROM board_records WHERE board = ? LIMIT 1`+sqlstore.ForUpdate(tx), board).Scan(&ids).Error; err != nil || len(ids) > 0 {
				return false, err
			}
			return true, s.dropBoard(ctx, tx, row, "idle")
		})
		if err != nil {
			return n, err
		}
		if gone {
			n++
			s.forget(board)
		}
	}
	return n, nil
}
