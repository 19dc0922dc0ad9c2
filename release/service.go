package release

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/events"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release/guard"
	"github.com/promptd/promptd/sqlstore"
)

// Options configure a Service.
type Options struct {
	// Store is the prompt store whose pointer rows releases move.
	Store *promptstore.Store
	// DB is the store's database: a release and its env pointer row change
	// in one transaction.
	DB *gorm.DB
	// Bus carries release events to the other instances; nil: this
	// process only.
	Bus *events.Bus
	// Locker and Keys must be the store's, so pointer switches and release
	// transitions take the same lock; nil Locker: an in-memory one.
	Locker locks.Locker
	Keys   locks.Keys
	// Instance names this process in audit events.
	Instance string
	Logger   *slog.Logger
	Now      func() time.Time
	LockWait time.Duration // default 2s
	// SQLTimeout bounds each SQL operation; default 5s.
	SQLTimeout time.Duration
	// NewID names a new release; nil: "rel_" + 16 random hex digits. A
	// test hook (conformance vectors name their release ids); an id must
	// be unique and 1..128 identifier characters.
	NewID func() string
	// Outcomes is where guards and release statistics read outcomes; nil:
	// releases show no stats and guards stay collecting.
	Outcomes Outcomes
	// GuardMetrics are the guard evaluator's collectors (nil: none).
	GuardMetrics *GuardMetrics
}

// EventKind is the kind of the events a release change publishes.
const EventKind = "release"

// Service manages releases and resolves callers to their arm.
type Service struct {
	o     Options
	store *promptstore.Store
	db    *gorm.DB
	log   *slog.Logger
	audit audit.Log

	mu    sync.RWMutex
	cache map[string]*Release // by id; replaced only by a higher revision
}

// New returns a Service; it listens for release events on the store's bus.
func New(o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.LockWait == 0 {
		o.LockWait = 2 * time.Second
	}
	if o.Locker == nil {
		o.Locker = locks.NewMemory(locks.Options{Holder: o.Instance})
	}
	if o.Bus == nil {
		o.Bus = events.NewBus(events.Options{Logger: o.Logger})
	}
	if o.SQLTimeout <= 0 {
		o.SQLTimeout = 5 * time.Second
	}
	if o.NewID == nil {
		o.NewID = newID
	}
	s := &Service{o: o, store: o.Store, db: o.DB, log: o.Logger, audit: audit.Log{Instance: o.Instance, Now: o.Now}, cache: map[string]*Release{}}
	o.Bus.Subscribe(EventKind, s.onEvent)
	return s
}

// CreateInput starts a release.
type CreateInput struct {
	Agent, Env       string
	CandidateVersion int
	Percent          string // decimal, as received
	Stickiness       string // "user" (default) or "session"
	Steps            []Step
	Message          string
	ExpectedRevision *int64 // the pointer's, optional
	Guard            *guard.Config
	// Overrides force listed callers onto an arm (raw ids; only their
	// hashes are stored); nil: none.
	Overrides *OverridesInput
	// ID, when set, is the new release's id (a gated create hashes its
	// overrides under the id it names); empty: a new one.
	ID string
	// Gate, when set, decides inside the create's transaction, once the
	// pointer row is read under lock, whether the create may go ahead (with
	// the pointer's revision): an error rolls it back.
	Gate func(tx *gorm.DB, revision int64) error
}

// NewID names a new release as Create would (Options.NewID): a caller
// that must know the id before the create (a gated create stores its
// overrides hashed under it) takes it here and passes it in CreateInput.
func (s *Service) NewID() string { return s.o.NewID() }

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "rel_" + hex.EncodeToString(b[:])
}

// lock takes the env's release lock as the fast path; on a Redis outage
// the SQL conditions alone decide.
func (s *Service) lock(ctx context.Context, agent, env string) func() {
	key, err := promptstore.ReleaseLock(s.o.Keys, agent, env)
	if err != nil {
		return func() {}
	}
	l, err := s.o.Locker.Acquire(ctx, key, 10*time.Second, locks.WithWait(s.o.LockWait))
	if err != nil {
		return func() {}
	}
	return func() { _ = l.Release(context.WithoutCancel(ctx)) }
}

func validID(field, v string) error { return promptstore.CheckID(field, v) }

