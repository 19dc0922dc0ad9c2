package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/session"
	"github.com/promptd/promptd/wire"
)

// The lists of sessions and boards (issue 17): newest sessions first,
// boards by name. A scoped token's list is filtered by its scopes in the
// query, before the page's limit (as GET /v1/agents), so its pages are
// full; each item is checked again after it.

// handleListSessions: GET /v1/sessions?agent=&env=&state=&limit=&cursor=
// (runtime).
func (s *Server) handleListSessions(c echo.Context) error {
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	t := tokenOf(c)
	f := session.ListFilter{Agent: c.QueryParam("agent"), Env: c.QueryParam("env"), State: c.QueryParam("state"),
		Limit: page.Limit, Cursor: page.Cursor,
		Agents: listScope(t).Names(access.KindAgent), Envs: listScope(t).Names(access.KindEnv)}
	for name, v := range map[string]string{"agent": f.Agent, "env": f.Env} {
		if v == "" && c.QueryParams().Has(name) {
			return invalidField(name, "%s, when given, names one %s", name, name)
		}
	}
	if f.State == "" && c.QueryParams().Has("state") {
		return invalidField("state", "state is open or closed")
	}
	sessions, next, err := s.rt.Sessions.List(c.Request().Context(), f)
	if err != nil {
		return err
	}
	out := list[wire.SessionSummary]{Items: make([]wire.SessionSummary, 0, len(sessions)), Next: cursor(next)}
	for _, ss := range sessions {
		if !visible(t, ss.Agent, ss.Env, "") {
			continue
		}
		out.Items = append(out.Items, sessionSummary(ss))
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return s.send(c, http.StatusOK, out)
}

// handleListBoards: GET /v1/boards?limit=&cursor= (runtime), by name.
func (s *Server) handleListBoards(c echo.Context) error {
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	t := tokenOf(c)
	boards, next, err := s.rt.Boards.ListBoards(c.Request().Context(), page.Limit, page.Cursor, listScope(t).Names(access.KindBoard))
	if err != nil {
		return err
	}
	out := list[wire.BoardSummary]{Items: make([]wire.BoardSummary, 0, len(boards)), Next: cursor(next)}
	for _, b := range boards {
		if visible(t, "", "", b.Board) {
			out.Items = append(out.Items, wire.BoardSummary{Board: b.Board, Revision: b.Revision, CreatedBy: b.CreatedBy, Counts: b.Counts,
				CreatedAt: wire.At(b.CreatedAt), UpdatedAt: wire.At(b.UpdatedAt)})
		}
	}
	return s.send(c, http.StatusOK, out)
}
