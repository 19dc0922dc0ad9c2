package promptstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/events"
	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/sqlstore"
)

// Move is one entry of an env's move history.
type Move struct {
	FromVersion int       `json:"from_version"`
	ToVersion   int       `json:"to_version"`
	Revision    int64     `json:"revision"`
	Action      string    `json:"action"`
	Reason      string    `json:"reason,omitempty"`
	Actor       string    `json:"actor"`
	At          time.Time `json:"at"`
}

// Env is an env pointer as SQL has it (authoritative).
type Env struct {
	Agent           string    `json:"agent"`
	Env             string    `json:"env"`
	Version         int       `json:"version"`
	Revision        int64     `json:"revision"`
	UpdatedAt       time.Time `json:"updated_at"`
	UpdatedBy       string    `json:"updated_by"`
	History         []Move    `json:"history"`
	Revoked         []int     `json:"revoked"`
	ActiveReleaseID string    `json:"-"`
}

// HistoryLength is how many moves GetEnv returns.
const HistoryLength = 20

type pointerRow struct {
	Agent           string
	Env             string
	Version         int
	Revision        int64
	ActiveReleaseID *string
	UpdatedAtMs     int64
	UpdatedBy       string
}

// readPointer reads the pointer row (nil when the env has none); with lock,
// inside a write transaction, it locks the row on MySQL.
func readPointer(tx *gorm.DB, agent, env string, lock ...bool) (*pointerRow, error) {
	q := `SELECT agent, env, version, revision, active_release_id, updated_at_ms, updated_by
		FROM prompt_env_pointers WHERE agent = ? AND env = ?`
	if len(lock) > 0 && lock[0] {
		q += sqlstore.ForUpdate(tx)
	}
	var rows []pointerRow
	err := tx.Raw(q, agent, env).Scan(&rows).Error
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	return &rows[0], nil
}

func revokedVersions(tx *gorm.DB, agent, env string) ([]int, error) {
	var vs []int
	err := tx.Raw(`SELECT version FROM prompt_revocations WHERE agent = ? AND env = ? ORDER BY version`, agent, env).Scan(&vs).Error
	return vs, err
}

func validateEnv(agent, env string) error {
	if err := ident.Validate("agent", agent); err != nil {
		return invalidID(err)
	}
	if err := ident.Validate("env", env); err != nil {
		return invalidID(err)
	}
	return nil
}

// GetEnv reads an env pointer from SQL with its last moves and revocations.
func (s *Store) GetEnv(ctx context.Context, agent, env string) (*Env, error) {
	if err := validateEnv(agent, env); err != nil {
		return nil, err
	}
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	e, err := envTx(s.db.WithContext(ctx), agent, env)
	return e, storeErr(sqlstore.Translate(err))
}

// envTx reads an env within tx (or a plain session).
func envTx(db *gorm.DB, agent, env string) (*Env, error) {
	row, err := readPointer(db, agent, env)
	if err != nil {
		return nil, err
	}
	if row == nil {
		return nil, absent(db, agent, ErrNoPointer)
	}
	e := &Env{Agent: agent, Env: env, Version: row.Version, Revision: row.Revision, UpdatedBy: row.UpdatedBy,
		UpdatedAt: time.UnixMilli(row.UpdatedAtMs).UTC(), History: []Move{}}
	if row.ActiveReleaseID != nil {
		e.ActiveReleaseID = *row.ActiveReleaseID
	}
	var moves []struct {
		FromVersion, ToVersion int
		Revision               int64
		Action, Reason, Actor  string
		AtMs                   int64
	}
	if err := db.Raw(`SELECT from_version, to_version, revision, action, reason, actor, at_ms FROM prompt_pointer_moves
		WHERE agent = ? AND env = ? ORDER BY id DESC LIMIT ?`, agent, env, HistoryLength).Scan(&moves).Error; err != nil {
		return nil, err
	}
	for _, m := range moves {
		e.History = append(e.History, Move{FromVersion: m.FromVersion, ToVersion: m.ToVersion, Revision: m.Revision,
			Action: m.Action, Reason: m.Reason, Actor: m.Actor, At: time.UnixMilli(m.AtMs).UTC()})
	}
	if e.Revoked, err = revokedVersions(db, agent, env); err != nil {
		return nil, err
	}
	if e.Revoked == nil {
		e.Revoked = []int{}
	}
	return e, nil
}

