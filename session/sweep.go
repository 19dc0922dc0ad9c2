package session

import (
	"context"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/sqlstore"
)

// SweepJob names the cluster-singleton job that sweeps sessions: its lock
// key is locks.Keys.Job(SweepJob).
const SweepJob = "session-sweep"

// sweepLeaseTTL is how long a replica that died mid-run keeps the others
// from the job (locks.RunExclusive caps it at locks.MaxRunTTL); a live one
// keeps its lease alive.
const sweepLeaseTTL = locks.MaxRunTTL

// Sweep closes sessions idle past their TTL and deletes closed sessions
// past the retention. It is a cluster-singleton job (locks.RunExclusive on
// the SweepJob key): one replica runs it at a time, a replica that finds
// the lease held returns at once, and the run stops when ctx ends or the
// lease is lost. Each close is conditional on the revision it read, so a
// session written meanwhile stays open; that is also why the sweep runs
// without its lease when the lock store is unavailable.
func (s *Service) Sweep(ctx context.Context) (closed, deleted int, err error) {
	key, err := s.o.Keys.Job(SweepJob)
	if err != nil {
		return 0, 0, err
	}
	_, err = locks.RunExclusive(ctx, s.o.Locker, key, sweepLeaseTTL, func(ctx context.Context) (err error) {
		closed, deleted, err = s.sweep(ctx)
		return err
	}, locks.RunUnlockedIfUnavailable())
	return closed, deleted, err
}

// sweep is one run of the sweep job.
func (s *Service) sweep(ctx context.Context) (closed, deleted int, err error) {
	sctx, cancel := context.WithTimeout(ctx, 6*s.o.SQLTimeout)
	defer cancel()
	db := s.db.WithContext(sctx)
	now := s.o.Now().UnixMilli()
	var idle []struct {
		SessionID, Agent, Env string
		Revision              int64
	}
	if err := db.Raw(`SELECT session_id, agent, env, revision FROM sessions WHERE state = 'open' AND updated_at_ms + idle_ttl_ms < ? LIMIT 500`,
		now).Scan(&idle).Error; err != nil {
		return 0, 0, storeErr(err)
	}
	for _, r := range idle {
		ok, err := sqlstore.Transact(sctx, s.db, func(tx *gorm.DB) (bool, error) {
			res := tx.Exec(`UPDATE sessions SET state = 'closed', revision = revision + 1, closed_at_ms = ?, updated_at_ms = ?
				WHERE session_id = ? AND state = 'open' AND revision = ? AND updated_at_ms + idle_ttl_ms < ?`, now, now, r.SessionID, r.Revision, now)
			if res.Error != nil || res.RowsAffected != 1 {
				return false, res.Error
			}
			return true, s.audit.Append(sctx, tx, audit.Event{Action: "session.swept", Agent: r.Agent, Env: r.Env, SessionID: r.SessionID,
				Resource: "sessions/" + r.SessionID}, map[string]any{"reason": "idle"})
		})
		if err != nil {
			return closed, 0, storeErr(err)
		}
		if ok {
			closed++
			s.pins.drop(r.SessionID)
		}
	}
	var old []string
	if err := db.Raw(`SELECT session_id FROM sessions WHERE state = 'closed' AND closed_at_ms < ? LIMIT 500`,
		now-s.o.Retention.Milliseconds()).Scan(&old).Error; err != nil {
		return closed, 0, storeErr(err)
	}
	for _, id := range old {
		_, err := sqlstore.Transact(sctx, s.db, func(tx *gorm.DB) (bool, error) {
			for _, q := range []string{`DELETE FROM session_turns WHERE session_id = ?`, `DELETE FROM session_state WHERE session_id = ?`,
				`DELETE FROM sessions WHERE session_id = ? AND state = 'closed'`} {
				if err := tx.Exec(q, id).Error; err != nil {
					return false, err
				}
			}
			return true, s.audit.Append(sctx, tx, audit.Event{Action: "session.swept", SessionID: id, Resource: "sessions/" + id},
				map[string]any{"reason": "retention", "deleted": true})
		})
		if err != nil {
			return closed, deleted, storeErr(err)
		}
		deleted++
	}
	return closed, deleted, nil
}
