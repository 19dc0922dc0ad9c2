package client

import (
	"context"
	"net/http"
)

// ListSessionsOptions filter ListSessions: "" matches any agent, env or
// state ("open", "closed").
type ListSessionsOptions struct {
	Agent, Env, State string
	ListOptions
}

// ListSessions lists sessions newest first (runtime). Items carry no
// metadata, turns or state keys (GetSession has them); Lease is set while
// held. A scoped token's page omits sessions outside its scopes.
func (c *Client) ListSessions(ctx context.Context, o ListSessionsOptions) (*Page[SessionSummary], error) {
	q := o.query()
	for k, v := range map[string]string{"agent": o.Agent, "env": o.Env, "state": o.State} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var p Page[SessionSummary]
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/sessions", query: q}, &p)
	return ret(&p, err)
}

// ListBoards lists boards by name (runtime). A scoped token's page omits
// boards outside its scopes.
func (c *Client) ListBoards(ctx context.Context, o ListOptions) (*Page[BoardSummary], error) {
	var p Page[BoardSummary]
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/boards", query: o.query()}, &p)
	return ret(&p, err)
}
