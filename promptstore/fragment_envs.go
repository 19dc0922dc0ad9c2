package promptstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/sqlstore"
)

// SetFragmentEnvInput moves a fragment's env pointer: ExpectedRevision 0
// creates it.
type SetFragmentEnvInput struct {
	Name, Env        string
	Version          int
	ExpectedRevision int64
}

// SetFragmentEnv moves (or creates) a fragment's env pointer under its
// revision, in one transaction with its audit event (fragment.env.moved).
// Agent versions already published keep what they pinned: only the next
// publish that names the env resolves it anew.
func (s *Store) SetFragmentEnv(ctx context.Context, in SetFragmentEnvInput, then ...sqlstore.Then[*FragmentEnv]) (*FragmentEnv, error) {
	if err := ident.Validate("name", in.Name); err != nil {
		return nil, invalidID(err)
	}
	if err := ident.Validate("env", in.Env); err != nil {
		return nil, invalidID(err)
	}
	if in.Version < 1 || in.Version >= MaxVersion {
		return nil, invalid(CodeInvalidField, "version", "version must be 1..%d", MaxVersion-1)
	}
	if in.ExpectedRevision < 0 {
		return nil, invalid(CodeInvalidField, "expected_revision", "expected_revision is 0 (create) or the current revision")
	}
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	out, err := sqlstore.Transact(sctx, s.db, func(tx *gorm.DB) (*FragmentEnv, error) {
		if _, err := readFragmentVersion(tx, in.Name, in.Version); err != nil {
			return nil, err
		}
		cur, err := readFragmentEnv(tx, in.Name, in.Env)
		if err != nil && !errors.Is(err, ErrFragmentNotFound) {
			return nil, err
		}
		ms := s.now().UnixMilli()
		actor := audit.Actor(ctx)
		from := 0
		switch {
		case cur == nil && in.ExpectedRevision != 0:
			return nil, &RevisionConflict{Expected: in.ExpectedRevision, Current: 0}
		case cur == nil:
			err := tx.Exec(`INSERT INTO prompt_fragment_envs (name, env, version, revision, updated_at_ms, updated_by) VALUES (?, ?, ?, 1, ?, ?)`,
				in.Name, in.Env, in.Version, ms, actor).Error
			if sqlstore.IsDuplicate(err) {
				return nil, &RevisionConflict{Expected: 0, Current: 1}
			}
			if err != nil {
				return nil, err
			}
		default:
			from = cur.Version
			res := tx.Exec(`UPDATE prompt_fragment_envs SET version = ?, revision = revision + 1, updated_at_ms = ?, updated_by = ?
				WHERE name = ? AND env = ? AND revision = ?`, in.Version, ms, actor, in.Name, in.Env, in.ExpectedRevision)
			if res.Error != nil {
				return nil, res.Error
			}
			if res.RowsAffected != 1 {
				return nil, &RevisionConflict{Expected: in.ExpectedRevision, Current: cur.Revision}
			}
		}
		e, err := readFragmentEnv(tx, in.Name, in.Env)
		if err != nil {
			return nil, err
		}
		if err := s.audit.Append(ctx, tx, audit.Event{Action: "fragment.env.moved", Env: in.Env,
			Resource: fmt.Sprintf("fragments/%s/envs/%s", in.Name, in.Env)},
			map[string]any{"from_version": from, "to_version": in.Version, "revision": e.Revision}); err != nil {
			return nil, err
		}
		return e, nil
	}, then...)
	if err != nil {
		return nil, storeErr(err)
	}
	return out, nil
}

func readFragmentEnv(db *gorm.DB, name, env string) (*FragmentEnv, error) {
	var rows []struct {
		Name, Env, UpdatedBy string
		Version              int
		Revision             int64
		UpdatedAtMs          int64
	}
	if err := db.Raw(`SELECT name, env, version, revision, updated_at_ms, updated_by FROM prompt_fragment_envs WHERE name = ? AND env = ?`,
		name, env).Scan(&rows).Error; err != nil {
		return nil, storeErr(sqlstore.Translate(err))
	}
	if len(rows) == 0 {
		return nil, ErrFragmentNotFound
	}
	r := rows[0]
	return &FragmentEnv{Name: r.Name, Env: r.Env, Version: r.Version, Revision: r.Revision, UpdatedAt: time.UnixMilli(r.UpdatedAtMs).UTC(),
		UpdatedBy: r.UpdatedBy}, nil
}

// GetFragmentEnv returns a fragment's env pointer.
func (s *Store) GetFragmentEnv(ctx context.Context, name, env string) (*FragmentEnv, error) {
	if err := ident.Validate("name", name); err != nil {
		return nil, invalidID(err)
	}
	if err := ident.Validate("env", env); err != nil {
		return nil, invalidID(err)
	}
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	return readFragmentEnv(s.db.WithContext(sctx), name, env)
}
