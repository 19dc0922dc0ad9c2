package intent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/sqlstore"
	"github.com/promptd/promptd/wire"
)

// Modes and states.
const (
	Exclusive = "exclusive"
	Advisory  = "advisory"

	StateActive   = "active"
	StateReleased = "released"
	StateExpired  = "expired"
)

// TTL bounds, and the limits of Options' defaults.
const (
	MinTTL              = time.Second
	MaxTTL              = time.Hour
	DefaultTTL          = 30 * time.Second
	MaxDescription      = 4096
	DefaultMaxPerSpace  = 1000
	DefaultRetention    = 24 * time.Hour
	registerAttempts    = 3
	sweepBatch          = 500
	defaultSQLTimeout   = 5 * time.Second
	nowSQL              = `CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)`
	intentCols          = `id, holder, mode, scope, description, fence, state, ttl_ms, expires_at_ms, ended_at_ms, created_by, created_at_ms`
	qualifiedIntentCols = `i.id, i.holder, i.mode, i.scope, i.description, i.fence, i.state, i.ttl_ms, i.expires_at_ms, i.ended_at_ms, i.created_by, i.created_at_ms`
)

// Options configure a Service.
type Options struct {
	DB       *gorm.DB
	Instance string
	Logger   *slog.Logger
	// MaxPerSpace bounds the live intents sharing one space (all agent
	// scopes are one space; each board is one): a registration past it is
	// a LimitError (PROMPTD_INTENT_MAX_PER_SPACE, 1,000).
	MaxPerSpace int
	// Retention: ended intents are deleted after it (24h).
	Retention  time.Duration
	SQLTimeout time.Duration
	// Now is SQLite's clock (it runs in this process); MySQL's own clock
	// decides on MySQL.
	Now func() time.Time
}

// Service registers, renews, releases and checks intents. Safe for
// concurrent use; any number of instances may share one database.
type Service struct {
	o     Options
	db    *gorm.DB
	audit audit.Log
}

// New returns a Service.
func New(o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxPerSpace <= 0 {
		o.MaxPerSpace = DefaultMaxPerSpace
	}
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.SQLTimeout <= 0 {
		o.SQLTimeout = defaultSQLTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Service{o: o, db: o.DB, audit: audit.Log{Instance: o.Instance}}
}

// Intent is a registered intent.
type Intent struct {
	ID          string
	Holder      string
	Mode        string
	Scope       Scope
	Description string
	Fence       int64
	State       string // active, released, expired (by the SQL clock, swept or not)
	TTL         time.Duration
	ExpiresAt   time.Time
	EndedAt     *time.Time
	CreatedBy   string
	CreatedAt   time.Time
}

// Live reports whether i is active and unexpired at now.
func (i *Intent) Live(now time.Time) bool { return i.State == StateActive && i.ExpiresAt.After(now) }

// Wire is i as answers show it.
func (i *Intent) Wire() wire.Intent {
	out := wire.Intent{ID: i.ID, Holder: i.Holder, Mode: i.Mode, Scope: i.Scope.Wire(), Description: i.Description, Fence: i.Fence,
		State: i.State, TTLMs: i.TTL.Milliseconds(), ExpiresAt: wire.At(i.ExpiresAt), CreatedBy: i.CreatedBy, CreatedAt: wire.At(i.CreatedAt)}
	if i.EndedAt != nil {
		t := wire.At(*i.EndedAt)
		out.EndedAt = &t
	}
	return out
}

// Wire is s as answers show it.
func (s Scope) Wire() wire.IntentScope {
	out := wire.IntentScope{Agents: s.Agents, Envs: s.Envs, Boards: s.Boards}
	for _, r := range s.Records {
		out.Records = append(out.Records, wire.IntentRecordScope{Board: r.Board, IDs: r.IDs, Prefixes: r.Prefixes})
	}
	return out
}

// ScopeOf is the Scope of a request's wire form.
func ScopeOf(w wire.IntentScope) Scope {
	out := Scope{Agents: w.Agents, Envs: w.Envs, Boards: w.Boards}
	for _, r := range w.Records {
		out.Records = append(out.Records, RecordScope{Board: r.Board, IDs: r.IDs, Prefixes: r.Prefixes})
	}
	return out
}

// Input is an intent to register.
type Input struct {
	Holder      string
	Mode        string // exclusive (default) or advisory
	Scope       Scope
	TTL         time.Duration // 0: DefaultTTL
	Description string
}

// Registered is a registration's answer: the intent, and every live
// intent whose scope overlaps it (advisory ones, for an exclusive
// registration; any, for an advisory one).
type Registered struct {
	Intent   *Intent
	Overlaps []*Intent
}

type row struct {
	ID          string
	Holder      string
	Mode        string
	Scope       string
	Description string
	Fence       int64
	State       string
	TtlMs       int64
	ExpiresAtMs int64
	EndedAtMs   *int64
	CreatedBy   string
	CreatedAtMs int64
	NowMs       int64
}

func (r *row) intent() (*Intent, error) {
	var sc Scope
	if err := json.Unmarshal([]byte(r.Scope), &sc); err != nil {
		return nil, err
	}
	out := &Intent{ID: r.ID, Holder: r.Holder, Mode: r.Mode, Scope: sc, Description: r.Description, Fence: r.Fence, State: r.State,
		TTL: time.Duration(r.TtlMs) * time.Millisecond, ExpiresAt: time.UnixMilli(r.ExpiresAtMs).UTC(), CreatedBy: r.CreatedBy,
		CreatedAt: time.UnixMilli(r.CreatedAtMs).UTC()}
	if r.EndedAtMs != nil {
		t := time.UnixMilli(*r.EndedAtMs).UTC()
		out.EndedAt = &t
	}
	if r.State == StateActive && r.NowMs != 0 && r.ExpiresAtMs <= r.NowMs {
		out.State, out.EndedAt = StateExpired, &out.ExpiresAt // expired, not swept yet
	}
	return out, nil
}

func (s *Service) sqlCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.o.SQLTimeout)
}

