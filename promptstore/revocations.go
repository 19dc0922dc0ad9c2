package promptstore

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/sqlstore"
)

// RevokeInput revokes (or, with Lift, un-revokes) a version in an env.
type RevokeInput struct {
	Agent, Env string
	Version    int
	Reason     string
	Lift       bool
}

// MaxReason bounds reasons and messages of moves and revocations.
const MaxReason = 1024

// Revoke stops serving a version in an env (Lift serves it again). The
// pointer row's revision rises with it, so every cache and mirror learns of
// it through the revision like any other env change. Revoking the version
// the pointer names is ErrVersionCurrent; revoking while a release is
// active is *ReleaseActive (roll the release back instead). Revoking twice, or lifting what
// is not revoked, changes nothing.
func (s *Store) Revoke(ctx context.Context, in RevokeInput) (*Env, error) {
	if err := validateEnv(in.Agent, in.Env); err != nil {
		return nil, err
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
		if st, err = s.RevokeTx(sctx, tx, in); err != nil {
			return nil, err
		}
		return envTx(tx, in.Agent, in.Env)
	})
	if err != nil {
		return nil, storeErr(err)
	}
	if st != nil {
		s.Announce(ctx, st)
	}
	return e, nil
}

// RevokeTx revokes within a caller's transaction (releases revoke the
// candidate they roll back from). It returns the new state, or nil when
// nothing changed.
func (s *Store) RevokeTx(ctx context.Context, tx *gorm.DB, in RevokeInput) (*PointerState, error) {
	ptr, err := readPointer(tx, in.Agent, in.Env)
	if err != nil {
		return nil, err
	}
	if ptr == nil {
		return nil, ErrNoPointer
	}
	var exists int
	if err := tx.Raw(`SELECT COUNT(*) FROM prompt_versions WHERE agent = ? AND version = ?`, in.Agent, in.Version).Scan(&exists).Error; err != nil {
		return nil, err
	}
	if exists == 0 {
		return nil, ErrVersionNotFound
	}
	action := "version.revoked"
	var res *gorm.DB
	if in.Lift {
		action = "version.unrevoked"
		res = tx.Exec(`DELETE FROM prompt_revocations WHERE agent = ? AND env = ? AND version = ?`, in.Agent, in.Env, in.Version)
	} else {
		if ptr.Version == in.Version {
			return nil, ErrVersionCurrent
		}
		if ptr.ActiveReleaseID != nil {
			// The release decides what happens to its versions: roll it back.
			return nil, &ReleaseActive{ReleaseID: *ptr.ActiveReleaseID}
		}
		var n int
		if err := tx.Raw(`SELECT COUNT(*) FROM prompt_revocations WHERE agent = ? AND env = ? AND version = ?`,
			in.Agent, in.Env, in.Version).Scan(&n).Error; err != nil {
			return nil, err
		}
		if n > 0 {
			return nil, nil
		}
		res = tx.Exec(`INSERT INTO prompt_revocations (agent, env, version, reason, revoked_by, revoked_at_ms) VALUES (?, ?, ?, ?, ?, ?)`,
			in.Agent, in.Env, in.Version, in.Reason, audit.Actor(ctx), s.now().UnixMilli())
	}
	if res.Error != nil {
		if sqlstore.IsDuplicate(res.Error) {
			return nil, nil
		}
		return nil, res.Error
	}
	if res.RowsAffected == 0 {
		return nil, nil
	}
	bump := tx.Exec(`UPDATE prompt_env_pointers SET revision = revision + 1, updated_at_ms = ?, updated_by = ?
		WHERE agent = ? AND env = ? AND revision = ?`, s.now().UnixMilli(), audit.Actor(ctx), in.Agent, in.Env, ptr.Revision)
	if bump.Error != nil {
		return nil, bump.Error
	}
	if bump.RowsAffected != 1 {
		cur, _ := readPointer(tx, in.Agent, in.Env)
		var current int64
		if cur != nil {
			current = cur.Revision
		}
		return nil, &RevisionConflict{Expected: ptr.Revision, Current: current}
	}
	details := map[string]any{"version": in.Version, "revision": ptr.Revision + 1}
	if in.Reason != "" {
		details["reason"] = in.Reason
	}
	if err := s.audit.Append(ctx, tx, audit.Event{Action: action, Agent: in.Agent, Env: in.Env,
		Resource: fmt.Sprintf("agents/%s/envs/%s/revocations/%d", in.Agent, in.Env, in.Version)}, details); err != nil {
		return nil, err
	}
	return s.stateTx(tx, in.Agent, in.Env)
}
