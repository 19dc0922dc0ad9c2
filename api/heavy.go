package api

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/sync/semaphore"
)

// Heavy requests build or stream an answer from many rows: the bundle,
// assemble, history, version and record lists, diffs, exports of the
// audit log. Each instance bounds them (Config.HeavyPerToken,
// Config.HeavyMax): one token cannot hold more than its share of the
// database's readers and of the memory answers are built in, and the
// instance as a whole never builds more than HeavyMax at once, so memory
// stays bounded whatever the concurrency (api/openapi.yaml, Limits).
const (
	// DefaultHeavyPerToken is PROMPTD_HEAVY_PER_TOKEN's default.
	DefaultHeavyPerToken = 4
	// DefaultHeavyMax is PROMPTD_HEAVY_MAX's default.
	DefaultHeavyMax = 16
	// heavyWait is how long a heavy request waits for one of the
	// instance's slots before it is answered 503 (Retry-After: 1).
	heavyWait = 2 * time.Second
)

// heavyGate is the bound: per-token counts and the instance's semaphore.
type heavyGate struct {
	perToken *streamSlots
	all      *semaphore.Weighted
	max      int
}

func newHeavyGate(perToken, all int) *heavyGate {
	return &heavyGate{perToken: &streamSlots{open: map[string]int{}, limit: perToken}, all: semaphore.NewWeighted(int64(all)), max: all}
}

// heavy is the middleware of the heavy routes (after authentication).
func (s *Server) heavy(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		g := s.heavyGate
		token := actorOf(c)
		if !g.perToken.take(token) {
			return (&Error{Code: "quota_exceeded", Detail: fmt.Sprintf(
				"this token has %d heavy requests (bundles, assembles, large lists) in flight on this instance; retry when one ends", g.perToken.limit)}).
				With("limit", strconv.Itoa(g.perToken.limit)).WithHeader("Retry-After", "1")
		}
		defer g.perToken.give(token)
		ctx, cancel := context.WithTimeout(c.Request().Context(), heavyWait)
		err := g.all.Acquire(ctx, 1)
		cancel()
		if err != nil {
			if c.Request().Context().Err() != nil {
				return c.Request().Context().Err()
			}
			return (&Error{Code: "overloaded", Detail: fmt.Sprintf(
				"this instance is building %d heavy answers already; retry shortly", g.max)}).WithHeader("Retry-After", "1")
		}
		defer g.all.Release(1)
		return next(c)
	}
}
