package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/ident"
)

// agentResponse is an agent's summary.
type agentResponse struct {
	Agent             string         `json:"agent"`
	LatestVersion     int            `json:"latest_version"`
	LatestContentHash string         `json:"latest_content_hash"`
	Envs              map[string]int `json:"envs"`
}

// handleListAgents: GET /v1/agents, by name (the cursor is the last name
// of the previous page).
func (s *Server) handleListAgents(c echo.Context) error {
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	if page.Cursor != "" && ident.Validate("cursor", page.Cursor) != nil {
		return invalidField("cursor", "cursor must be the next value of a previous page")
	}
	t := tokenOf(c)
	page.Agents = listScope(t).Names(access.KindAgent)
	as, next, err := s.rt.Prompts.ListAgents(c.Request().Context(), page)
	if err != nil {
		return err
	}
	out := list[agentResponse]{Items: make([]agentResponse, 0, len(as)), Next: cursor(next)}
	for _, a := range as {
		if !visible(t, a.Agent, "", "") {
			continue // the query kept only the token's agents; this is the check after it
		}
		envs := a.Envs
		if !t.Scopes.Unscoped() {
			envs = map[string]int{}
			for env, v := range a.Envs {
				if visible(t, a.Agent, env, "") {
					envs[env] = v
				}
			}
		}
		out.Items = append(out.Items, agentResponse{Agent: a.Agent, LatestVersion: a.LatestVersion, LatestContentHash: a.LatestContentHash, Envs: envs})
	}
	return s.send(c, http.StatusOK, out)
}