func (s *Service) nowExpr(db *gorm.DB) (string, []any) {
	if sqlstore.Dialect(db) == sqlstore.MySQL {
		return nowSQL, nil
	}
	return "?", []any{s.o.Now().UnixMilli()}
}

func (s *Service) sqlNow(db *gorm.DB) (int64, error) {
	now, args := s.nowExpr(db)
	var ms int64
	err := db.Raw(`SELECT `+now, args...).Scan(&ms).Error
	return ms, err
}

func (in *Input) check() (Scope, error) {
	if err := ident.CheckOpaque("holder", in.Holder); err != nil {
		return Scope{}, err
	}
	switch in.Mode {
	case "":
		in.Mode = Exclusive
	case Exclusive, Advisory:
	default:
		return Scope{}, invalid("mode", `mode is "exclusive" or "advisory"`)
	}
	if in.TTL == 0 {
		in.TTL = DefaultTTL
	}
	if err := checkTTL("ttl_ms", in.TTL); err != nil {
		return Scope{}, err
	}
	if len(in.Description) > MaxDescription {
		return Scope{}, invalid("description", "a description is at most %d bytes", MaxDescription)
	}
	sc, err := in.Scope.Normalize("scope")
	if err != nil {
		return Scope{}, err
	}
	if sc.Empty() {
		return Scope{}, invalid("scope", "a scope names agents, envs, boards or records")
	}
	return sc, nil
}

func checkTTL(field string, ttl time.Duration) error {
	if ttl < MinTTL || ttl > MaxTTL || ttl%time.Millisecond != 0 {
		return invalid(field, "ttl_ms is %d..%d", MinTTL.Milliseconds(), MaxTTL.Milliseconds())
	}
	return nil
}

// errRetry: two first registrations of one space raced; try again.
var errRetry = errors.New("intent: retry")

// Register registers in. In one transaction it takes (creating them when
// new) and locks the rows of the scope's spaces in order, reads the live
// intents of those spaces under lock, decides the overlap from them, and
// inserts the intent with a fence above every fence the spaces gave out.
// An exclusive registration that overlaps a live intent, or any that
// overlaps a live exclusive one, is *Conflict and writes nothing.
func (s *Service) Register(ctx context.Context, in Input, then ...sqlstore.Then[*Registered]) (*Registered, error) {
	sc, err := in.check()
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	if err := s.ensureSpaces(ctx, sc.spaces()); err != nil {
		return nil, sqlstore.Err(err)
	}
	var out *Registered
	for attempt := 1; ; attempt++ {
		out, err = sqlstore.Transact(ctx, s.db, func(tx *gorm.DB) (*Registered, error) { return s.register(ctx, tx, in, sc) }, then...)
		if err == nil || attempt == registerAttempts || !(errors.Is(err, errRetry) || sqlstore.IsDuplicate(err) || retryable(err)) {
			break
		}
	}
	return out, sqlstore.Err(err)
}

