package board

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/sqlstore"
)

// MaxPriority bounds priorities (JSON clients read them exactly).
const MaxPriority = 1<<53 - 1

// RecordInput is a record to create.
type RecordInput struct {
	ID        string // generated when empty
	Payload   []byte
	Priority  int64
	DedupeKey string
}

// errExisting: the create met a record it answers with instead (its
// dedupe_key or id is taken); the transaction rolls back.
type errExisting struct{ id string }

func (e *errExisting) Error() string { return "board: existing record " + e.id }

// Create adds a record in the board's initial state. A board that does
// not exist is created with the default machine. A dedupe_key the board
// remembers, or an id it has, answers with that record (created false).
func (s *Service) Create(ctx context.Context, board string, in RecordInput, then ...sqlstore.Then[*Record]) (*Record, bool, error) {
	if err := checkID("board", board); err != nil {
		return nil, false, err
	}
	if in.ID == "" {
		in.ID = newID()
	} else if err := checkID("id", in.ID); err != nil {
		return nil, false, err
	}
	if err := validPayload(in.Payload); err != nil {
		return nil, false, err
	}
	if in.Priority > MaxPriority || in.Priority < -MaxPriority {
		return nil, false, invalidf("priority", "priority must be within ±%d", int64(MaxPriority))
	}
	if in.DedupeKey != "" {
		if err := checkOpaque("dedupe_key", in.DedupeKey); err != nil {
			return nil, false, err
		}
	}
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	if err := s.ensureBoard(ctx, board); err != nil {
		return nil, false, err
	}
	var (
		rec *Record
		err error
	)
	for attempt := 0; ; attempt++ {
		rec, err = sqlstore.Transact(ctx, s.db, func(tx *gorm.DB) (*Record, error) {
			r, err := s.create(ctx, tx, board, in)
			if err != nil {
				return nil, err
			}
			return r.record(), nil
		}, then...)
		// two first creates of one board, or of one dedupe_key, raced: the
		// loser's retry finds the winner's row; the board expired (idle)
		// between ensureBoard and the create: it is created again
		if err == nil || attempt > 0 {
			break
		}
		if errors.Is(err, ErrBoardNotFound) {
			if err = s.ensureBoard(ctx, board); err != nil {
				return nil, false, err
			}
		} else if !sqlstore.IsDuplicate(err) {
			break
		}
	}
	var ex *errExisting
	if errors.As(err, &ex) {
		r, err := s.Get(ctx, board, ex.id)
		return r, false, err
	}
	if err != nil {
		return nil, false, storeErr(err)
	}
	s.publish(ctx, board, rec.Revision)
	return rec, true, nil
}

// ensureBoard creates board with the default machine unless it exists,
// in a transaction of its own (so the creates that follow lock an
// existing row, never a gap).
func (s *Service) ensureBoard(ctx context.Context, board string) error {
	db := s.db.WithContext(ctx)
	if _, err := s.readBoard(db, board, false); !errors.Is(err, ErrBoardNotFound) {
		return storeErr(err)
	}
	_, err := sqlstore.Transact(ctx, s.db, func(tx *gorm.DB) (bool, error) {
		now, err := s.sqlNow(tx)
		if err != nil {
			return false, err
		}
		d := DefaultDefinition()
		if err := s.insertBoard(tx, board, &d, now, audit.Actor(ctx)); err != nil {
			return false, err
		}
		return true, s.boardEvent(ctx, tx, board, 1)
	})
	if sqlstore.IsDuplicate(err) {
		return nil // created by another at the same moment
	}
	return storeErr(err)
}

// create is Create's transaction: the board row locked (creates of a
// board take turns, so the non-terminal count and the dedupe check are
// exact), then the dedupe key and the record.
func (s *Service) create(ctx context.Context, tx *gorm.DB, board string, in RecordInput) (*recordRow, error) {
	b, err := s.readBoard(tx, board, true)
	if err != nil {
		return nil, err
	}
	def, err := parseDefinition(b.Definition)
	if err != nil {
		return nil, err
	}
	now := b.NowMs
	var existing []string
	if err := tx.Raw(`SELECT id FROM board_records WHERE board = ? AND id = ?`, board, in.ID).Scan(&existing).Error; err != nil {
		return nil, err
	}
	if len(existing) > 0 {
		return nil, &errExisting{id: in.ID}
	}
	var dedupe *string
	if in.DedupeKey != "" {
		var rows []struct {
			RecordID    string
			ExpiresAtMs int64
		}
		if err := tx.Raw(`SELECT record_id, expires_at_ms FROM board_dedupe WHERE board = ? AND dedupe_key = ?`+sqlstore.ForUpdate(tx),
			board, in.DedupeKey).Scan(&rows).Error; err != nil {
			return nil, err
		}
		if len(rows) > 0 && rows[0].ExpiresAtMs > now {
			return nil, &errExisting{id: rows[0].RecordID}
		}
		if len(rows) > 0 {
			if err := tx.Exec(`DELETE FROM board_dedupe WHERE board = ? AND dedupe_key = ?`, board, in.DedupeKey).Error; err != nil {
				return nil, err
			}
		}
		if err := tx.Exec(`INSERT INTO board_dedupe (board, dedupe_key, record_id, expires_at_ms) VALUES (?, ?, ?, ?)`,
			board, in.DedupeKey, in.ID, now+s.o.DedupeTTL.Milliseconds()).Error; err != nil {
			return nil, err
		}
		dedupe = &in.DedupeKey
	}
	var open int64
	if err := tx.Raw(`SELECT COUNT(*) FROM board_records WHERE board = ? AND open_rec = 1`, board).Scan(&open).Error; err != nil {
		return nil, err
	}
	if open >= s.o.MaxRecords {
		return nil, &QuotaExceeded{What: "records", Limit: s.o.MaxRecords, RetryAfter: time.Second}
	}
	openRec := int64(1)
	if def.IsTerminal(def.Initial) {
		openRec = 0
	}
	r := &recordRow{Board: board, ID: in.ID, Revision: 1, State: def.Initial, Priority: in.Priority, Payload: string(in.Payload),
		DedupeKey: dedupe, OpenRec: openRec, CreatedAtMs: now, UpdatedAtMs: now}
	if err := tx.Exec(`INSERT INTO board_records (`+recordCols+`) VALUES (?, ?, 1, ?, '', 0, NULL, 0, ?, 0, ?, ?, ?, ?, ?)`,
		board, in.ID, r.State, in.Priority, r.Payload, dedupe, openRec, now, now).Error; err != nil {
		return nil, err
	}
	if err := s.keepPayload(tx, nil, r); err != nil {
		return nil, err
	}
	return r, s.appendEvent(ctx, tx, "board.record_created", r)
}

