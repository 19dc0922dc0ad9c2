package board

import (
	"encoding/json"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// Board is a board and its state machine.
type Board struct {
	Board      string
	Revision   int64
	Definition Definition
	// CreatedBy is the token that created the board ("" for a board older
	// than this field); it and an admin token may delete the board.
	CreatedBy string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Record is one record of a board. Owner, Fence and ClaimExpiresAt are
// set while it is claimed; Fence only ever grows.
type Record struct {
	Board          string
	ID             string
	Revision       int64
	State          string
	Owner          string // "" when not claimed
	Fence          int64
	ClaimExpiresAt *time.Time
	ClaimTTLMs     int64
	Priority       int64
	Attempts       int64
	Payload        json.RawMessage
	DedupeKey      string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Claimed reports whether the record is under a claim (expired or not).
func (r *Record) Claimed() bool { return r.Owner != "" }

type recordRow struct {
	Board            string
	ID               string
	Revision         int64
	State            string
	Owner            string
	Fence            int64
	ClaimExpiresAtMs *int64
	ClaimTtlMs       int64
	Priority         int64
	Attempts         int64
	Payload          string
	DedupeKey        *string
	OpenRec          int64
	CreatedAtMs      int64
	UpdatedAtMs      int64
}

const recordCols = `board, id, revision, state, owner, fence, claim_expires_at_ms, claim_ttl_ms, priority, attempts, payload,
	dedupe_key, open_rec, created_at_ms, updated_at_ms`

// qualifiedRecordCols is recordCols of the table aliased r.
var qualifiedRecordCols = func() string {
	cols := strings.Split(strings.Join(strings.Fields(recordCols), " "), ", ")
	for i, c := range cols {
		cols[i] = "r." + c
	}
	return strings.Join(cols, ", ")
}()

// size is about what a record costs in an answer: its payload and ids.
func (r *recordRow) size() int { return len(r.Payload) + len(r.ID) + len(r.Owner) + 256 }

func (r *recordRow) record() *Record {
	out := &Record{Board: r.Board, ID: r.ID, Revision: r.Revision, State: r.State, Owner: r.Owner, Fence: r.Fence,
		ClaimTTLMs: r.ClaimTtlMs, Priority: r.Priority, Attempts: r.Attempts, Payload: json.RawMessage(r.Payload),
		CreatedAt: time.UnixMilli(r.CreatedAtMs).UTC(), UpdatedAt: time.UnixMilli(r.UpdatedAtMs).UTC()}
	if r.ClaimExpiresAtMs != nil {
		t := time.UnixMilli(*r.ClaimExpiresAtMs).UTC()
		out.ClaimExpiresAt = &t
	}
	if r.DedupeKey != nil {
		out.DedupeKey = *r.DedupeKey
	}
	return out
}

// before reports whether r comes before o in board order: priority desc,
// created_at asc, id asc.
func (r *recordRow) before(o *recordRow) bool {
	if r.Priority != o.Priority {
		return r.Priority > o.Priority
	}
	if r.CreatedAtMs != o.CreatedAtMs {
		return r.CreatedAtMs < o.CreatedAtMs
	}
	return r.ID < o.ID
}

func readRecord(db *gorm.DB, board, id string, lock bool) (*recordRow, error) {
	q := `SELECT ` + recordCols + ` FROM board_records WHERE board = ? AND id = ?`
	if lock {
		q += sqlstore.ForUpdate(db)
	}
	var r recordRow
	found, err := queryOne(db, q, []any{board, id}, r.dest()...)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, ErrRecordNotFound
	}
	return &r, nil
}

// dest is r's fields in recordCols' order, for rows.Scan: the hot reads
// scan rows themselves (sqlstore.QueryDirect), without GORM's reflection.
func (r *recordRow) dest(more ...any) []any {
	return append([]any{&r.Board, &r.ID, &r.Revision, &r.State, &r.Owner, &r.Fence, &r.ClaimExpiresAtMs, &r.ClaimTtlMs,
		&r.Priority, &r.Attempts, &r.Payload, &r.DedupeKey, &r.OpenRec, &r.CreatedAtMs, &r.UpdatedAtMs}, more...)
}

// queryOne runs a query past GORM's builder and scans its first row into
// dest; false when it has none.
func queryOne(db *gorm.DB, q string, args []any, dest ...any) (bool, error) {
	rows, err := sqlstore.QueryDirect(db, q, args...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	if !rows.Next() {
		return false, rows.Err()
	}
	if err := rows.Scan(dest...); err != nil {
		return false, err
	}
	return true, rows.Close()
}

// nowSQL is the SQL server's clock in Unix milliseconds (MySQL); SQLite
// runs in this process, whose clock it is (Options.Now).
const nowSQL = `CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)`

type boardRow struct {
	Board       string
	Revision    int64
	Definition  string
	CreatedBy   string
	CreatedAtMs int64
	UpdatedAtMs int64
	NowMs       int64
}

func (r *boardRow) board() (*Board, error) {
	d, err := parseDefinition(r.Definition)
	if err != nil {
		return nil, err
	}
	return &Board{Board: r.Board, Revision: r.Revision, Definition: *d, CreatedBy: r.CreatedBy, CreatedAt: time.UnixMilli(r.CreatedAtMs).UTC(),
		UpdatedAt: time.UnixMilli(r.UpdatedAtMs).UTC()}, nil
}
