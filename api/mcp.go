package api

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/internal/buildinfo"
	"github.com/promptd/promptd/mcpserver"
)

// routeMCP registers /v1/mcp/{env}: the Model Context Protocol over
// streamable HTTP (mcpserver.Service.Handler), POST for the client's
// messages, GET for the server's stream, DELETE to end a session. The
// route has the bearer authentication, body limit and connection limits
// of every route (runtime role; a token scoped away from env is 403 at
// the route, its agents and boards are filtered by the MCP server). A
// GET stream outlives the write timeout: it takes one of the token's
// stream slots (as an event stream does), and ends when its token is
// revoked or expires and at Shutdown.
func (s *Server) routeMCP(v1 composed, mw []echo.MiddlewareFunc) {
	svc := mcpserver.New(s.rt, mcpserver.Options{Logger: s.log, Version: buildinfo.Release()})
	h := svc.Handler(mcpserver.HandlerOptions{MaxBodyBytes: s.cfg.BodyLimit})
	handle := func(c echo.Context) error {
		if s.cfg.MCPOff {
			return &Error{Code: "not_found", Detail: "the MCP server is turned off on this server (PROMPTD_MCP=false)"}
		}
		env, err := pathID(c, "env")
		if err != nil {
			return err
		}
		r := c.Request()
		ctx := r.Context()
		if r.Method == http.MethodGet {
			token := actorOf(c)
			if !s.streams.take(token) {
				return (&Error{Code: "quota_exceeded", Detail: "this token has too many open event streams and waits on this instance"}).
					WithHeader("Retry-After", "1")
			}
			defer s.streams.give(token)
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer cancel()
			defer context.AfterFunc(s.closing, cancel)()
			if t := tokenOf(c); t != nil && !t.Bootstrap {
				go s.watchToken(ctx, r, cancel)
			}
			_ = http.NewResponseController(c.Response()).SetWriteDeadline(time.Time{})
		}
		h.ServeHTTP(c.Response(), r.WithContext(mcpserver.Authenticated(ctx, tokenOf(c), env)))
		return nil
	}
	need := byPath("", "env", "")
	v1.GET("/mcp/:env", need, handle, mw...)
	v1.POST("/mcp/:env", need, handle, mw...)
	v1.DELETE("/mcp/:env", need, handle, mw...)
}
