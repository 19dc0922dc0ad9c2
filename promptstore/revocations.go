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
	// ExpectedRevision, when set, is the pointer's revision the change
	// must find (a stale one is *RevisionConflict).
	ExpectedRevision *int64
	// Gate, when set, decides inside the transaction whether a lift that
	// changes something may go ahead (it runs once the revocation row is
	// deleted, with the pointer's revision): an error rolls it back.
	Gate func(tx *gorm.DB, revision int64) error
}

// MaxReason bounds reasons and messages of moves and revocations.
const MaxReason = 1024

// Revoke stops serving a version in an env (Lift serves it again). The
// pointer row's revision rises with it, so every cache and mirror learns of
// it through the revision like any other env change. Revoking the version
// the pointer names is ErrVersionCurrent; revoking while a release is
// active is *ReleaseActive (roll the release back instead). Revoking twice, or lifting what
// is not revoked, changes nothing.
func (s *Store) Revoke(ctx context.Context, in RevokeInput, then ...sqlstore.Then[*Env]) (*Env, error) {
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
		if st, err = s.revokeTx(sctx, tx, in); err != nil {
			return nil, err
		}
		return envTx(tx, in.Agent, in.Env)
	}, then...)
	if err != nil {
		return nil, storeErr(err)
	}
	if st != nil {
		s.Announce(ctx, st)
	}
	return e, nil
}

// revokeTx revokes (or lifts) within tx. It returns the new state, or nil
// when nothing changed.
func (s *Store) revokeTx(ctx context.Context, tx *gorm.DB, in RevokeInput) (*PointerState, error) {
	ptr, err := readPointer(tx, in.Agent, in.Env)
	if err != nil {
		return nil, err
	}
	if ptr == nil {
		return nil, absent(tx, in.Agent, ErrNoPointer)
	}
	if in.ExpectedRevision != nil && *in.ExpectedRevision != ptr.Revision {
		return nil, &RevisionConflict{Expected: *in.ExpectedRevision, Current: ptr.Revision}
	}
	if ok, err := versionExists(tx, in.Agent, in.Version); err != nil || !ok {
		if err == nil {
			err = ErrVersionNotFound
		}
		return nil, err
	}
	if in.Lift {
		res := tx.Exec(`DELETE FROM prompt_revocations WHERE agent = ? AND env = ? AND version = ?`, in.Agent, in.Env, in.Version)
		if res.Error != nil || res.RowsAffected == 0 {
			return nil, res.Error // lifting what is not revoked changes nothing
		}
		if in.Gate != nil {
			if err := in.Gate(tx, ptr.Revision); err != nil {
				return nil, err
			}
		}
	} else {
		if ptr.Version == in.Version {
			return nil, ErrVersionCurrent
		}
		if ptr.ActiveReleaseID != nil {
			// The release decides what happens to its versions: roll it back.
			return nil, &ReleaseActive{ReleaseID: *ptr.ActiveReleaseID}
		}
		inserted, err := s.recordRevocation(ctx, tx, in.Agent, in.Env, in.Version, in.Reason, ptr.Revision+1)
		if err != nil || !inserted {
			return nil, err // revoking twice changes nothing
		}
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
	if in.Lift {
		details := map[string]any{"version": in.Version, "revision": ptr.Revision + 1}
		if in.Reason != "" {
			details["reason"] = in.Reason
		}
		if err := s.audit.Append(ctx, tx, audit.Event{Action: "version.unrevoked", Agent: in.Agent, Env: in.Env,
			Resource: revocationResource(in.Agent, in.Env, in.Version)}, details); err != nil {
			return nil, err
		}
	}
	return s.stateTx(tx, in.Agent, in.Env)
}

// recordRevocation inserts the revocation of version in agent/env and its
// version.revoked audit event, as of the pointer's new revision: the one
// path for a revocation, whether an admin revokes or a release rolls back.
// It reports false (and writes nothing) when the version was revoked
// already.
func (s *Store) recordRevocation(ctx context.Context, tx *gorm.DB, agent, env string, version int, reason string, revision int64) (bool, error) {
	err := tx.Exec(`INSERT INTO prompt_revocations (agent, env, version, reason, revoked_by, revoked_at_ms) VALUES (?, ?, ?, ?, ?, ?)`,
		agent, env, version, reason, audit.Actor(ctx), s.now().UnixMilli()).Error
	if sqlstore.IsDuplicate(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	details := map[string]any{"version": version, "revision": revision}
	if reason != "" {
		details["reason"] = reason
	}
	return true, s.audit.Append(ctx, tx, audit.Event{Action: "version.revoked", Agent: agent, Env: env,
		Resource: revocationResource(agent, env, version)}, details)
}

func revocationResource(agent, env string, version int) string {
	return fmt.Sprintf("agents/%s/envs/%s/revocations/%d", agent, env, version)
}
