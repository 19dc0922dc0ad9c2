package promptstore

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
)

// PointerTx is the prompt store inside a caller's write transaction: the
// release package changes the pointer row in the same transaction as its
// own rows, under the same revision conditions, through these methods and
// no other SQL of its own.
type PointerTx struct {
	s  *Store
	tx *gorm.DB
}

// InTx returns the pointer API over tx, a transaction on the store's
// database.
func (s *Store) InTx(tx *gorm.DB) PointerTx { return PointerTx{s: s, tx: tx} }

// PointerRow is the pointer row as a transaction reads it.
type PointerRow struct {
	Version         int
	Revision        int64
	ActiveReleaseID string
}

// Read reads (and on MySQL locks) the pointer row; nil when the env has no
// pointer.
func (p PointerTx) Read(agent, env string) (*PointerRow, error) {
	row, err := readPointer(p.tx, agent, env, true)
	if err != nil || row == nil {
		return nil, err
	}
	out := &PointerRow{Version: row.Version, Revision: row.Revision}
	if row.ActiveReleaseID != nil {
		out.ActiveReleaseID = *row.ActiveReleaseID
	}
	return out, nil
}

// VersionExists reports whether the agent has the version.
func (p PointerTx) VersionExists(agent string, version int) (bool, error) {
	return versionExists(p.tx, agent, version)
}

// IsRevoked reports whether version is revoked in the env.
func (p PointerTx) IsRevoked(agent, env string, version int) (bool, error) {
	var n int
	err := p.tx.Raw(`SELECT COUNT(*) FROM prompt_revocations WHERE agent = ? AND env = ? AND version = ?`, agent, env, version).Scan(&n).Error
	return n > 0, err
}

// Env reads an env (pointer, history, revocations).
func (p PointerTx) Env(agent, env string) (*Env, error) { return envTx(p.tx, agent, env) }

func versionExists(tx *gorm.DB, agent string, version int) (bool, error) {
	var n int
	err := tx.Raw(`SELECT COUNT(*) FROM prompt_versions WHERE agent = ? AND version = ?`, agent, version).Scan(&n).Error
	return n > 0, err
}

// PointerChange is one conditional change of the pointer row.
type PointerChange struct {
	Agent, Env       string
	ExpectedRevision int64
	// ExpectRelease is the active release the row must name ("" = none).
	ExpectRelease string
	// SetRelease is the active release after the change ("" = none).
	SetRelease string
	// MoveTo, when non-zero, moves the pointer to that version and records
	// the move with Action and Reason.
	MoveTo int
	Action string
	Reason string
	// Revoke, when non-zero, revokes that version in the env.
	Revoke int
}

// Absent answers a miss of the transaction: ErrAgentNotFound when the
// agent has no version at all, else err (ErrNoPointer,
// ErrVersionNotFound), so callers report the right one without asking
// again.
func (p PointerTx) Absent(agent string, err error) error { return absent(p.tx, agent, err) }

// Change applies c with the row's revision condition (and active release
// condition) checked by rows affected, and returns the new state.
func (p PointerTx) Change(ctx context.Context, c PointerChange) (*PointerState, error) {
	s, tx := p.s, p.tx
	cur, err := p.Read(c.Agent, c.Env)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, absent(tx, c.Agent, ErrNoPointer)
	}
	ms := s.now().UnixMilli()
	actor := audit.Actor(ctx)
	var set any
	if c.SetRelease != "" {
		set = c.SetRelease
	}
	version := cur.Version
	if c.MoveTo != 0 {
		version = c.MoveTo
	}
	cond := "active_release_id IS NULL"
	args := []any{version, set, ms, actor, c.Agent, c.Env, c.ExpectedRevision}
	if c.ExpectRelease != "" {
		cond = "active_release_id = ?"
		args = append(args, c.ExpectRelease)
	}
	res := tx.Exec(`UPDATE prompt_env_pointers SET version = ?, active_release_id = ?, revision = revision + 1, updated_at_ms = ?, updated_by = ?
		WHERE agent = ? AND env = ? AND revision = ? AND `+cond, args...)
	if res.Error != nil {
		return nil, res.Error
	}
	if res.RowsAffected != 1 {
		switch {
		case cur.Revision != c.ExpectedRevision:
			return nil, &RevisionConflict{Expected: c.ExpectedRevision, Current: cur.Revision}
		case cur.ActiveReleaseID != "" && cur.ActiveReleaseID != c.ExpectRelease:
			return nil, &ReleaseActive{ReleaseID: cur.ActiveReleaseID}
		}
		return nil, fmt.Errorf("promptstore: pointer %s/%s changed under the transaction", c.Agent, c.Env)
	}
	rev := c.ExpectedRevision + 1
	if c.MoveTo != 0 {
		if err := tx.Exec(`INSERT INTO prompt_pointer_moves (agent, env, from_version, to_version, revision, action, reason, actor, at_ms)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, c.Agent, c.Env, cur.Version, c.MoveTo, rev, c.Action, c.Reason, actor, ms).Error; err != nil {
			return nil, err
		}
	}
	if c.Revoke != 0 {
		if _, err := s.recordRevocation(ctx, tx, c.Agent, c.Env, c.Revoke, c.Reason, rev); err != nil {
			return nil, err
		}
	}
	return s.stateTx(tx, c.Agent, c.Env)
}
