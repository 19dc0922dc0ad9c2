package api

import (
	"fmt"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/problem"
)

// scopeNeed is what a /v1 route needs of a scoped token (api/openapi.yaml, Tokens,
// scopes and approvals): the one place scope checks are decided. Every
// /v1 route is registered with its need, beside its role and handler
// (routes.go); registering one without a decision panics at start.
type scopeNeed struct {
	// kind names the decision, for the matrix test and for reading.
	kind string
	// agent, env and board are the path parameters naming the resource.
	agent, env, board string
	// of names the resource of a route on an id (a release, a session),
	// looked up only for scoped tokens.
	of func(s *Server, c echo.Context) (agent, env string, err error)
}

// Decision kinds.
const (
	needPath     = "path"     // the path names the agent, env or board
	needLookup   = "lookup"   // the resource of the path's id names them
	needHandler  = "handler"  // the handler omits what is out of scope, or checks its body (s.allow)
	needUnscoped = "unscoped" // names no agent, env or board: an unscoped token only
	needNone     = "none"     // the token's role is all it needs (a token's own view)
)

func byPath(agent, env, board string) scopeNeed {
	return scopeNeed{kind: needPath, agent: agent, env: env, board: board}
}

var (
	unscopedOnly = scopeNeed{kind: needUnscoped}
	inHandler    = scopeNeed{kind: needHandler}
	agentEnv     = byPath("agent", "env", "")
	agentOnly    = byPath("agent", "", "")
	boardOnly    = byPath("", "", "board")
	byRelease    = scopeNeed{kind: needLookup, of: func(s *Server, c echo.Context) (string, string, error) {
		r, err := s.rt.Releases.Get(c.Request().Context(), c.Param("id"))
		if err != nil {
			return "", "", err
		}
		return r.Agent, r.Env, nil
	}}
	bySession = scopeNeed{kind: needLookup, of: func(s *Server, c echo.Context) (string, string, error) {
		sess, err := s.rt.Sessions.Get(c.Request().Context(), c.Param("id"), 1<<62, 1)
		if err != nil {
			return "", "", err
		}
		return sess.Agent, sess.Env, nil
	}}
)

// scoped wraps h with need's check. It runs after the token's role check,
// and only scoped tokens pay for it.
func (s *Server) scoped(need scopeNeed, h echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		t := tokenOf(c)
		if t == nil || t.Scopes.Unscoped() {
			return h(c)
		}
		switch need.kind {
		case needHandler, needNone:
		case needPath:
			var names [3]string
			for i, p := range []string{need.agent, need.env, need.board} {
				if p == "" {
					continue
				}
				v, err := param(c, p)
				if err != nil {
					return err
				}
				names[i] = v
			}
			if err := s.allow(c, names[0], names[1], names[2]); err != nil {
				return err
			}
		case needLookup:
			agent, env, err := need.of(s, c)
			if err != nil {
				return err
			}
			if err := s.allow(c, agent, env, ""); err != nil {
				return err
			}
		default:
			return problem.OutOfScope("unscoped", "this route names no agent, env or board: it needs an unscoped token")
		}
		return h(c)
	}
}

// allow checks names against the request's token scopes ("" names
// nothing): one out of scope is 403 forbidden with scope.
func (s *Server) allow(c echo.Context, agent, env, board string) error {
	t := tokenOf(c)
	for _, n := range []struct{ kind, name, scope string }{
		{access.KindAgent, agent, "agents"}, {access.KindEnv, env, "envs"}, {access.KindBoard, board, "boards"}} {
		if n.name != "" && !t.Scopes.Allows(n.kind, n.name) {
			return problem.OutOfScope(n.scope, fmt.Sprintf("%s %q is outside token %q's scopes", n.kind, n.name, t.Name))
		}
	}
	return nil
}

// visible reports whether the request's token may see a resource naming
// agent, env and board ("" names nothing): lists, bundles and feeds omit
// what is not. Something that names none of them is visible only to
// unscoped tokens.
func visible(t *access.Token, agent, env, board string) bool {
	if t == nil || t.Scopes.Unscoped() {
		return true
	}
	if agent == "" && env == "" && board == "" {
		return false
	}
	return (agent == "" || t.Scopes.Allows(access.KindAgent, agent)) &&
		(env == "" || t.Scopes.Allows(access.KindEnv, env)) &&
		(board == "" || t.Scopes.Allows(access.KindBoard, board))
}

// listScope is the request token's scopes for a list's query (nil when
// unscoped): a scoped list is filtered in SQL before its limit, so its
// pages are full; visible still checks every item after it.
func listScope(t *access.Token) *access.Scopes {
	if t == nil || t.Scopes.Unscoped() {
		return nil
	}
	return t.Scopes
}