// SwitchInput moves an env pointer. ExpectedRevision is required; 0 creates
// the pointer.
type SwitchInput struct {
	Agent, Env       string
	Version          int
	ExpectedRevision *int64
	Reason           string
	// Gate, when set, runs first inside the switch's transaction and
	// decides whether the switch may go ahead: an error (an approval
	// gate's, or a failed read) rolls the switch back.
	Gate func(tx *gorm.DB) error
}

// SwitchPointer moves the env pointer to a version, under the env's release
// lock and the pointer row's revision condition, in one transaction with
// the move history and the audit event. The version must exist and not be
// revoked in the env; an active release blocks the switch.
func (s *Store) SwitchPointer(ctx context.Context, in SwitchInput, then ...sqlstore.Then[*Env]) (*Env, error) {
	if err := validateEnv(in.Agent, in.Env); err != nil {
		return nil, err
	}
	if in.ExpectedRevision == nil {
		return nil, ErrPreconditionRequired
	}
	if *in.ExpectedRevision < 0 {
		return nil, invalid(CodeInvalidField, "expected_revision", "expected_revision must be >= 0")
	}
	if in.Version < 1 || in.Version >= MaxVersion {
		return nil, invalid(CodeInvalidField, "version", "version must be 1..%d", MaxVersion-1)
	}
	if len(in.Reason) > MaxReason {
		return nil, invalid(CodeInvalidField, "reason", "reason is longer than %d bytes", MaxReason)
	}
	key, _ := ReleaseLock(s.o.Keys, in.Agent, in.Env)
	defer s.lock(ctx, key)()
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	var st *PointerState
	e, err := sqlstore.Transact(sctx, s.db, func(tx *gorm.DB) (*Env, error) {
		var err error
		if st, err = s.switchTx(sctx, tx, in, "switch"); err != nil {
			return nil, err
		}
		return envTx(tx, in.Agent, in.Env)
	}, then...)
	if err != nil {
		var rc *RevisionConflict
		if errors.As(err, &rc) {
			s.o.Metrics.conflict("pointer")
		}
		return nil, storeErr(err)
	}
	s.Announce(ctx, st)
	return e, nil
}

