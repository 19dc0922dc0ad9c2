package api

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/sync/semaphore"
)

// Heavy requests build or stream an answer from many rows: a bundle that
// must be built (not a 304, not a body this instance kept), history,
// version and record lists, diffs, the audit log. The runtime's hot path
// (resolve, assemble, session reads and writes) is not: a fleet of agents
// shares one runtime token, and each of those answers is bounded on its
// own (PROMPTD_ASSEMBLE_MAX_BYTES, PROMPTD_SESSION_PAGE_BYTES). Each instance bounds them (Config.HeavyPerToken,
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
		done, err := s.heavyGate.enter(c.Request().Context(), actorOf(c), heavyWait)
		if err != nil {
			return err
		}
		defer done()
		return next(c)
	}
}

// enter takes one of token's slots and one of the instance's, waiting up
// to wait for the latter (0: not at all); done gives them back.
func (g *heavyGate) enter(ctx context.Context, token string, wait time.Duration) (done func(), err error) {
	if !g.perToken.take(token) {
		return nil, (&Error{Code: "quota_exceeded", Detail: fmt.Sprintf(
			"this token has %d heavy requests (bundles it must build, large lists, diffs) in flight on this instance; retry when one ends", g.perToken.limit)}).
			With("limit", strconv.Itoa(g.perToken.limit)).WithHeader("Retry-After", "1")
	}
	got := g.all.TryAcquire(1)
	if !got && wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		got = g.all.Acquire(wctx, 1) == nil
		cancel()
		if !got && ctx.Err() != nil {
			g.perToken.give(token)
			return nil, ctx.Err()
		}
	}
	if !got {
		g.perToken.give(token)
		return nil, (&Error{Code: "overloaded", Detail: fmt.Sprintf(
			"this instance is building %d heavy answers already; retry shortly", g.max)}).WithHeader("Retry-After", "1")
	}
	return func() { g.all.Release(1); g.perToken.give(token) }, nil
}
