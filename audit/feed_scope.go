package audit

import (
	"context"
	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// Scope is what a scoped reader may see of the feed: the events whose
// agent, env and board are each "" (naming none) or in its Names, and that
// name at least one of them. Its SQL form is in the feed's query, so that
// out-of-scope events are never read for that reader.
type Scope struct {
	Agents, Envs, Boards sqlstore.Names
}

// None reports that no event is in s.
func (s Scope) None() bool {
	_, _, none := s.cond()
	return none
}

// Match reports whether e is in s (the same answer as its SQL).
func (s Scope) Match(e Event) bool {
	if e.Agent == "" && e.Env == "" && e.Board == "" {
		return false
	}
	return in(s.Agents, e.Agent) && in(s.Envs, e.Env) && in(s.Boards, e.Board)
}

func (s Scope) cond() (string, []any, bool) {
	return sqlstore.Named(sqlstore.Column{Col: "agent", Names: s.Agents}, sqlstore.Column{Col: "env", Names: s.Envs},
		sqlstore.Column{Col: "board", Names: s.Boards})
}

// in: name is "" (names none) or in n.
func in(n sqlstore.Names, name string) bool { return name == "" || n.Contains(name) }

// ReadScopedAfter is ReadAfter of the events in scope (and of one board's
// when board is not ""): the others are not read.
func ReadScopedAfter(ctx context.Context, db *gorm.DB, scope Scope, board string, after int64, limit int) ([]Stamped, error) {
	if scope.None() {
		return nil, nil
	}
	return readAfter(ctx, db, board, &scope, after, limit)
}
