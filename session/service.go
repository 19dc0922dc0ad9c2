package session

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/events"
	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/prompt"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/sqlstore"
)

// Options configure a Service.
type Options struct {
	Store *promptstore.Store
	// Resolver pins new sessions (release arm -> env pointer); default the store.
	Resolver promptstore.Resolver
	// DB is the store's database (sessions pin versions of its agents).
	DB *gorm.DB
	// Bus carries session events (re-pins, closes) to the other
	// instances; nil: this process only.
	Bus *events.Bus
	// Locker holds session leases; Keys builds their keys. Nil Locker: an
	// in-memory one (one process).
	Locker locks.Locker
	Keys   locks.Keys
	// Instance names this process in audit events.
	Instance string
	// Events receives lease events and rejected writes (asynchronous).
	Events     *audit.Batcher
	IdleTTL    time.Duration // default idle TTL (PROMPTD_SESSION_IDLE_TTL), 24h
	Retention  time.Duration // closed sessions are deleted after this, 720h
	SQLTimeout time.Duration // default 5s
	Logger     *slog.Logger
	Now        func() time.Time

	// Per-session limits (limits.go): turns (PROMPTD_SESSION_MAX_TURNS,
	// default 10,000), bytes of turns and state entries
	// (PROMPTD_SESSION_MAX_BYTES, 32 MiB), state entries
	// (PROMPTD_SESSION_MAX_STATE_KEYS, 1,000).
	MaxSessionTurns int64
	MaxSessionBytes int64
	MaxStateKeys    int64
	// PageBytes bounds the turns of one Get page (PROMPTD_SESSION_PAGE_BYTES,
	// default 4 MiB); a page holds at least one turn.
	PageBytes int64
}

// EventKind is the kind of the events a session change publishes.
const EventKind = "session"

// Service manages sessions.
type Service struct {
	o     Options
	store *promptstore.Store
	db    *gorm.DB
	audit audit.Log
	log   *slog.Logger
	pins  *pinCache
	// fenced: sessions known to have had a lease (guard.go).
	fenced *fencedSet
}

// New returns a Service.
func New(o Options) *Service {
	if o.Resolver == nil {
		o.Resolver = o.Store
	}
	if o.Locker == nil {
		o.Locker = locks.NewMemory(locks.Options{Holder: o.Instance})
	}
	if o.Bus == nil {
		o.Bus = events.NewBus(events.Options{Logger: o.Logger})
	}
	if o.IdleTTL <= 0 {
		o.IdleTTL = 24 * time.Hour
	}
	if o.Retention <= 0 {
		o.Retention = 720 * time.Hour
	}
	if o.SQLTimeout <= 0 {
		o.SQLTimeout = 5 * time.Second
	}
	if o.MaxSessionTurns <= 0 {
		o.MaxSessionTurns = DefaultMaxSessionTurns
	}
	if o.MaxSessionBytes <= 0 {
		o.MaxSessionBytes = DefaultMaxSessionBytes
	}
	if o.MaxStateKeys <= 0 {
		o.MaxStateKeys = DefaultMaxStateKeys
	}
	if o.PageBytes <= 0 {
		o.PageBytes = DefaultPageBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Service{o: o, store: o.Store, db: o.DB, audit: audit.Log{Instance: o.Instance, Now: o.Now}, log: o.Logger, pins: newPinCache(100000),
		fenced: newFencedSet(100000)}
	o.Bus.Subscribe(EventKind, func(_ context.Context, ev events.Event) { s.pins.drop(ev.ID) })
	return s
}

func (s *Service) sqlCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.o.SQLTimeout)
}

func storeErr(err error) error { return promptstore.StoreErr(err) }

func validID(field, v string) error { return promptstore.CheckID(field, v) }

// KindLeaseLock is the lock kind of session leases (locks.Keys.Key).
const KindLeaseLock = "session"