// switchTx moves (or creates) the pointer within tx.
func (s *Store) switchTx(ctx context.Context, tx *gorm.DB, in SwitchInput, action string) (*PointerState, error) {
	if in.Gate != nil {
		if err := in.Gate(tx); err != nil {
			return nil, err
		}
	}
	var exists int
	if err := tx.Raw(`SELECT COUNT(*) FROM prompt_versions WHERE agent = ? AND version = ?`, in.Agent, in.Version).Scan(&exists).Error; err != nil {
		return nil, err
	}
	if exists == 0 {
		return nil, absent(tx, in.Agent, ErrVersionNotFound)
	}
	var revoked int
	if err := tx.Raw(`SELECT COUNT(*) FROM prompt_revocations WHERE agent = ? AND env = ? AND version = ?`,
		in.Agent, in.Env, in.Version).Scan(&revoked).Error; err != nil {
		return nil, err
	}
	if revoked > 0 {
		return nil, ErrVersionRevoked
	}
	ms := s.now().UnixMilli()
	actor := audit.Actor(ctx)
	from, rev := 0, int64(1)
	if *in.ExpectedRevision == 0 {
		err := tx.Exec(`INSERT INTO prompt_env_pointers (agent, env, version, revision, active_release_id, updated_at_ms, updated_by)
			VALUES (?, ?, ?, 1, NULL, ?, ?)`, in.Agent, in.Env, in.Version, ms, actor).Error
		if sqlstore.IsDuplicate(err) {
			return nil, s.pointerConflict(tx, in)
		}
		if err != nil {
			return nil, err
		}
	} else {
		cur, err := readPointer(tx, in.Agent, in.Env)
		if err != nil {
			return nil, err
		}
		if cur != nil {
			from = cur.Version
		}
		res := tx.Exec(`UPDATE prompt_env_pointers SET version = ?, revision = revision + 1, updated_at_ms = ?, updated_by = ?
			WHERE agent = ? AND env = ? AND revision = ? AND active_release_id IS NULL`,
			in.Version, ms, actor, in.Agent, in.Env, *in.ExpectedRevision)
		if res.Error != nil {
			return nil, res.Error
		}
		if res.RowsAffected != 1 {
			return nil, s.pointerConflict(tx, in)
		}
		rev = *in.ExpectedRevision + 1
	}
	if err := tx.Exec(`INSERT INTO prompt_pointer_moves (agent, env, from_version, to_version, revision, action, reason, actor, at_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, in.Agent, in.Env, from, in.Version, rev, action, in.Reason, actor, ms).Error; err != nil {
		return nil, err
	}
	details := map[string]any{"from_version": from, "to_version": in.Version, "revision": rev}
	if in.Reason != "" {
		details["reason"] = in.Reason
	}
	if err := s.audit.Append(ctx, tx, audit.Event{Action: "pointer.switched", Agent: in.Agent, Env: in.Env,
		Resource: fmt.Sprintf("agents/%s/envs/%s", in.Agent, in.Env)}, details); err != nil {
		return nil, err
	}
	return s.stateTx(tx, in.Agent, in.Env)
}

// pointerConflict explains why a conditional pointer write matched no row.
func (s *Store) pointerConflict(tx *gorm.DB, in SwitchInput) error {
	cur, err := readPointer(tx, in.Agent, in.Env)
	switch {
	case err != nil:
		return err
	case cur == nil:
		return &RevisionConflict{Expected: *in.ExpectedRevision, Current: 0}
	case cur.Revision == *in.ExpectedRevision && cur.ActiveReleaseID != nil:
		return &ReleaseActive{ReleaseID: *cur.ActiveReleaseID}
	}
	return &RevisionConflict{Expected: *in.ExpectedRevision, Current: cur.Revision}
}

// stateTx reads the runtime view of an env within tx (nil row: Version 0).
func (s *Store) stateTx(tx *gorm.DB, agent, env string) (*PointerState, error) {
	row, err := readPointer(tx, agent, env)
	if err != nil {
		return nil, err
	}
	st := &PointerState{Agent: agent, Env: env}
	if row == nil {
		return st, nil
	}
	st.Version, st.Revision = row.Version, row.Revision
	if row.ActiveReleaseID != nil {
		st.ActiveReleaseID = *row.ActiveReleaseID
	}
	vs, err := revokedVersions(tx, agent, env)
	if err != nil {
		return nil, err
	}
	if len(vs) > 0 {
		st.Revoked = make(map[int]bool, len(vs))
		for _, v := range vs {
			st.Revoked[v] = true
		}
	}
	return st, nil
}

// Announce makes a committed pointer state visible: this instance's cache
// at once (read-your-writes), the Redis mirror, and every other instance
// through the events channel.
func (s *Store) Announce(ctx context.Context, st *PointerState) {
	if s.ptrs.offer(st) {
		s.o.Metrics.refreshed("write")
	}
	s.mirrorPointer(ctx, st)
	s.publishPointer(ctx, st)
}

// Pointer returns the runtime view of an env: from the in-process cache
// (no network call when warm), else SQL, else the Redis mirror. An env
// without a pointer is ErrNoPointer.
func (s *Store) Pointer(ctx context.Context, agent, env string) (*PointerState, error) {
	if st := s.ptrs.get(agent, env); st != nil {
		s.o.Metrics.cache("pointer", "hit")
		return st, nil
	}
	s.o.Metrics.cache("pointer", "miss")
	st, err := s.loadPointer(ctx, agent, env)
	if err != nil {
		return nil, err
	}
	if st.Revision == 0 {
		sctx, cancel := s.sqlCtx(ctx)
		defer cancel()
		return nil, absent(s.db.WithContext(sctx), agent, ErrNoPointer)
	}
	return st, nil
}

// loadPointer reads an env's state from SQL (or, with SQL down, the
// mirror) and offers it to the cache; it returns the cache's entry.
func (s *Store) loadPointer(ctx context.Context, agent, env string) (*PointerState, error) {
	sctx, cancel := s.sqlCtx(ctx)
	st, err := s.stateTx(s.db.WithContext(sctx), agent, env)
	cancel()
	if err != nil {
		err = storeErr(sqlstore.Translate(err))
		if !errors.Is(err, ErrUnavailable) {
			return nil, err
		}
		if st = s.mirroredPointer(ctx, agent, env); st == nil {
			return nil, err
		}
		s.o.Metrics.degraded("sql")
	}
	if st.Revision == 0 {
		return st, nil // not cached: unknown envs must not fill memory
	}
	s.ptrs.offer(st)
	if cur := s.ptrs.get(agent, env); cur != nil {
		return cur, nil
	}
	return st, nil
}

// onPointerEvent refreshes a cached env when an event names a newer
// revision: from the mirror when it is current, else from SQL.
func (s *Store) onPointerEvent(ctx context.Context, ev events.Event) {
	cur := s.ptrs.get(ev.Agent, ev.Env)
	if cur == nil || cur.Revision >= ev.Revision {
		return // not cached here (loaded on first use) or already current
	}
	if st := s.mirroredPointer(ctx, ev.Agent, ev.Env); st != nil && st.Revision >= ev.Revision {
		if s.ptrs.offer(st) {
			s.o.Metrics.refreshed("event")
		}
		return
	}
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	st, err := s.stateTx(s.db.WithContext(sctx), ev.Agent, ev.Env)
	if err != nil {
		s.log.Warn("pointer refresh failed; the reconciler will retry", "agent", ev.Agent, "env", ev.Env, "err", err)
		return
	}
	if s.ptrs.offer(st) {
		s.o.Metrics.refreshed("event")
	}
}

// Reconcile compares every cached env's revision with SQL and reloads the
// stale ones, repairing the mirror, so a lost event leaves this instance
// stale for at most one reconciler period. Run it on every instance.
func (s *Store) Reconcile(ctx context.Context) error {
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	var rows []struct {
		Agent, Env string
		Revision   int64
	}
	if err := s.db.WithContext(ctx).Raw(`SELECT agent, env, revision FROM prompt_env_pointers`).Scan(&rows).Error; err != nil {
		return storeErr(sqlstore.Translate(err))
	}
	cached := s.ptrs.revisions()
	var stale []string
	for _, r := range rows {
		k := envKey(r.Agent, r.Env)
		if rev, ok := cached[k]; ok && rev < r.Revision {
			st, err := s.stateTx(s.db.WithContext(ctx), r.Agent, r.Env)
			if err != nil {
				return storeErr(sqlstore.Translate(err))
			}
			if s.ptrs.offer(st) {
				s.o.Metrics.refreshed("reconciler")
				stale = append(stale, r.Agent+"/"+r.Env)
			}
			s.mirrorPointer(ctx, st)
		}
	}
	if len(stale) > 0 {
		sort.Strings(stale)
		s.log.Info("reconciler refreshed stale envs", "envs", stale)
	}
	return nil
}

// RepairMirror writes every env pointer to the Redis mirror (at start).
func (s *Store) RepairMirror(ctx context.Context) error {
	if s.mirror == nil {
		return nil
	}
	var rows []struct{ Agent, Env string }
	if err := s.db.WithContext(ctx).Raw(`SELECT agent, env FROM prompt_env_pointers`).Scan(&rows).Error; err != nil {
		return storeErr(sqlstore.Translate(err))
	}
	for _, r := range rows {
		st, err := s.stateTx(s.db.WithContext(ctx), r.Agent, r.Env)
		if err != nil {
			return storeErr(sqlstore.Translate(err))
		}
		s.mirrorPointer(ctx, st)
	}
	return nil
}
