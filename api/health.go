package api

import (
	"context"
	"net/http"
	"sync"

	"github.com/labstack/echo/v4"
)

// Checks probe the stores for /readyz. Each is called with a context
// bounded by Config.CheckTimeout and reports nil when the store answers.
type Checks struct {
	// SQL checks the database. nil reports it down: the server never
	// claims a readiness it cannot verify.
	SQL func(ctx context.Context) error
	// Redis checks Redis; nil means Redis is not configured ("disabled").
	Redis func(ctx context.Context) error
	// Etcd checks the etcd cluster that holds the leases; nil means leases
	// are not on etcd ("disabled").
	Etcd func(ctx context.Context) error
}

// Store states and modes reported by /readyz.
const (
	stateOK       = "ok"
	stateDown     = "down"
	stateDisabled = "disabled"

	modeNormal   = "normal"
	modeDegraded = "degraded"
)

// readiness is the /readyz body.
type readiness struct {
	SQL   string `json:"sql"`
	Redis string `json:"redis"`
	Etcd  string `json:"etcd"`
	Mode  string `json:"mode"`
}

func (s *Server) handleHealthz(c echo.Context) error {
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// handleReadyz reports each store and whether the instance can serve:
//
//	sql   redis     mode      status
//	ok    ok        normal    200
//	ok    disabled  normal    200
//	ok    down      degraded  200  writes go on under SQL conditions; lease routes 503
//	down  ok        degraded  200  resolve serves from the caches and Redis; writes 503
//	down  disabled  degraded  503  only the in-process cache is left: take the instance out
//	down  down      degraded  503  of rotation until a store is back
//
// So 503 means that no store answers, and the body still says which. etcd
// (with the leases on it) does not change the status: while it is down
// lease routes fail and writes go on under their SQL conditions, so the
// mode is degraded.
func (s *Server) handleReadyz(c echo.Context) error {
	r := s.ready(c.Request().Context())
	status := http.StatusOK
	if r.SQL != stateOK && r.Redis != stateOK {
		status = http.StatusServiceUnavailable
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.JSON(status, r)
}

// ready runs the checks concurrently, each bounded by CheckTimeout, and
// records the outcome in the store health metrics.
func (s *Server) ready(ctx context.Context) readiness {
	var r readiness
	var wg sync.WaitGroup
	wg.Go(func() { r.SQL = s.check(ctx, s.cfg.Checks.SQL, stateDown) })
	wg.Go(func() { r.Redis = s.check(ctx, s.cfg.Checks.Redis, stateDisabled) })
	wg.Go(func() { r.Etcd = s.check(ctx, s.cfg.Checks.Etcd, stateDisabled) })
	wg.Wait()
	r.Mode = modeNormal
	if r.SQL != stateOK || r.Redis == stateDown || r.Etcd == stateDown {
		r.Mode = modeDegraded
	}
	s.metrics.storeState("sql", r.SQL)
	s.metrics.storeState("redis", r.Redis)
	s.metrics.storeState("etcd", r.Etcd)
	s.metrics.degraded(r.Mode == modeDegraded)
	return r
}

func (s *Server) check(ctx context.Context, f func(context.Context) error, ifNil string) string {
	if f == nil {
		return ifNil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CheckTimeout)
	defer cancel()
	if err := f(ctx); err != nil {
		s.log.WarnContext(ctx, "readiness check failed", "err", err)
		return stateDown
	}
	return stateOK
}