// LeaseKey is the lock key of session id's lease.
func LeaseKey(k locks.Keys, id string) (string, error) {
	if err := ident.Validate("session_id", id); err != nil {
		return "", err
	}
	return k.Key(KindLeaseLock, id)
}

func (s *Service) key(id string) string {
	k, _ := LeaseKey(s.o.Keys, id)
	return k
}

// Limits.
const (
	MaxMetadata  = 64 << 10
	MaxIdleTTL   = 30 * 24 * time.Hour
	MinIdleTTL   = time.Second
	MaxTurns     = 100
	MaxTurnBytes = 256 << 10
	MaxValue     = 256 << 10
)

// CreateInput creates a session.
type CreateInput struct {
	SessionID string // empty: generated
	Agent     string
	Env       string
	UserID    string
	Metadata  json.RawMessage
	IdleTTL   time.Duration // 0: the default
}

// Create creates a session pinned to the version resolved for its caller
// now. Creating an existing id with the same agent, env and user returns
// it (created false); otherwise, or if it was closed, ErrExists.
func (s *Service) Create(ctx context.Context, in CreateInput, then ...sqlstore.Then[*Session]) (sess *Session, created bool, err error) {
	if in.SessionID == "" {
		in.SessionID = "s_" + locks.NewToken()[:16]
	}
	for f, v := range map[string]string{"session_id": in.SessionID, "agent": in.Agent, "env": in.Env} {
		if err := validID(f, v); err != nil {
			return nil, false, err
		}
	}
	if in.UserID != "" {
		if err := promptstore.ValidateOpaque("user_id", in.UserID); err != nil {
			return nil, false, err
		}
	}
	meta := "{}"
	if len(in.Metadata) > 0 && string(in.Metadata) != "null" {
		if len(in.Metadata) > MaxMetadata || in.Metadata[0] != '{' || !json.Valid(in.Metadata) {
			return nil, false, invalidf("metadata", "metadata must be a JSON object up to %d bytes", MaxMetadata)
		}
		meta = string(in.Metadata)
	}
	ttl := in.IdleTTL
	if ttl == 0 {
		ttl = s.o.IdleTTL
	}
	if ttl < MinIdleTTL || ttl > MaxIdleTTL {
		return nil, false, invalidf("idle_ttl_ms", "idle_ttl_ms must be %d..%d", MinIdleTTL.Milliseconds(), MaxIdleTTL.Milliseconds())
	}
	if existing, err := s.existing(ctx, in); existing != nil || err != nil {
		return existing, false, err
	}
	res, err := s.o.Resolver.Resolve(ctx, promptstore.Request{Agent: in.Agent, Env: in.Env, UserID: in.UserID, SessionID: in.SessionID})
	if err != nil {
		return nil, false, err
	}
	ctx2, cancel := s.sqlCtx(ctx)
	defer cancel()
	ms := s.o.Now().UnixMilli()
	row := sessionRow{SessionID: in.SessionID, Agent: in.Agent, Env: in.Env, UserID: in.UserID, PinnedVersion: res.Version,
		State: Open, Metadata: meta, IdleTtlMs: ttl.Milliseconds(), CreatedAtMs: ms, UpdatedAtMs: ms}
	out, err := sqlstore.Transact(ctx2, s.db, func(tx *gorm.DB) (*Session, error) {
		if err := tx.Exec(`INSERT INTO sessions (`+sessionCols+`) VALUES (?, ?, ?, ?, ?, ?, 0, 0, 0, 0, 0, ?, ?, ?, ?, NULL)`,
			row.SessionID, row.Agent, row.Env, row.UserID, row.PinnedVersion, row.State, row.Metadata, row.IdleTtlMs, ms, ms).Error; err != nil {
			return nil, err
		}
		details := map[string]any{"pinned_version": res.Version}
		if res.Release != nil {
			details["release"] = res.Release
		}
		if err := s.audit.Append(ctx, tx, audit.Event{Action: "session.created", Agent: in.Agent, Env: in.Env, SessionID: in.SessionID,
			Resource: "sessions/" + in.SessionID}, details); err != nil {
			return nil, err
		}
		return row.session(), nil
	}, then...)
	if sqlstore.IsDuplicate(err) { // created concurrently
		existing, err := s.existing(ctx, in)
		if existing == nil && err == nil {
			err = ErrExists
		}
		return existing, false, err
	}
	if err != nil {
		return nil, false, storeErr(err)
	}
	return out, true, nil
}