// retryable: a deadlock (or lock wait timeout) between first
// registrations of new spaces.
func retryable(err error) bool { return sqlstore.IsUnavailable(err) }

func (s *Service) register(ctx context.Context, tx *gorm.DB, in Input, sc Scope) (*Registered, error) {
	spaces := sc.spaces()
	var seq int64
	for _, sp := range spaces {
		n, err := s.lockSpace(tx, sp)
		if err != nil {
			return nil, err
		}
		seq = max(seq, n)
	}
	now, err := s.sqlNow(tx)
	if err != nil {
		return nil, err
	}
	live, perSpace, err := s.liveIn(tx, spaces, now) // after the space locks: every registration of these spaces before this one is committed and read
	if err != nil {
		return nil, err
	}
	for sp, n := range perSpace {
		if n >= s.o.MaxPerSpace {
			return nil, &LimitError{Name: LimitLivePerSpace, Limit: int64(s.o.MaxPerSpace), Detail: "the " + sp +
				" space holds %d live intents, its limit; release intents no longer needed"}
		}
	}
	var overlaps, conflicts []*Intent
	for _, o := range live {
		if !Overlaps(sc, o.Scope) {
			continue
		}
		overlaps = append(overlaps, o)
		if in.Mode == Exclusive || o.Mode == Exclusive {
			conflicts = append(conflicts, o)
		}
	}
	if len(conflicts) > 0 {
		return nil, &Conflict{Intents: conflicts}
	}
	fence := seq + 1
	sqlIn, args := inList(spaces)
	if err := tx.Exec(`UPDATE intent_spaces SET seq = ? WHERE space IN `+sqlIn, append([]any{fence}, args...)...).Error; err != nil {
		return nil, err
	}
	scope, err := json.Marshal(sc)
	if err != nil {
		return nil, err
	}
	it := &Intent{ID: newID(), Holder: in.Holder, Mode: in.Mode, Scope: sc, Description: in.Description, Fence: fence, State: StateActive,
		TTL: in.TTL, ExpiresAt: time.UnixMilli(now + in.TTL.Milliseconds()).UTC(), CreatedBy: audit.Actor(ctx), CreatedAt: time.UnixMilli(now).UTC()}
	if err := tx.Exec(`INSERT INTO intents (`+intentCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)`, it.ID, it.Holder, it.Mode,
		string(scope), it.Description, fence, StateActive, in.TTL.Milliseconds(), now+in.TTL.Milliseconds(), it.CreatedBy, now).Error; err != nil {
		return nil, err
	}
	q, kargs := `INSERT INTO intent_keys (space, intent_id) VALUES `, []any{}
	for i, sp := range spaces {
		if i > 0 {
			q += ", "
		}
		q += "(?, ?)"
		kargs = append(kargs, sp, it.ID)
	}
	if err := tx.Exec(q, kargs...).Error; err != nil {
		return nil, err
	}
	if err := s.event(ctx, tx, "intent.registered", it, map[string]any{"overlaps": ids(overlaps)}); err != nil {
		return nil, err
	}
	return &Registered{Intent: it, Overlaps: overlaps}, nil
}

// ensureSpaces creates the rows of new spaces, each in a statement of
// its own, so that the registration's transaction locks existing rows
// only (two first registrations of one space locking a gap, then both
// inserting, deadlock). Space rows are never deleted.
func (s *Service) ensureSpaces(ctx context.Context, spaces []string) error {
	db := s.db.WithContext(ctx)
	sqlIn, args := inList(spaces)
	var have []string
	if err := db.Raw(`SELECT space FROM intent_spaces WHERE space IN `+sqlIn, args...).Scan(&have).Error; err != nil {
		return err
	}
	for _, sp := range spaces {
		if slices.Contains(have, sp) {
			continue
		}
		if err := db.Exec(`INSERT INTO intent_spaces (space, seq) VALUES (?, 0)`, sp).Error; err != nil && !sqlstore.IsDuplicate(err) {
			return err
		}
	}
	return nil
}

// lockSpace locks sp's row and returns its seq.
func (s *Service) lockSpace(tx *gorm.DB, sp string) (int64, error) {
	var seqs []int64
	if err := tx.Raw(`SELECT seq FROM intent_spaces WHERE space = ?`+sqlstore.ForUpdate(tx), sp).Scan(&seqs).Error; err != nil {
		return 0, err
	}
	if len(seqs) == 0 {
		return 0, errRetry
	}
	return seqs[0], nil
}

// liveIn reads the live intents of spaces, and how many each space holds.
func (s *Service) liveIn(tx *gorm.DB, spaces []string, now int64) ([]*Intent, map[string]int, error) {
	sqlIn, args := inList(spaces)
	q := `SELECT k.space AS space, ` + qualifiedIntentCols + ` FROM intent_keys k JOIN intents i ON i.id = k.intent_id
		WHERE k.space IN ` + sqlIn + ` AND i.state = ? AND i.expires_at_ms > ? ORDER BY i.id`
	var rows []struct {
		Space string
		R     row `gorm:"embedded"`
	}
	if err := tx.Raw(q, append(args, StateActive, now)...).Scan(&rows).Error; err != nil {
		return nil, nil, err
	}
	perSpace := map[string]int{}
	var out []*Intent
	for i := range rows {
		perSpace[rows[i].Space]++
		if len(out) > 0 && out[len(out)-1].ID == rows[i].R.ID {
			continue
		}
		it, err := rows[i].R.intent()
		if err != nil {
			return nil, nil, err
		}
		out = append(out, it)
	}
	return out, perSpace, nil
}

func inList(vals []string) (string, []any) {
	args := make([]any, len(vals))
	for i, v := range vals {
		args[i] = v
	}
	return "(" + strings.TrimSuffix(strings.Repeat("?, ", len(vals)), ", ") + ")", args
}

func ids(in []*Intent) []string {
	out := make([]string, len(in))
	for i, it := range in {
		out[i] = it.ID
	}
	return out
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "int_" + hex.EncodeToString(b[:])
}

// event appends an intent event; it names an agent or a board when the
// scope names exactly one (so that scoped feed readers see it).
func (s *Service) event(ctx context.Context, tx *gorm.DB, action string, it *Intent, extra map[string]any) error {
	ev := audit.Event{Action: action, Resource: it.ID}
	if len(it.Scope.Agents) == 1 && !strings.HasSuffix(it.Scope.Agents[0], "*") {
		ev.Agent = it.Scope.Agents[0]
	}
	if len(it.Scope.Envs) == 1 {
		ev.Env = it.Scope.Envs[0]
	}
	if bs := it.Scope.spaces(); ev.Agent == "" && len(bs) == 1 && strings.HasPrefix(bs[0], "board:") {
		ev.Board = strings.TrimPrefix(bs[0], "board:")
	}
	details := map[string]any{"holder": it.Holder, "mode": it.Mode, "scope": it.Scope.Wire(), "fence": it.Fence,
		"expires_at": wire.At(it.ExpiresAt)}
	for k, v := range extra {
		details[k] = v
	}
	return s.audit.Append(ctx, tx, ev, details)
}

// read reads one intent (locked with lock on MySQL) and the SQL clock.
func (s *Service) read(tx *gorm.DB, id string, lock bool) (*row, error) {
	now, args := s.nowExpr(tx)
	q := `SELECT ` + intentCols + `, ` + now + ` AS now_ms FROM intents WHERE id = ?`
	if lock {
		q += sqlstore.ForUpdate(tx)
	}
	var rows []row
	if err := tx.Raw(q, append(args, id)...).Scan(&rows).Error; err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, ErrNotFound
	}
	return &rows[0], nil
}

// Get returns one intent; an active one past its expiry (by the SQL
// clock) reads as expired.
func (s *Service) Get(ctx context.Context, id string) (*Intent, error) {
	if err := ident.Check("id", id); err != nil {
		return nil, err
	}
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	r, err := s.read(s.db.WithContext(ctx), id, false)
	if err != nil {
		return nil, sqlstore.Err(err)
	}
	return r.intent()
}

// live checks that r is the live intent of fence at its now.
func live(r *row, fence int64) error {
	it, err := r.intent()
	if err != nil {
		return err
	}
	if it.State != StateActive {
		return &Ended{ID: r.ID, State: it.State, Fence: fence, Current: r.Fence, EndedAt: *it.EndedAt}
	}
	if fence != r.Fence {
		return &Ended{ID: r.ID, State: StateActive, Fence: fence, Current: r.Fence}
	}
	return nil
}

// Renew extends a live intent's expiry to ttl (0: its TTL) from now by the
// SQL clock. An intent that ended, or another fence, is *Ended.
func (s *Service) Renew(ctx context.Context, id string, fence int64, ttl time.Duration) (*Intent, error) {
	if err := ident.Check("id", id); err != nil {
		return nil, err
	}
	if fence <= 0 {
		return nil, invalid("fence", "fence is required: the intent's fence")
	}
	if ttl != 0 {
		if err := checkTTL("ttl_ms", ttl); err != nil {
			return nil, err
		}
	}
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	out, err := sqlstore.Transact(ctx, s.db, func(tx *gorm.DB) (*Intent, error) {
		r, err := s.read(tx, id, true)
		if err != nil {
			return nil, err
		}
		if err := live(r, fence); err != nil {
			return nil, err
		}
		if ttl == 0 {
			ttl = time.Duration(r.TtlMs) * time.Millisecond
		}
		r.ExpiresAtMs, r.TtlMs = r.NowMs+ttl.Milliseconds(), ttl.Milliseconds()
		if err := tx.Exec(`UPDATE intents SET expires_at_ms = ?, ttl_ms = ? WHERE id = ?`, r.ExpiresAtMs, r.TtlMs, id).Error; err != nil {
			return nil, err
		}
		return r.intent()
	})
	return out, sqlstore.Err(err)
}

// Release ends a live intent (its fence given). Releasing one that has
// ended already answers it as it is; another fence is *Ended.
func (s *Service) Release(ctx context.Context, id string, fence int64) (*Intent, error) {
	if err := ident.Check("id", id); err != nil {
		return nil, err
	}
	if fence <= 0 {
		return nil, invalid("fence", "fence is required: the intent's fence")
	}
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	out, err := sqlstore.Transact(ctx, s.db, func(tx *gorm.DB) (*Intent, error) {
		r, err := s.read(tx, id, true)
		if err != nil {
			return nil, err
		}
		if fence != r.Fence {
			return nil, &Ended{ID: r.ID, State: r.State, Fence: fence, Current: r.Fence}
		}
		it, err := r.intent()
		if err != nil || it.State != StateActive {
			return it, err
		}
		return it, s.end(ctx, tx, it, StateReleased, r.NowMs)
	})
	return out, sqlstore.Err(err)
}

// end marks it ended at now (released or expired), drops its space keys
// and writes its event.
func (s *Service) end(ctx context.Context, tx *gorm.DB, it *Intent, state string, now int64) error {
	res := tx.Exec(`UPDATE intents SET state = ?, ended_at_ms = ? WHERE id = ? AND state = ?`, state, now, it.ID, StateActive)
	if res.Error != nil || res.RowsAffected == 0 {
		return res.Error
	}
	if err := tx.Exec(`DELETE FROM intent_keys WHERE intent_id = ?`, it.ID).Error; err != nil {
		return err
	}
	t := time.UnixMilli(now).UTC()
	it.State, it.EndedAt = state, &t
	return s.event(ctx, tx, "intent."+state, it, nil)
}

// Query selects live intents: those overlapping Scope (every live one
// when it is empty), of Holder when set, in id order from after Cursor.
type Query struct {
	Scope  Scope
	Holder string
	Limit  int
	Cursor string
}

// List returns the live intents q selects and the cursor of the next page
// ("" at the end).
func (s *Service) List(ctx context.Context, q Query) ([]*Intent, string, error) {
	if q.Limit <= 0 {
		return nil, "", invalid("limit", "limit must be positive")
	}
	sc, err := q.Scope.Normalize("scope")
	if err != nil {
		return nil, "", err
	}
	if q.Cursor != "" {
		if err := ident.Check("cursor", q.Cursor); err != nil {
			return nil, "", invalid("cursor", "cursor is not one this list returned")
		}
	}
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	db := s.db.WithContext(ctx)
	now, err := s.sqlNow(db)
	if err != nil {
		return nil, "", sqlstore.Err(err)
	}
	var live []*Intent
	if sc.Empty() {
		qs := `SELECT ` + intentCols + ` FROM intents WHERE state = ? AND expires_at_ms > ? AND id > ?`
		args := []any{StateActive, now, q.Cursor}
		if q.Holder != "" {
			qs += ` AND holder = ?`
			args = append(args, q.Holder)
		}
		var rows []row
		if err := db.Raw(qs+` ORDER BY id LIMIT ?`, append(args, q.Limit+1)...).Scan(&rows).Error; err != nil {
			return nil, "", sqlstore.Err(err)
		}
		for i := range rows {
			it, err := rows[i].intent()
			if err != nil {
				return nil, "", err
			}
			live = append(live, it)
		}
	} else {
		all, _, err := s.liveIn(db, sc.spaces(), now)
		if err != nil {
			return nil, "", sqlstore.Err(err)
		}
		for _, it := range all {
			if it.ID > q.Cursor && (q.Holder == "" || it.Holder == q.Holder) && Overlaps(sc, it.Scope) {
				live = append(live, it)
			}
		}
	}
	next := ""
	if len(live) > q.Limit {
		live = live[:q.Limit]
		next = live[len(live)-1].ID
	}
	return live, next, nil
}

// Sweep ends the intents that expired by the SQL clock (intent.expired)
// and deletes those ended longer ago than the retention. It returns how
// many it expired.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	db := s.db.WithContext(ctx)
	now, err := s.sqlNow(db)
	if err != nil {
		return 0, sqlstore.Err(err)
	}
	var due []string
	if err := db.Raw(`SELECT id FROM intents WHERE state = ? AND expires_at_ms <= ? ORDER BY expires_at_ms LIMIT ?`,
		StateActive, now, sweepBatch).Scan(&due).Error; err != nil {
		return 0, sqlstore.Err(err)
	}
	n := 0
	for _, id := range due {
		ended, err := sqlstore.Transact(ctx, s.db, func(tx *gorm.DB) (bool, error) {
			r, err := s.read(tx, id, true)
			if err != nil || r.State != StateActive || r.ExpiresAtMs > r.NowMs {
				return false, err
			}
			it, err := r.intent()
			if err != nil {
				return false, err
			}
			it.State = StateActive
			return true, s.end(ctx, tx, it, StateExpired, r.ExpiresAtMs)
		})
		if err != nil && !errors.Is(err, ErrNotFound) {
			return n, sqlstore.Err(err)
		}
		if ended {
			n++
		}
	}
	err = db.Exec(`DELETE FROM intents WHERE state <> ? AND ended_at_ms < ?`, StateActive, now-s.o.Retention.Milliseconds()).Error
	return n, sqlstore.Err(err)
}

// SweepJob names the sweeper's job lease (one instance sweeps at a time).
const SweepJob = "intent-sweep"

// Ref names the intent a write is made under, and its fence.
type Ref struct {
	ID    string
	Fence int64
}

// Check is the guard of a write made under ref, inside the write's own
// transaction tx: it locks the intent's row (so a release waits for the
// write, or the write sees the release), and answers *Ended when the
// intent was released or expired by the SQL clock, or ref's fence is not
// its fence, and *OutsideScope (naming field) when a target is outside
// its scope. ErrNotFound for an unknown intent.
func (s *Service) Check(tx *gorm.DB, ref Ref, field string, targets ...Target) error {
	if err := ident.Check(field+".id", ref.ID); err != nil {
		return err
	}
	if ref.Fence <= 0 {
		return invalid(field+".fence", "fence is required: the intent's fence")
	}
	r, err := s.read(tx, ref.ID, true)
	if err != nil {
		return err
	}
	if err := live(r, ref.Fence); err != nil {
		return err
	}
	var sc Scope
	if err := json.Unmarshal([]byte(r.Scope), &sc); err != nil {
		return err
	}
	for _, t := range targets {
		if !sc.Covers(t) {
			return &OutsideScope{ID: ref.ID, Field: field, Target: t}
		}
	}
	return nil
}
