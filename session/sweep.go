package session

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/sqlstore"
)

// Sweep closes sessions idle past their TTL and deletes closed sessions
// past the retention. It is a cluster-singleton job: one replica runs it at
// a time (a lease per run), and each close is conditional on the revision
// it read, so a session written meanwhile stays open.
func (s *Service) Sweep(ctx context.Context) (closed, deleted int, err error) {
	key, _ := s.o.Keys.Job("session-sweeper")
	lease, err := s.o.Locker.Acquire(ctx, key, time.Minute)
	switch {
	case errors.Is(err, locks.ErrHeld):
		return 0, 0, nil
	case errors.Is(err, locks.ErrUnavailable):
	case err != nil:
		return 0, 0, err
	default:
		defer lease.Release(context.WithoutCancel(ctx))
	}
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
