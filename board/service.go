package board

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/events"
	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/intent"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/sqlstore"
)

// Defaults of Options.
const (
	DefaultMaxRecords = 100000
	DefaultMaxBoards  = 1000
	// DefaultMaxBoardsPerToken bounds the boards one token created.
	DefaultMaxBoardsPerToken = 100
	// DefaultIdleRetention: a board with no records whose definition is
	// older than it is deleted.
	DefaultIdleRetention = 168 * time.Hour
	DefaultRetention     = 720 * time.Hour
	DefaultDedupeTTL     = 168 * time.Hour
	MaxPayloadBytes      = 256 << 10
	MaxWait              = 30 * time.Second
)

// EventKind is the kind of the bus events a record change publishes
// after commit (ID: the board).
const EventKind = "board"

// Options configure a Service.
type Options struct {
	DB *gorm.DB
	// Bus carries record changes to the other instances (waking their
	// waiting claimers); nil: this process only.
	Bus *events.Bus
	// Locker runs the reclaim sweeper as a cluster singleton; Keys builds
	// its job key. Nil Locker: an in-memory one (one process).
	Locker   locks.Locker
	Keys     locks.Keys
	Instance string
	Logger   *slog.Logger
	Metrics  *Metrics
	// MaxRecords bounds the non-terminal records of a board
	// (PROMPTD_BOARD_MAX_RECORDS, 100,000); MaxBoards the boards (1,000);
	// MaxBoardsPerToken the boards one token created
	// (PROMPTD_BOARD_MAX_PER_TOKEN, 100), so that no token uses up
	// MaxBoards for the others.
	MaxRecords        int64
	MaxBoards         int64
	MaxBoardsPerToken int64
	// IdleRetention: a board without records (none created yet, or all
	// deleted past Retention) whose definition was last written longer ago
	// is deleted by the sweeper (PROMPTD_BOARD_IDLE_RETENTION, 168h).
	IdleRetention time.Duration
	// Retention: terminal records are deleted after it
	// (PROMPTD_BOARD_RETENTION, 720h). DedupeTTL: how long a dedupe_key is
	// remembered (PROMPTD_BOARD_DEDUPE_TTL, 168h).
	Retention  time.Duration
	DedupeTTL  time.Duration
	SQLTimeout time.Duration // default 5s
	// Intents checks the intent a batch names, inside the batch's own
	// transaction; nil: batches may name none.
	Intents *intent.Service
	// BatchRetention: stored batches (their proofs) are deleted after it
	// (PROMPTD_BOARD_BATCH_RETENTION, 72h).
	BatchRetention time.Duration
	// Now is the clock of SQLite (which runs in this process); MySQL's
	// own clock is used on MySQL.
	Now func() time.Time
}

// Service manages boards and their records. Safe for concurrent use.
type Service struct {
	o     Options
	db    *gorm.DB
	audit audit.Log
	log   *slog.Logger
	m     *Metrics

	mu      sync.Mutex
	wakes   map[string]chan struct{} // board -> closed at its next change
	cleaned time.Time                // the sweeper's last retention cleanup
	defs    map[string]cachedDef     // board -> its machine as a claim last read it

	// recheck is how often a waiting claimer looks again unwoken
	// (ClaimRecheck; tests shorten it). waiting, when set, is called each
	// time a claimer starts to wait (a test seam).
	recheck time.Duration
	waiting func(board string)
}

// cachedDef is a board's machine at one revision. A claim-next trusts it
// only together with the revision its own locking read returns: a machine
// redefined since is noticed in the same statement, and that claim rolls
// back and reads the board again.
type cachedDef struct {
	rev int64
	def *Definition
}

// maxCachedDefs bounds the machines kept (a claim of a board not kept
// reads its machine first, as every claim did before the cache).
const maxCachedDefs = 4096

func (s *Service) cachedDef(board string) (cachedDef, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.defs[board]
	return d, ok
}

func (s *Service) keepDef(board string, rev int64, def *Definition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.defs == nil || len(s.defs) >= maxCachedDefs {
		s.defs = map[string]cachedDef{}
	}
	s.defs[board] = cachedDef{rev: rev, def: def}
}