// Create starts a release of CandidateVersion against the pointer's
// version. The pointer row is conditionally updated to name the release, so
// a second active release fails in SQL even without the lock.
func (s *Service) Create(ctx context.Context, in CreateInput, then ...sqlstore.Then[*Release]) (*Release, error) {
	if err := validID("agent", in.Agent); err != nil {
		return nil, err
	}
	if err := validID("env", in.Env); err != nil {
		return nil, err
	}
	bp, ok := ParsePercent(in.Percent)
	if !ok {
		return nil, invalidf(CodeInvalidPercent, "percent", "percent must be a number 0..100 with at most 2 decimals")
	}
	switch in.Stickiness {
	case "":
		in.Stickiness = StickyUser
	case StickyUser, StickySession:
	default:
		return nil, invalidf(CodeInvalidField, "stickiness", `stickiness must be "user" or "session"`)
	}
	if in.CandidateVersion < 1 || in.CandidateVersion >= promptstore.MaxVersion {
		return nil, invalidf(CodeInvalidField, "candidate_version", "candidate_version must be a positive version")
	}
	if len(in.Message) > promptstore.MaxMessage {
		return nil, invalidf(CodeInvalidField, "message", "message is too long")
	}
	steps, err := parseSteps(in.Steps, bp)
	if err != nil {
		return nil, err
	}
	if err := checkGuard(in.Guard); err != nil {
		return nil, err
	}
	id := in.ID
	if id == "" {
		id = s.o.NewID()
	}
	overrides, err := hashOverrides(id, in.Overrides)
	if err != nil {
		return nil, err
	}
	defer s.lock(ctx, in.Agent, in.Env)()
	ctx, cancel := context.WithTimeout(ctx, s.o.SQLTimeout)
	defer cancel()
	var ptr *promptstore.PointerState
	rel, err := sqlstore.Transact(ctx, s.db, func(tx *gorm.DB) (*Release, error) {
		cur, err := s.store.InTx(tx).Read(in.Agent, in.Env)
		switch {
		case err != nil:
			return nil, err
		case cur == nil:
			return nil, s.store.InTx(tx).Absent(in.Agent, promptstore.ErrNoPointer)
		case in.ExpectedRevision != nil && *in.ExpectedRevision != cur.Revision:
			return nil, &promptstore.RevisionConflict{Expected: *in.ExpectedRevision, Current: cur.Revision}
		case cur.ActiveReleaseID != "":
			return nil, &promptstore.ReleaseActive{ReleaseID: cur.ActiveReleaseID}
		case cur.Version == in.CandidateVersion:
			return nil, invalidf(CodeInvalidField, "candidate_version", "the candidate is the env's current version")
		}
		if ok, err := s.store.InTx(tx).VersionExists(in.Agent, in.CandidateVersion); err != nil || !ok {
			return nil, fmtErr(err, s.store.InTx(tx).Absent(in.Agent, promptstore.ErrVersionNotFound))
		}
		if revoked, err := s.store.InTx(tx).IsRevoked(in.Agent, in.Env, in.CandidateVersion); err != nil || revoked {
			return nil, fmtErr(err, promptstore.ErrVersionRevoked)
		}
		if in.Gate != nil {
			if err := in.Gate(tx, cur.Revision); err != nil {
				return nil, err
			}
		}
		now := s.o.Now()
		ms := now.UnixMilli()
		row := releaseRow{ID: id, Agent: in.Agent, Env: in.Env, State: string(Running), BaselineVersion: cur.Version,
			CandidateVersion: in.CandidateVersion, BasisPoints: bp, Stickiness: in.Stickiness, Steps: encodeSteps(steps),
			Revision: 1, Message: in.Message, CreatedBy: audit.Actor(ctx), CreatedAtMs: ms, UpdatedAtMs: ms}
		if len(steps) > 0 {
			at := now.Add(steps[0].after).UnixMilli()
			row.NextStepAtMs = &at
		}
		if err := tx.Exec(`INSERT INTO releases (`+releaseCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			row.ID, row.Agent, row.Env, row.State, row.BaselineVersion, row.CandidateVersion, row.BasisPoints, row.Stickiness,
			row.Steps, 0, row.NextStepAtMs, nil, 1, row.Message, row.CreatedBy, ms, ms).Error; err != nil {
			return nil, err
		}
		if err := writeOverrides(tx, id, overrides); err != nil {
			return nil, err
		}
		if ptr, err = s.store.InTx(tx).Change(ctx, promptstore.PointerChange{Agent: in.Agent, Env: in.Env,
			ExpectedRevision: cur.Revision, SetRelease: row.ID}); err != nil {
			return nil, err
		}
		rel := row.release()
		if in.Guard != nil {
			if err := writeGuard(tx, rel.ID, in.Guard); err != nil {
				return nil, err
			}
			rel.Guard = &GuardStatus{Config: *in.Guard, State: guard.Collecting, Since: rel.CreatedAt}
		}
		if err := s.record(ctx, tx, rel, "create", "", Running, bp, in.Message, "release.created",
			map[string]any{"baseline_version": cur.Version, "candidate_version": in.CandidateVersion, "percent": rel.Percent, "steps": rel.Steps,
				"overrides": overrideCounts(overrides), "guard": in.Guard}); err != nil {
			return nil, err
		}
		return rel, complete(tx, rel)
	}, then...)
	if err != nil {
		return nil, storeErr(err)
	}
	s.announce(ctx, rel, ptr)
	return rel, nil
}

