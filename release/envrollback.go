package release

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/sqlstore"
)

// EnvRollbackInput rolls an env back.
type EnvRollbackInput struct {
	Agent, Env       string
	ExpectedRevision *int64 // the pointer's; required
	ToVersion        int    // 0: the newest older non-revoked version of the move history
	Reason           string
	// Gate, when set, decides inside the rollback's transaction, without
	// an active release, whether a move to the version named may go
	// ahead: it runs with the env as read under lock and the target
	// version. An error rolls the rollback back.
	Gate func(tx *gorm.DB, cur *promptstore.Env, to int) error
}

// EnvRollback is what an env rollback did.
type EnvRollback struct {
	Env     *promptstore.Env `json:"env"`
	Release *Release         `json:"release"` // the release rolled back, if one was active
	From    int              `json:"from_version"`
	To      int              `json:"to_version"`
}

// RollbackEnv rolls an env back in one call. With an active release it
// rolls that release back (ToVersion is not allowed). Without, the pointer
// moves to ToVersion (default: the newest version of the move history that
// is older than the current one and not revoked) and the version rolled
// away from is revoked in the env, so nobody is served it any more.
func (s *Service) RollbackEnv(ctx context.Context, in EnvRollbackInput, then ...sqlstore.Then[*EnvRollback]) (*EnvRollback, error) {
	if err := validID("agent", in.Agent); err != nil {
		return nil, err
	}
	if err := validID("env", in.Env); err != nil {
		return nil, err
	}
	if in.ExpectedRevision == nil {
		return nil, promptstore.ErrPreconditionRequired
	}
	if in.ToVersion < 0 || in.ToVersion >= promptstore.MaxVersion {
		return nil, invalidf(CodeInvalidField, "to_version", "to_version must be a positive version")
	}
	if len(in.Reason) > promptstore.MaxReason {
		return nil, invalidf(CodeInvalidField, "reason", "reason is too long")
	}
	env, err := s.store.GetEnv(ctx, in.Agent, in.Env)
	if err != nil {
		return nil, err
	}
	if env.Revision != *in.ExpectedRevision {
		return nil, &promptstore.RevisionConflict{Expected: *in.ExpectedRevision, Current: env.Revision}
	}
	if env.ActiveReleaseID != "" {
		if in.ToVersion != 0 {
			return nil, invalidf(CodeInvalidField, "to_version", "an active release is rolled back to its baseline; to_version is not allowed")
		}
		rel, err := s.Transition(ctx, env.ActiveReleaseID, ActRollback, TransitionInput{Reason: in.Reason})
		if err != nil {
			return nil, err
		}
		e, err := s.store.GetEnv(ctx, in.Agent, in.Env)
		if err != nil {
			return nil, err
		}
		return &EnvRollback{Env: e, Release: rel, From: rel.CandidateVersion, To: e.Version}, nil
	}
	defer s.lock(ctx, in.Agent, in.Env)()
	sctx, cancel := context.WithTimeout(ctx, s.o.SQLTimeout)
	defer cancel()
	var ptr *promptstore.PointerState
	out, err := sqlstore.Transact(sctx, s.db, func(tx *gorm.DB) (*EnvRollback, error) {
		cur, err := s.store.InTx(tx).Env(in.Agent, in.Env)
		if err != nil {
			return nil, err
		}
		if cur.Revision != *in.ExpectedRevision {
			return nil, &promptstore.RevisionConflict{Expected: *in.ExpectedRevision, Current: cur.Revision}
		}
		if cur.ActiveReleaseID != "" {
			return nil, &promptstore.ReleaseActive{ReleaseID: cur.ActiveReleaseID}
		}
		to := in.ToVersion
		if to == 0 {
			to = rollbackTarget(cur)
			if to == 0 {
				return nil, fmt.Errorf("%w: no older, unrevoked version in the move history", promptstore.ErrVersionNotFound)
			}
		}
		if to == cur.Version {
			return nil, invalidf(CodeInvalidField, "to_version", "to_version is the current version")
		}
		if ok, err := s.store.InTx(tx).VersionExists(in.Agent, to); err != nil || !ok {
			return nil, fmtErr(err, promptstore.ErrVersionNotFound)
		}
		if revoked, err := s.store.InTx(tx).IsRevoked(in.Agent, in.Env, to); err != nil || revoked {
			return nil, fmtErr(err, promptstore.ErrVersionRevoked)
		}
		if in.Gate != nil {
			if err := in.Gate(tx, cur, to); err != nil {
				return nil, err
			}
		}
		reason := in.Reason
		if reason == "" {
			reason = fmt.Sprintf("rolled back from %d", cur.Version)
		}
		ptr, err = s.store.InTx(tx).Change(sctx, promptstore.PointerChange{Agent: in.Agent, Env: in.Env,
			ExpectedRevision: cur.Revision, MoveTo: to, Action: "rollback", Reason: reason, Revoke: cur.Version})
		if err != nil {
			return nil, err
		}
		if err := s.audit.Append(sctx, tx, audit.Event{Action: "env.rolled_back", Agent: in.Agent, Env: in.Env,
			Resource: fmt.Sprintf("agents/%s/envs/%s", in.Agent, in.Env)},
			map[string]any{"from_version": cur.Version, "to_version": to, "revision": ptr.Revision, "reason": in.Reason}); err != nil {
			return nil, err
		}
		e, err := s.store.InTx(tx).Env(in.Agent, in.Env)
		if err != nil {
			return nil, err
		}
		return &EnvRollback{Env: e, From: cur.Version, To: to}, nil
	}, then...)
	if err != nil {
		return nil, storeErr(err)
	}
	s.store.Announce(ctx, ptr)
	return out, nil
}

// RollbackTarget is the version an env rollback without ToVersion moves e
// to (0: none).
func RollbackTarget(e *promptstore.Env) int { return rollbackTarget(e) }

// rollbackTarget walks the move history, newest first, for the newest
// version the pointer was on that is older than the current one and not
// revoked.
func rollbackTarget(e *promptstore.Env) int {
	revoked := map[int]bool{}
	for _, v := range e.Revoked {
		revoked[v] = true
	}
	for _, m := range e.History {
		if v := m.FromVersion; v > 0 && v < e.Version && !revoked[v] {
			return v
		}
	}
	return 0
}

func fmtErr(err, sentinel error) error {
	if err != nil {
		return err
	}
	return sentinel
}
