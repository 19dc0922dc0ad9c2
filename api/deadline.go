package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// extendDeadlines gives a request that is about to wait up to d (a lease
// wait) that much more time on its connection: its write deadline moves to
// now + d + WriteTimeout and its read deadline to now + d + ReadTimeout.
// Without it a wait longer than WriteTimeout (counted from the request's
// headers) ends in a connection the server has already given up on: the
// lease is granted, its answer never arrives, and the lease stays held
// until its TTL. Call it after the body is read, so a slow sender is still
// bounded by ReadTimeout. A writer without deadlines (httptest) is left as
// it is.
func (s *Server) extendDeadlines(c echo.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	now := time.Now()
	rc := http.NewResponseController(c.Response())
	_ = rc.SetWriteDeadline(now.Add(d + s.cfg.WriteTimeout))
	_ = rc.SetReadDeadline(now.Add(d + s.cfg.ReadTimeout))
}
