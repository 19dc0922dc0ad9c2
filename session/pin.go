package session

import (
	"context"
	"sync"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/prompt"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/sqlstore"
)

// pin is what resolution needs of a session.
type pin struct {
	agent, env, user string
	version          int
	open             bool
}

// pinCache keeps pins of recently resolved sessions, so resolve answers
// from memory (and while SQL is down). Entries are dropped on close and
// re-pin events; the whole map is reset when it reaches its bound.
type pinCache struct {
	mu  sync.RWMutex
	max int
	m   map[string]pin
}

func newPinCache(max int) *pinCache { return &pinCache{max: max, m: map[string]pin{}} }

func (c *pinCache) get(id string) (pin, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := c.m[id]
	return p, ok
}

func (c *pinCache) put(id string, p pin) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		c.m = map[string]pin{}
	}
	c.m[id] = p
}

func (c *pinCache) drop(id string) {
	c.mu.Lock()
	delete(c.m, id)
	c.mu.Unlock()
}

// Resolver puts the session pin in front of next (release arm -> env
// pointer): a session's pinned version is served unless it was revoked in
// the env; then the session is re-pinned once, with a conditional update
// of the pin, to what next gives.
type Resolver struct {
	S    *Service
	Next promptstore.Resolver
}

// Resolve implements promptstore.Resolver.
func (r Resolver) Resolve(ctx context.Context, req promptstore.Request) (promptstore.Resolution, error) {
	if req.SessionID == "" {
		return r.Next.Resolve(ctx, req)
	}
	p, err := r.S.pin(ctx, req.SessionID)
	switch {
	case err != nil:
		return promptstore.Resolution{}, err
	case !p.open:
		return promptstore.Resolution{}, ErrClosed
	case p.agent != req.Agent || p.env != req.Env:
		return promptstore.Resolution{}, ErrMismatch
	}
	if p.user != "" {
		req.UserID = p.user // the session's user wins
	}
	// Next (release arm -> env pointer) says what the caller would get
	// now and which versions the env revoked.
	res, err := r.Next.Resolve(ctx, req)
	if err != nil {
		return promptstore.Resolution{}, err
	}
	if !res.Revoked[p.version] {
		// While a release is active the trace names it and the arm of
		// the pinned version, reason "pinned".
		return promptstore.Resolution{Agent: req.Agent, Env: req.Env, Version: p.version, Pinned: true,
			Release:         prompt.Pinned(res.ActiveRelease, res.Release, p.version),
			ActiveReleaseID: res.ActiveReleaseID, Revoked: res.Revoked, ActiveRelease: res.ActiveRelease}, nil
	}
	now, err := r.S.repin(ctx, req.SessionID, p, res.Version)
	if err != nil {
		return promptstore.Resolution{}, err
	}
	from := p.version
	res.Version, res.Pinned, res.RepinnedFrom = now, true, &from
	return res, nil
}

func (s *Service) pin(ctx context.Context, id string) (pin, error) {
	if p, ok := s.pins.get(id); ok {
		return p, nil
	}
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	row, err := readSession(s.db.WithContext(sctx), id)
	if err != nil {
		return pin{}, storeErr(err)
	}
	p := pin{agent: row.Agent, env: row.Env, user: row.UserID, version: row.PinnedVersion, open: row.State == Open}
	s.pins.put(id, p)
	return p, nil
}

// repin moves the session's pin from p.version to version with a
// conditional update; if another instance re-pinned first, its pin wins.
func (s *Service) repin(ctx context.Context, id string, p pin, version int) (int, error) {
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	now, err := sqlstore.Transact(sctx, s.db, func(tx *gorm.DB) (int, error) {
		res := tx.Exec(`UPDATE sessions SET pinned_version = ? WHERE session_id = ? AND pinned_version = ?`, version, id, p.version)
		if res.Error != nil {
			return 0, res.Error
		}
		if res.RowsAffected == 0 {
			row, err := readSession(tx, id)
			if err != nil {
				return 0, err
			}
			return row.PinnedVersion, nil
		}
		return version, s.audit.Append(ctx, tx, audit.Event{Action: "session.repinned", Agent: p.agent, Env: p.env, SessionID: id,
			Resource: "sessions/" + id}, map[string]any{"from_version": p.version, "to_version": version})
	})
	if err != nil {
		return 0, storeErr(err)
	}
	p.version = now
	s.pins.put(id, p)
	return now, nil
}