// New returns a Service.
func New(o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Locker == nil {
		o.Locker = locks.NewMemory(locks.Options{Holder: o.Instance})
	}
	if o.Bus == nil {
		o.Bus = events.NewBus(events.Options{Logger: o.Logger})
	}
	if o.MaxRecords <= 0 {
		o.MaxRecords = DefaultMaxRecords
	}
	if o.MaxBoards <= 0 {
		o.MaxBoards = DefaultMaxBoards
	}
	if o.MaxBoardsPerToken <= 0 {
		o.MaxBoardsPerToken = DefaultMaxBoardsPerToken
	}
	if o.IdleRetention <= 0 {
		o.IdleRetention = DefaultIdleRetention
	}
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.DedupeTTL <= 0 {
		o.DedupeTTL = DefaultDedupeTTL
	}
	if o.SQLTimeout <= 0 {
		o.SQLTimeout = 5 * time.Second
	}
	if o.BatchRetention <= 0 {
		o.BatchRetention = DefaultBatchRetain
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Service{o: o, db: o.DB, audit: audit.Log{Instance: o.Instance}, log: o.Logger, m: o.Metrics,
		wakes: map[string]chan struct{}{}, recheck: ClaimRecheck}
	o.Bus.Subscribe(EventKind, func(_ context.Context, ev events.Event) { s.wake(ev.ID) })
	return s
}

func (s *Service) sqlCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.o.SQLTimeout)
}

func storeErr(err error) error { return sqlstore.Err(err) }

// nowExpr is the SQL that reads the clock claims are compared with.
func (s *Service) nowExpr(db *gorm.DB) (string, []any) {
	if sqlstore.Dialect(db) == sqlstore.MySQL {
		return nowSQL, nil
	}
	return "?", []any{s.o.Now().UnixMilli()}
}

// readBoard reads a board's row and the SQL clock in one round trip.
func (s *Service) readBoard(db *gorm.DB, board string, lock bool) (*boardRow, error) {
	now, args := s.nowExpr(db)
	q := `SELECT board, revision, definition, created_by, created_at_ms, updated_at_ms, ` + now + ` AS now_ms FROM boards WHERE board = ?`
	if lock {
		q += sqlstore.ForUpdate(db)
	}
	var rows []boardRow
	if err := db.Raw(q, append(args, board)...).Scan(&rows).Error; err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, ErrBoardNotFound
	}
	return &rows[0], nil
}

// sqlNow reads the SQL clock alone.
func (s *Service) sqlNow(db *gorm.DB) (int64, error) {
	if sqlstore.Dialect(db) != sqlstore.MySQL {
		return s.o.Now().UnixMilli(), nil
	}
	var ms int64
	err := db.Raw(`SELECT ` + nowSQL).Scan(&ms).Error
	return ms, err
}

// wake wakes the claimers of this process waiting on board.
func (s *Service) wake(board string) {
	s.mu.Lock()
	if ch, ok := s.wakes[board]; ok {
		close(ch)
		delete(s.wakes, board)
	}
	s.mu.Unlock()
}

// wakeup is closed at board's next change (here or on another instance).
func (s *Service) wakeup(board string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.wakes[board]
	if !ok {
		ch = make(chan struct{})
		s.wakes[board] = ch
	}
	return ch
}

// publish announces a committed change of board's records.
func (s *Service) publish(ctx context.Context, board string, rev int64) {
	s.o.Bus.Publish(context.WithoutCancel(ctx), events.Event{Kind: EventKind, ID: board, Revision: rev})
}

// appendEvent writes a record change's audit event: never the payload.
func (s *Service) appendEvent(ctx context.Context, tx *gorm.DB, action string, r *recordRow) error {
	return s.audit.Append(ctx, tx, audit.Event{Action: action, Board: r.Board, Resource: "boards/" + r.Board + "/records/" + r.ID},
		map[string]any{"board": r.Board, "id": r.ID, "state": r.State, "revision": r.Revision, "fence": r.Fence, "owner": r.Owner})
}

// GetBoard returns a board.
func (s *Service) GetBoard(ctx context.Context, board string) (*Board, error) {
	if err := checkID("board", board); err != nil {
		return nil, err
	}
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	row, err := s.readBoard(s.db.WithContext(ctx), board, false)
	if err != nil {
		return nil, storeErr(err)
	}
	return row.board()
}

