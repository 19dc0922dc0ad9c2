package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/promptd/promptd/wire"
)

// Lists the console pages through that the API had only in part.

// handleEnvHistory: GET /v1/agents/{agent}/envs/{env}/history, every move
// of the env's pointer newest first, paginated (GET .../envs/{env} shows
// the last 20).
func (s *Server) handleEnvHistory(c echo.Context) error {
	agent, env, err := envPath(c)
	if err != nil {
		return err
	}
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	moves, next, err := s.rt.Prompts.EnvHistory(c.Request().Context(), agent, env, page)
	if err != nil {
		return err
	}
	out := list[wire.Move]{Items: make([]wire.Move, len(moves)), Next: cursor(next)}
	for i, m := range moves {
		out.Items[i] = wire.Move{FromVersion: m.FromVersion, ToVersion: m.ToVersion, Revision: m.Revision,
			Action: m.Action, Reason: m.Reason, Actor: m.Actor, At: wire.At(m.At)}
	}
	return s.send(c, http.StatusOK, out)
}
