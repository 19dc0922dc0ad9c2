package promptstore

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/sqlstore"
)

// The functions of this file let the release package change the pointer
// row inside its own transactions, with the same revision conditions.

// PointerRow is the pointer row as a transaction reads it.
type PointerRow struct {
	Version         int
	Revision        int64
	ActiveReleaseID string
}

// ReadPointerTx reads (and on MySQL locks) the pointer row; nil when the
// env has no pointer.
func ReadPointerTx(tx *gorm.DB, agent, env string) (*PointerRow, error) {
	lock := ""
	if sqlstore.Dialect(tx) == sqlstore.MySQL {
		lock = " FOR UPDATE"
	}
	var rows []pointerRow
	err := tx.Raw(`SELECT agent, env, version, revision, active_release_id, updated_at_ms, updated_by
		FROM prompt_env_pointers WHERE agent = ? AND env = ?`+lock, agent, env).Scan(&rows).Error
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	p := &PointerRow{Version: rows[0].Version, Revision: rows[0].Revision}
	if rows[0].ActiveReleaseID != nil {
		p.ActiveReleaseID = *rows[0].ActiveReleaseID
	}
	return p, nil
}

// VersionExistsTx reports whether the agent has the version.
func VersionExistsTx(tx *gorm.DB, agent string, version int) (bool, error) {
	var n int
	err := tx.Raw(`SELECT COUNT(*) FROM prompt_versions WHERE agent = ? AND version = ?`, agent, version).Scan(&n).Error
	return n > 0, err
}

// IsRevokedTx reports whether version is revoked in the env.
func IsRevokedTx(tx *gorm.DB, agent, env string, version int) (bool, error) {
	var n int
	err := tx.Raw(`SELECT COUNT(*) FROM prompt_revocations WHERE agent = ? AND env = ? AND version = ?`, agent, env, version).Scan(&n).Error
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

// ChangePointerTx applies c with the row's revision condition (and active
// release condition) checked by rows affected, and returns the new state.
func (s *Store) ChangePointerTx(ctx context.Context, tx *gorm.DB, c PointerChange) (*PointerState, error) {
	cur, err := ReadPointerTx(tx, c.Agent, c.Env)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, ErrNoPointer
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
		err := tx.Exec(`INSERT INTO prompt_revocations (agent, env, version, reason, revoked_by, revoked_at_ms) VALUES (?, ?, ?, ?, ?, ?)`,
			c.Agent, c.Env, c.Revoke, c.Reason, actor, ms).Error
		if err != nil && !sqlstore.IsDuplicate(err) {
			return nil, err
		}
		if err == nil {
			if err := s.audit.Append(ctx, tx, audit.Event{Action: "version.revoked", Agent: c.Agent, Env: c.Env,
				Resource: fmt.Sprintf("agents/%s/envs/%s/revocations/%d", c.Agent, c.Env, c.Revoke)},
				map[string]any{"version": c.Revoke, "revision": rev, "reason": c.Reason}); err != nil {
				return nil, err
			}
		}
	}
	return s.stateTx(tx, c.Agent, c.Env)
}

// EnvTx reads an env (pointer, history, revocations) within tx.
func EnvTx(tx *gorm.DB, agent, env string) (*Env, error) { return envTx(tx, agent, env) }