// Define creates (expected revision 0) or replaces a board's definition
// on its revision. Removing states that records are in: *InUse.
func (s *Service) Define(ctx context.Context, board string, def Definition, expected int64) (*Board, bool, error) {
	if err := checkID("board", board); err != nil {
		return nil, false, err
	}
	if expected < 0 {
		return nil, false, invalidf("expected_revision", "expected_revision must be >= 0")
	}
	if err := def.Validate(); err != nil {
		return nil, false, err
	}
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	type out struct {
		b       *Board
		created bool
	}
	res, err := sqlstore.Transact(ctx, s.db, func(tx *gorm.DB) (out, error) {
		row, err := s.readBoard(tx, board, true)
		switch {
		case err == ErrBoardNotFound:
			if expected != 0 {
				return out{}, &RevisionConflict{Expected: expected, Current: 0}
			}
			now, err := s.sqlNow(tx)
			if err != nil {
				return out{}, err
			}
			by := audit.Actor(ctx)
			if err := s.insertBoard(tx, board, &def, now, by); err != nil {
				return out{}, err
			}
			return out{b: &Board{Board: board, Revision: 1, Definition: def, CreatedBy: by, CreatedAt: time.UnixMilli(now).UTC(),
				UpdatedAt: time.UnixMilli(now).UTC()}, created: true}, s.boardEvent(ctx, tx, board, 1)
		case err != nil:
			return out{}, err
		case row.Revision != expected:
			return out{}, &RevisionConflict{Expected: expected, Current: row.Revision}
		}
		var used []string
		if err := tx.Raw(`SELECT DISTINCT state FROM board_records WHERE board = ?`, board).Scan(&used).Error; err != nil {
			return out{}, err
		}
		var gone []string
		for _, st := range used {
			if !containsState(def.States, st) {
				gone = append(gone, st)
			}
		}
		if len(gone) > 0 {
			return out{}, &InUse{States: gone}
		}
		if r := tx.Exec(`UPDATE boards SET definition = ?, revision = revision + 1, updated_at_ms = ? WHERE board = ? AND revision = ?`,
			def.marshal(), row.NowMs, board, expected); r.Error != nil || r.RowsAffected != 1 {
			if r.Error != nil {
				return out{}, r.Error
			}
			return out{}, &RevisionConflict{Expected: expected, Current: expected + 1}
		}
		return out{b: &Board{Board: board, Revision: expected + 1, Definition: def, CreatedBy: row.CreatedBy, CreatedAt: time.UnixMilli(row.CreatedAtMs).UTC(),
			UpdatedAt: time.UnixMilli(row.NowMs).UTC()}}, s.boardEvent(ctx, tx, board, expected+1)
	})
	if err != nil {
		return nil, false, storeErr(err)
	}
	s.publish(ctx, board, 0) // another machine may make waiting claims' records claimable
	return res.b, res.created, nil
}

func (s *Service) boardEvent(ctx context.Context, tx *gorm.DB, board string, rev int64) error {
	return s.audit.Append(ctx, tx, audit.Event{Action: "board.defined", Board: board, Resource: "boards/" + board},
		map[string]any{"board": board, "revision": rev})
}

// insertBoard inserts a board at revision 1 created by by, within the
// limits: MaxBoards in all, MaxBoardsPerToken of one creator. The
// creator's count is incremented first, which locks its row to the
// commit: creates of one token take turns, so its count is exact, and a
// create over either limit rolls back with its increment. Both are counts
// that only a deletion (DeleteBoard, or an empty board's expiry) lowers,
// so they are *promptstore.LimitError, not a quota to retry.
func (s *Service) insertBoard(tx *gorm.DB, board string, def *Definition, now int64, by string) error {
	up := `INSERT INTO board_creators (created_by, boards) VALUES (?, 1) ON DUPLICATE KEY UPDATE boards = boards + 1`
	if sqlstore.Dialect(tx) != sqlstore.MySQL {
		up = `INSERT INTO board_creators (created_by, boards) VALUES (?, 1) ON CONFLICT (created_by) DO UPDATE SET boards = boards + 1`
	}
	if err := tx.Exec(up, by).Error; err != nil {
		return err
	}
	var mine, all int64
	if err := tx.Raw(`SELECT boards FROM board_creators WHERE created_by = ?`, by).Scan(&mine).Error; err != nil {
		return err
	}
	if mine > s.o.MaxBoardsPerToken {
		return limitError(LimitBoardsPerToken, s.o.MaxBoardsPerToken)
	}
	if err := tx.Raw(`SELECT COUNT(*) FROM boards`).Scan(&all).Error; err != nil {
		return err
	}
	if all >= s.o.MaxBoards {
		return limitError(LimitBoards, s.o.MaxBoards)
	}
	return tx.Exec(`INSERT INTO boards (board, revision, definition, created_by, created_at_ms, updated_at_ms) VALUES (?, 1, ?, ?, ?, ?)`,
		board, def.marshal(), by, now, now).Error
}

func containsState(states []string, s string) bool {
	for _, x := range states {
		if x == s {
			return true
		}
	}
	return false
}

func checkID(field, v string) error { return ident.Check(field, v) }

// checkOpaque checks an opaque value (holder, dedupe_key): 1..256 bytes
// of printable UTF-8.
func checkOpaque(field, v string) error {
	if v == "" || len(v) > 256 {
		return invalidID(field, "%s must be 1..256 bytes", field)
	}
	if !utf8.ValidString(v) || strings.IndexFunc(v, unicode.IsControl) >= 0 {
		return invalidID(field, "%s must be printable UTF-8, without control characters", field)
	}
	return nil
}

func validPayload(p json.RawMessage) error {
	if len(p) == 0 {
		return invalidf("payload", "payload is required (any JSON, null included)")
	}
	if len(p) > MaxPayloadBytes {
		return invalidf("payload", "payload is at most %d bytes", MaxPayloadBytes)
	}
	if !json.Valid(p) {
		return invalidf("payload", "payload must be JSON")
	}
	return nil
}