// record writes the history row of rel's current revision and the audit
// event, within tx.
func (s *Service) record(ctx context.Context, tx *gorm.DB, rel *Release, action string, from, to State, bp int, reason, event string, details map[string]any) error {
	if err := tx.Exec(`INSERT INTO release_history (release_id, revision, action, from_state, to_state, basis_points, actor, reason, at_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, rel.ID, rel.Revision, action, string(from), string(to), bp, audit.Actor(ctx), reason,
		s.o.Now().UnixMilli()).Error; err != nil {
		return err
	}
	if details == nil {
		details = map[string]any{}
	}
	details["release_id"], details["revision"], details["state"] = rel.ID, rel.Revision, rel.State
	if reason != "" {
		details["reason"] = reason
	}
	return s.audit.Append(ctx, tx, audit.Event{Action: event, Agent: rel.Agent, Env: rel.Env,
		Resource: "releases/" + rel.ID}, details)
}

// announce updates this instance's caches and tells the others.
func (s *Service) announce(ctx context.Context, rel *Release, ptr *promptstore.PointerState) {
	s.offer(rel)
	if ptr != nil {
		s.store.Announce(ctx, ptr)
	}
	s.o.Bus.Publish(ctx, events.Event{Kind: EventKind, Agent: rel.Agent, Env: rel.Env, ID: rel.ID, Revision: rel.Revision})
}

func (s *Service) offer(rel *Release) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.cache[rel.ID]; ok && cur.Revision >= rel.Revision {
		return
	}
	if !rel.State.Active() {
		delete(s.cache, rel.ID) // finished releases no longer resolve anybody
		return
	}
	cp := *rel // the caller keeps its own (Describe fills in its figures)
	s.cache[rel.ID] = &cp
}

// Get returns a release with its history, from SQL.
func (s *Service) Get(ctx context.Context, id string) (*Release, error) {
	if len(id) > 64 || id == "" {
		return nil, ErrNotFound
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.SQLTimeout)
	defer cancel()
	db := s.db.WithContext(ctx)
	rel, err := readRelease(db, id, false)
	if err != nil {
		return nil, storeErr(err)
	}
	return rel, storeErr(complete(db, rel))
}

// List returns an env's releases, newest first; the cursor is the
// creation time and id of the last release of the previous page.
func (s *Service) List(ctx context.Context, agent, env string, p promptstore.Page) ([]*Release, string, error) {
	if err := validID("agent", agent); err != nil {
		return nil, "", err
	}
	if err := validID("env", env); err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.SQLTimeout)
	defer cancel()
	q := `SELECT ` + selectCols + ` FROM releases WHERE agent = ? AND env = ?`
	args := []any{agent, env}
	if p.Cursor != "" {
		var ms int64
		var id string
		if _, err := fmt.Sscanf(p.Cursor, "%d_%s", &ms, &id); err != nil {
			return nil, "", invalidf(CodeInvalidField, "cursor", "bad cursor")
		}
		q += ` AND (created_at_ms < ? OR (created_at_ms = ? AND id < ?))`
		args = append(args, ms, ms, id)
	}
	q += ` ORDER BY created_at_ms DESC, id DESC LIMIT ?`
	args = append(args, p.Limit+1)
	var rows []releaseRow
	if err := s.db.WithContext(ctx).Raw(q, args...).Scan(&rows).Error; err != nil {
		return nil, "", storeErr(err)
	}
	if len(rows) == 0 && p.Cursor == "" {
		// No release: of an agent that does not exist, say so.
		if err := s.store.InTx(s.db.WithContext(ctx)).Absent(agent, nil); err != nil {
			return nil, "", storeErr(err)
		}
	}
	next := ""
	if len(rows) > p.Limit {
		rows = rows[:p.Limit]
		last := rows[len(rows)-1]
		next = fmt.Sprintf("%d_%s", last.CreatedAtMs, last.ID)
	}
	out := make([]*Release, len(rows))
	for i := range rows {
		out[i] = rows[i].release()
		out[i].History = nil
	}
	return out, next, nil
}

func storeErr(err error) error { return promptstore.StoreErr(err) }