// Get returns one record.
func (s *Service) Get(ctx context.Context, board, id string) (*Record, error) {
	if err := checkID("board", board); err != nil {
		return nil, err
	}
	if err := checkID("id", id); err != nil {
		return nil, err
	}
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	db := s.db.WithContext(ctx)
	r, err := readRecord(db, board, id, false)
	if errors.Is(err, ErrRecordNotFound) {
		if _, berr := s.readBoard(db, board, false); berr != nil {
			return nil, storeErr(berr)
		}
	}
	if err != nil {
		return nil, storeErr(err)
	}
	return r.record(), nil
}

// ListFilter selects records; Cursor is the last record of the previous
// page (opaque to clients).
type ListFilter struct {
	State, Owner string
	Limit        int
	Cursor       string
}

// List returns records in board order (priority desc, created_at, id)
// and the cursor of the next page ("" at the end).
func (s *Service) List(ctx context.Context, board string, f ListFilter) ([]*Record, string, error) {
	if err := checkID("board", board); err != nil {
		return nil, "", err
	}
	if f.Limit <= 0 {
		return nil, "", invalidf("limit", "limit must be positive")
	}
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	db := s.db.WithContext(ctx)
	if _, err := s.readBoard(db, board, false); err != nil {
		return nil, "", storeErr(err)
	}
	q := `SELECT ` + recordCols + ` FROM board_records WHERE board = ?`
	args := []any{board}
	if f.State != "" {
		q += ` AND state = ?`
		args = append(args, f.State)
	}
	if f.Owner != "" {
		q += ` AND owner = ?`
		args = append(args, f.Owner)
	}
	if f.Cursor != "" {
		p, c, id, ok := parseCursor(f.Cursor)
		if !ok {
			return nil, "", invalidf("cursor", "cursor is not one this list returned")
		}
		q += ` AND (priority < ? OR (priority = ? AND (created_at_ms > ? OR (created_at_ms = ? AND id > ?))))`
		args = append(args, p, p, c, c, id)
	}
	q += ` ORDER BY priority DESC, created_at_ms, id LIMIT ?`
	args = append(args, f.Limit+1)
	rows, full, err := recordPage(db, q, args, f.Limit)
	if err != nil {
		return nil, "", storeErr(err)
	}
	next := ""
	if full {
		l := rows[len(rows)-1]
		next = fmt.Sprintf("%d:%d:%s", l.Priority, l.CreatedAtMs, l.ID)
	}
	out := make([]*Record, len(rows))
	for i := range rows {
		out[i] = rows[i].record()
	}
	return out, next, nil
}

// PageMaxBytes bounds the payloads one page of records carries: a page
// ends after the record that passes it (at least one a page), with its
// cursor, whatever its limit asked for.
const PageMaxBytes = 4 << 20

// recordPage streams the rows of q (limit+1 asked for) and stops at limit
// records or once their payloads pass PageMaxBytes; full reports that
// more may follow.
func recordPage(db *gorm.DB, q string, args []any, limit int) ([]recordRow, bool, error) {
	rs, err := db.Raw(q, args...).Rows()
	if err != nil {
		return nil, false, err
	}
	return sqlstore.ScanPage(rs, limit, PageMaxBytes, func(rs *sql.Rows) (recordRow, int, error) {
		var r recordRow
		err := db.ScanRows(rs, &r)
		return r, r.size(), err
	})
}

func parseCursor(c string) (int64, int64, string, bool) {
	parts := strings.SplitN(c, ":", 3)
	if len(parts) != 3 {
		return 0, 0, "", false
	}
	p, err1 := strconv.ParseInt(parts[0], 10, 64)
	t, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil || checkID("cursor", parts[2]) != nil {
		return 0, 0, "", false
	}
	return p, t, parts[2], true
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "rec_" + hex.EncodeToString(b[:])
}
