package api

import (
	"net/http"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/release"
)

// DefaultBundleMaxBytes is the largest GET /v1/bundle answer by default
// (32 MiB, PROMPTD_BUNDLE_MAX_BYTES).
const DefaultBundleMaxBytes = 32 << 20

// handleBundle: GET /v1/bundle?agents=a,b&envs=prod,staging (runtime).
// Everything an SDK needs to resolve locally, read in one snapshot with
// the feed position it reflects (release.Service.Bundle). Without agents
// or envs: all of them; names that do not exist are absent. The ETag
// digests the bundle's content (its configs by their content hashes) and
// is known before any config is read: If-None-Match that matches is a 304
// that read the small rows only. Vary: Authorization, since what a token
// sees depends on its scope.
func (s *Server) handleBundle(c echo.Context) error {
	rs := s.rt.Releases
	var err error
	q := release.BundleQuery{MaxConfigBytes: s.cfg.BundleMaxBytes}
	if q.Agents, err = nameList(c, "agents"); err != nil {
		return err
	}
	if q.Envs, err = nameList(c, "envs"); err != nil {
		return err
	}
	// A scoped token: a named agent or env out of its scope is 403 before
	// anything is read; unnamed ones out of scope are left out.
	if t := tokenOf(c); t != nil && !t.Scopes.Unscoped() {
		for _, a := range q.Agents {
			if err := s.allow(c, a, "", ""); err != nil {
				return err
			}
		}
		for _, e := range q.Envs {
			if err := s.allow(c, "", e, ""); err != nil {
				return err
			}
		}
		q.Visible = func(agent, env string) bool { return visible(t, agent, env, "") }
	}
	inm := c.Request().Header.Get("If-None-Match")
	var (
		cached  []byte // a body this instance built for the same content
		refused error  // the heavy bound's answer, when a build was refused
		done    func()
	)
	q.IfNoneMatch = func(etag string) bool {
		if inm != "" && etagMatches(inm, etag) {
			return true
		}
		if cached = s.bundleBodies.get(etag); cached != nil {
			return true
		}
		// The configs are to be read and the body built: a heavy request,
		// bounded (heavy.go); decided here without waiting, inside the
		// bundle's read transaction.
		done, refused = s.heavyGate.enter(c.Request().Context(), actorOf(c), 0)
		return refused != nil // refused: read no config either
	}
	b, err := rs.Bundle(c.Request().Context(), q)
	if done != nil {
		defer done()
	}
	if err != nil {
		return err
	}
	if refused != nil {
		return refused
	}
	h := c.Response().Header()
	h.Set("ETag", b.ETag)
	h.Set(echo.HeaderVary, echo.HeaderAuthorization)
	h.Set(echo.HeaderCacheControl, "private, no-cache")
	if b.NotModified && cached == nil {
		return notModified(c) // decided before any config was read
	}
	body := cached
	if body == nil {
		if body, err = encodeJSON(b); err != nil {
			return err
		}
		if int64(len(body)) > s.cfg.BundleMaxBytes {
			h.Del("ETag")
			return &release.BundleTooLarge{Limit: s.cfg.BundleMaxBytes}
		}
		s.bundleBodies.put(b.ETag, body)
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, body)
}

// bundleCacheBytes bounds the bundle bodies an instance keeps.
const bundleCacheBytes = 64 << 20

// bodyCache keeps the most recently built bundle bodies by ETag (a digest
// of the content, the cursor included, so one ETag is one body whatever
// token asked): clients that fetch the same bundle share one body instead
// of each reading the configs and encoding it again. Bounded by bytes; a
// body is never changed once kept.
type bodyCache struct {
	mu    sync.Mutex
	max   int
	bytes int
	order []string // oldest first
	m     map[string][]byte
}

func newBodyCache(max int) *bodyCache { return &bodyCache{max: max, m: map[string][]byte{}} }

func (c *bodyCache) get(etag string) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[etag]
}

func (c *bodyCache) put(etag string, body []byte) {
	if len(body) > c.max/2 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[etag]; ok {
		return
	}
	c.m[etag], c.bytes, c.order = body, c.bytes+len(body), append(c.order, etag)
	for c.bytes > c.max {
		old := c.order[0]
		c.order = c.order[1:]
		c.bytes -= len(c.m[old])
		delete(c.m, old)
	}
}

// nameList reads a comma-separated list of identifiers from the query
// (nil when the parameter is absent); the domain checks each name.
func nameList(c echo.Context, name string) ([]string, error) {
	if !c.QueryParams().Has(name) {
		return nil, nil
	}
	vals := c.QueryParams()[name]
	if len(vals) > 1 {
		return nil, invalidField(name, "%s may be given once (a comma-separated list)", name)
	}
	return strings.Split(vals[0], ","), nil
}