// existing returns the session with in's id if it matches in, ErrExists if
// it does not, and nil if there is none.
func (s *Service) existing(ctx context.Context, in CreateInput) (*Session, error) {
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	row, err := readSession(s.db.WithContext(ctx), in.SessionID)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, storeErr(err)
	}
	if row.Agent != in.Agent || row.Env != in.Env || row.UserID != in.UserID || row.State != Open {
		return nil, ErrExists
	}
	return row.session(), nil
}

// Get returns a session with its turns after seq since (at most limit,
// and at most Options.PageBytes of them but at least one; NextSince
// continues when more follow), its lease holder (nil when free or when Redis cannot tell) and its state
// keys.
func (s *Service) Get(ctx context.Context, id string, since int64, limit int) (*Session, error) {
	if err := validID("session_id", id); err != nil {
		return nil, err
	}
	if since < 0 {
		return nil, invalidf("since", "since must be >= 0")
	}
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	// One transaction, so the row (revision, fence) and the turns are one
	// snapshot (InnoDB's consistent read; SQLite's single connection): a
	// reader never sees a revision with turns appended after it.
	var row *sessionRow
	var sess *Session
	err := s.db.WithContext(sctx).Transaction(func(tx *gorm.DB) error {
		var err error
		if row, err = readSession(tx, id); err != nil {
			return err
		}
		sess = row.session()
		turns, next, err := turnPage(tx, id, since, limit, s.o.PageBytes)
		if err != nil {
			return err
		}
		sess.NextSince = next
		sess.Turns = make([]Turn, len(turns))
		for i, t := range turns {
			sess.Turns[i] = t.turn()
		}
		return tx.Raw(`SELECT state_key FROM session_state WHERE session_id = ? ORDER BY state_key`, id).Scan(&sess.StateKeys).Error
	})
	if err != nil {
		return nil, storeErr(sqlstore.Translate(err))
	}
	if sess.StateKeys == nil {
		sess.StateKeys = []string{}
	}
	if row.State == Open {
		if info, err := s.o.Locker.Holder(ctx, s.key(id)); err == nil {
			sess.Lease = &LeaseInfo{Holder: info.Holder, Fence: info.Fence, ExpiresAt: info.ExpiresAt.UTC()}
		}
	}
	return sess, nil
}

// Turns implements promptstore.History: the session's turns, oldest
// first; with max > 0 the newest max, with maxBytes > 0 the newest that
// fit in maxBytes (as the session_bytes limit counts them), never
// starting with tool turns cut off from the assistant turn whose
// tool_calls they answer. Only the turns returned are read in full.
func (s *Service) Turns(ctx context.Context, id string, max int, maxBytes int64) ([]prompt.Message, error) {
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	var rows []turnRow
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) (err error) {
		rows, err = historyTurns(tx, id, max, maxBytes)
		return err
	})
	if err != nil {
		return nil, storeErr(err)
	}
	out := make([]prompt.Message, len(rows))
	for i, r := range rows {
		t := r.turn()
		out[i] = prompt.Message{Role: t.Role, Content: t.Content, Name: t.Name, ToolCallID: t.ToolCallID, ToolCalls: t.ToolCalls}
	}
	return out, nil
}

func (s *Service) rejected(ctx context.Context, id, reason string, err error) {
	s.o.Events.Add(ctx, audit.Event{Action: "write.rejected", SessionID: id, Resource: "sessions/" + id},
		map[string]any{"reason": reason, "error": err.Error()})
}
