package session

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/promptd/promptd/sqlstore"
)

// ListFilter selects sessions for List; "" matches any agent, env or
// state. Cursor is the next of a previous page (opaque to clients).
// Agents and Envs (a scoped token's) limit the list in its query, before
// the page's limit; nil: every name.
type ListFilter struct {
	Agent, Env, State string
	Limit             int
	Cursor            string
	Agents, Envs      sqlstore.Names
}

// List returns sessions newest first (created_at, then id, both
// descending) and the cursor of the next page ("" at the end). The cursor
// names the last session of the page, so sessions created between pages
// (newer than it) never shift the pages after it: no session is listed
// twice or skipped. Open sessions carry their lease holder (nil when free
// or when the lock backend cannot tell); turns and state keys are not read.
func (s *Service) List(ctx context.Context, f ListFilter) ([]*Session, string, error) {
	for field, v := range map[string]string{"agent": f.Agent, "env": f.Env} {
		if v != "" {
			if err := validID(field, v); err != nil {
				return nil, "", err
			}
		}
	}
	if f.State != "" && f.State != Open && f.State != Closed {
		return nil, "", invalidf("state", "state is open or closed")
	}
	if f.Limit <= 0 {
		return nil, "", invalidf("limit", "limit must be positive")
	}
	if f.Agents.None() || f.Envs.None() {
		return []*Session{}, "", nil
	}
	q := `SELECT ` + sessionCols + ` FROM sessions WHERE 1 = 1`
	var args []any
	for _, c := range []struct {
		col   string
		names sqlstore.Names
	}{{"agent", f.Agents}, {"env", f.Envs}} {
		if cond, a := c.names.Cond(c.col); cond != "" {
			q += ` AND ` + cond
			args = append(args, a...)
		}
	}
	for _, c := range []struct{ col, v string }{{"agent", f.Agent}, {"env", f.Env}, {"state", f.State}} {
		if c.v != "" {
			q += ` AND ` + c.col + ` = ?`
			args = append(args, c.v)
		}
	}
	if f.Cursor != "" {
		ms, id, ok := parseCursor(f.Cursor)
		if !ok {
			return nil, "", invalidf("cursor", "cursor is not one this list returned")
		}
		q += ` AND (created_at_ms < ? OR (created_at_ms = ? AND session_id < ?))`
		args = append(args, ms, ms, id)
	}
	q += ` ORDER BY created_at_ms DESC, session_id DESC LIMIT ?`
	args = append(args, f.Limit+1)
	sctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	var rows []sessionRow
	if err := s.db.WithContext(sctx).Raw(q, args...).Scan(&rows).Error; err != nil {
		return nil, "", storeErr(err)
	}
	next := ""
	if len(rows) > f.Limit {
		rows = rows[:f.Limit]
		l := rows[len(rows)-1]
		next = fmt.Sprintf("%d:%s", l.CreatedAtMs, l.SessionID)
	}
	out := make([]*Session, len(rows))
	// The open sessions' holders are asked of the lock backend a few at a
	// time, not one after another: a page of 500 open sessions is 500
	// round trips to Redis or etcd.
	var wg sync.WaitGroup
	slots := make(chan struct{}, listHolderLookups)
	for i := range rows {
		out[i] = rows[i].session()
		if rows[i].State != Open {
			continue
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if info, err := s.o.Locker.Holder(ctx, s.key(rows[i].SessionID)); err == nil {
				out[i].Lease = &LeaseInfo{Holder: info.Holder, Fence: info.Fence, ExpiresAt: info.ExpiresAt.UTC()}
			}
		})
	}
	wg.Wait()
	return out, next, nil
}

// listHolderLookups bounds the lease holder lookups one List makes at once.
const listHolderLookups = 16

// parseCursor reads "<created_at_ms>:<session_id>".
func parseCursor(c string) (int64, string, bool) {
	ms, id, ok := strings.Cut(c, ":")
	if !ok {
		return 0, "", false
	}
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil || n < 0 || validID("cursor", id) != nil {
		return 0, "", false
	}
	return n, id, true
}
