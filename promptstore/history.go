package promptstore

import (
	"context"
	"strconv"
	"time"

	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/sqlstore"
)

// EnvHistory pages through every move of an env's pointer, newest first:
// GetEnv shows only the last HistoryLength. The cursor is the last move's
// row id. An agent without versions is ErrAgentNotFound; an env never
// pointed at has no moves.
func (s *Store) EnvHistory(ctx context.Context, agent, env string, p Page) ([]Move, string, error) {
	if err := ident.Validate("agent", agent); err != nil {
		return nil, "", invalidID(err)
	}
	if err := ident.Validate("env", env); err != nil {
		return nil, "", invalidID(err)
	}
	before := int64(1<<63 - 1)
	if p.Cursor != "" {
		n, err := strconv.ParseInt(p.Cursor, 10, 64)
		if err != nil || n < 1 {
			return nil, "", invalid(CodeInvalidField, "cursor", "bad cursor")
		}
		before = n
	}
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	var rows []struct {
		ID                     int64
		FromVersion, ToVersion int
		Revision               int64
		Action, Reason, Actor  string
		AtMs                   int64
	}
	db := s.db.WithContext(ctx)
	err := db.Raw(`SELECT id, from_version, to_version, revision, action, reason, actor, at_ms FROM prompt_pointer_moves
		WHERE agent = ? AND env = ? AND id < ? ORDER BY id DESC LIMIT ?`, agent, env, before, p.Limit+1).Scan(&rows).Error
	if err != nil {
		return nil, "", storeErr(sqlstore.Translate(err))
	}
	if len(rows) == 0 && p.Cursor == "" {
		if err := absent(db, agent, nil); err != nil {
			return nil, "", err
		}
	}
	next := ""
	if len(rows) > p.Limit {
		rows = rows[:p.Limit]
		next = strconv.FormatInt(rows[len(rows)-1].ID, 10)
	}
	out := make([]Move, len(rows))
	for i, m := range rows {
		out[i] = Move{FromVersion: m.FromVersion, ToVersion: m.ToVersion, Revision: m.Revision, Action: m.Action, Reason: m.Reason,
			Actor: m.Actor, At: time.UnixMilli(m.AtMs).UTC()}
	}
	return out, next, nil
}
