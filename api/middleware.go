package api

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/labstack/echo/v4"
)

// unmatched is the route label of requests no route matched, so that
// scanners cannot blow up the metric's cardinality.
const unmatched = "unmatched"

// opsRoutes are logged at debug level when they succeed: probes and
// scrapes would drown everything else.
var opsRoutes = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// observe wraps every request: it gives the request its id (X-Request-Id,
// echoed in the response), turns a panic into an internal error, has the
// error handler answer any error, then logs the request and records its
// latency by route template. It logs the method, route, path (without the
// query), status, size, duration, request id and the token's name: never
// headers, so never a token.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		id := requestIDFor(c.Request().Header.Get(headerRequestID))
		c.Set(ctxRequestID, id)
		c.Response().Header().Set(headerRequestID, id)
		err := recovered(next, c)
		if err != nil {
			c.Error(err) // the response is written now, so its status is known
		}
		d := time.Since(start)
		r, res := c.Request(), c.Response()
		route := routeOf(c, err)
		s.metrics.observe(r.Method, route, res.Status, d)

		level := slog.LevelInfo
		if opsRoutes[route] && res.Status < 300 {
			level = slog.LevelDebug
		}
		if !s.log.Enabled(r.Context(), level) {
			return nil // below the log level: skip building the line
		}
		attrs := []slog.Attr{slog.String("method", r.Method), slog.String("route", route),
			slog.String("path", r.URL.Path), slog.Int("status", res.Status),
			slog.Int64("bytes", res.Size), slog.Float64("duration_ms", float64(d.Microseconds())/1000),
			slog.String("remote", c.RealIP()), slog.String("request_id", id)}
		if actor := actorOf(c); actor != "" {
			attrs = append(attrs, slog.String("actor", actor))
		}
		s.log.LogAttrs(r.Context(), level, "request", attrs...)
		return nil
	}
}

// routeOf is the route template of the request, or unmatched.
func routeOf(c echo.Context, err error) string {
	if errors.Is(err, echo.ErrNotFound) || errors.Is(err, echo.ErrMethodNotAllowed) || c.Path() == "" {
		return unmatched
	}
	return c.Path()
}

// panicError carries a recovered panic to the error handler, which logs
// it (with the stack) as an internal error.
type panicError struct {
	value any
	stack []byte
}

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v\n%s", e.value, e.stack) }

// recovered calls next, turning a panic into a *panicError.
// http.ErrAbortHandler keeps its meaning: abort the response.
func recovered(next echo.HandlerFunc, c echo.Context) (err error) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			err = &panicError{value: v, stack: debug.Stack()}
		}
	}()
	return next(c)
}

// bodyLimit rejects request bodies over the route's limit: at once when
// Content-Length says so, else when a handler reads past it (the handler
// gets an *http.MaxBytesError and returns it; both become
// 413 body_too_large with "limit").
func (s *Server) bodyLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		limit := s.cfg.BodyLimit
		if l, ok := s.limits[c.Path()]; ok {
			limit = l
		}
		r := c.Request()
		if r.ContentLength > limit {
			return &http.MaxBytesError{Limit: limit}
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(c.Response().Writer, r.Body, limit)
		}
		return next(c)
	}
}
