package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// ErrPromptRevoked: promptd resolved a version that its env reports as
// revoked (an instance that has not caught up yet); the cache serves
// nothing rather than a revoked version.
var ErrPromptRevoked = errors.New("promptd: the resolved version is revoked in the env")

// PromptCache is a runtime's cache of resolved prompts, one entry per
// agent, env, user and session. Get answers from memory while the entry
// was validated within MaxAge (5 s by default); then one caller
// revalidates it with If-None-Match (304 when nothing changed) while the
// others keep getting the cached prompt. Each revalidation also reads the
// env's revoked list (with If-None-Match on its revision), and a version
// that promptd reports as revoked is dropped, never served. When promptd
// is unreachable (transport error, timeout, 5xx) the last good prompt is
// served; an authoritative refusal (404, 409, 401, 403, ...) drops it.
type PromptCache struct {
	c          *Client
	maxAge     time.Duration
	timeout    time.Duration
	maxEntries int
	onError    func(agent, env string, err error)

	mu      sync.Mutex
	entries map[cacheKey]*cacheEntry

	streamMaxAge time.Duration
	streaming    atomic.Bool // Follow's stream is up: entries are invalidated by events
	applied      atomic.Int64

	hits, revalidations, notModified, changed, staleServed, dropped atomic.Int64
}

// CacheOption configures a PromptCache.
type CacheOption func(*PromptCache)

// CacheMaxAge sets how long a validated prompt is served before it is
// revalidated (default 5 s).
func CacheMaxAge(d time.Duration) CacheOption { return func(pc *PromptCache) { pc.maxAge = d } }

// CacheTimeout bounds one revalidation (default 2 s): a promptd that does
// not answer in time is unreachable, and the last good prompt is served.
func CacheTimeout(d time.Duration) CacheOption { return func(pc *PromptCache) { pc.timeout = d } }

// CacheMaxEntries bounds the number of callers cached (default 100,000);
// past it, arbitrary entries are evicted (and fetched again when asked).
func CacheMaxEntries(n int) CacheOption { return func(pc *PromptCache) { pc.maxEntries = max(n, 1) } }

// CacheStreamMaxAge sets how long a validated prompt is served while
// Follow's stream is up (default 1 min): events invalidate entries at
// once, and this only bounds what a lost event could cost.
func CacheStreamMaxAge(d time.Duration) CacheOption {
	return func(pc *PromptCache) { pc.streamMaxAge = d }
}

// CacheOnError is called with each revalidation error (for logs and
// metrics), whether the last good prompt was served or dropped.
func CacheOnError(f func(agent, env string, err error)) CacheOption {
	return func(pc *PromptCache) { pc.onError = f }
}

// NewPromptCache returns an empty cache that fetches through c.
func (c *Client) NewPromptCache(opts ...CacheOption) *PromptCache {
	pc := &PromptCache{c: c, maxAge: 5 * time.Second, timeout: 2 * time.Second, maxEntries: 100_000,
		entries: map[cacheKey]*cacheEntry{}, streamMaxAge: time.Minute}
	for _, o := range opts {
		o(pc)
	}
	return pc
}

type cacheKey struct{ agent, env, user, session string }

type cacheEntry struct {
	mu      sync.Mutex
	prompt  *Prompt       // last good prompt, nil when none
	checked time.Time     // when it was last validated (or an outage seen)
	busy    chan struct{} // closed when the revalidation in flight ends
	envTag  string        // ETag of the env as last read
	revoked []int         // the env's revoked versions as last read
	gen     uint64        // bumped by each invalidation
	evicted []int         // versions revoked by events since the last revalidation began
}

// CacheStats counts what the cache did.
type CacheStats struct {
	Hits          int64 // answered from memory
	Revalidations int64 // asked promptd
	NotModified   int64 // promptd answered 304
	Changed       int64 // promptd answered a new prompt
	StaleServed   int64 // promptd unreachable: the last good prompt served
	Dropped       int64 // a prompt dropped: revoked, or refused by promptd
}

// Stats returns the counters.
func (pc *PromptCache) Stats() CacheStats {
	return CacheStats{Hits: pc.hits.Load(), Revalidations: pc.revalidations.Load(), NotModified: pc.notModified.Load(),
		Changed: pc.changed.Load(), StaleServed: pc.staleServed.Load(), Dropped: pc.dropped.Load()}
}

// Get returns the prompt of agent in env for the caller (userID and
// sessionID may be empty). The *Prompt is shared: do not modify it.
func (pc *PromptCache) Get(ctx context.Context, agent, env, userID, sessionID string) (*Prompt, error) {
	k := cacheKey{agent, env, userID, sessionID}
	pc.mu.Lock()
	e := pc.entries[k]
	if e == nil {
		for victim := range pc.entries { // map order is random enough
			if len(pc.entries) < pc.maxEntries {
				break
			}
			delete(pc.entries, victim)
		}
		e = &cacheEntry{}
		pc.entries[k] = e
	}
	pc.mu.Unlock()
	for {
		maxAge := pc.maxAge
		if pc.streaming.Load() {
			maxAge = max(maxAge, pc.streamMaxAge)
		}
		e.mu.Lock()
		fresh := e.prompt != nil && time.Since(e.checked) < maxAge
		if fresh || (e.prompt != nil && e.busy != nil) {
			p := e.prompt
			e.mu.Unlock()
			pc.hits.Add(1)
			return p, nil
		}
		if wait := e.busy; wait != nil { // the first fetch is in flight
			e.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		busy := make(chan struct{})
		e.busy = busy
		old, etag, envTag, revoked, gen := e.prompt, "", e.envTag, e.revoked, e.gen
		e.evicted = nil
		if old != nil {
			etag = old.ETag
		}
		e.mu.Unlock()

		r := pc.revalidate(ctx, k, old, etag, envTag, revoked)

		e.mu.Lock()
		if r.prompt != nil && contains(e.evicted, r.prompt.Version) {
			// revoked by an event while promptd answered from before it
			r = pc.drop(r, fmt.Errorf("%w: %s/%s version %d", ErrPromptRevoked, agent, env, r.prompt.Version))
		}
		e.prompt, e.envTag, e.revoked = r.prompt, r.envTag, r.revoked
		if r.validated && e.gen == gen { // an event during the revalidation: ask again next time
			e.checked = time.Now()
		}
		e.busy = nil
		close(busy)
		e.mu.Unlock()
		if r.err != nil && pc.onError != nil {
			pc.onError(agent, env, r.err)
		}
		if r.prompt == nil {
			return nil, r.err
		}
		return r.prompt, nil
	}
}

type revalidation struct {
	prompt    *Prompt // what to keep and serve (nil: nothing)
	validated bool    // promptd was asked and answered, or is unreachable
	envTag    string
	revoked   []int
	err       error
}

func (pc *PromptCache) revalidate(ctx context.Context, k cacheKey, old *Prompt, etag, envTag string, revoked []int) revalidation {
	pc.revalidations.Add(1)
	ctx, cancel := context.WithTimeout(ctx, pc.timeout)
	defer cancel()
	out := revalidation{prompt: old, envTag: envTag, revoked: revoked}
	p, modified, err := pc.c.Revalidate(ctx, k.agent, k.env, Caller{UserID: k.user, SessionID: k.session}, etag)
	if err != nil {
		return pc.failed(out, err)
	}
	if modified {
		pc.changed.Add(1)
		out.prompt = p
	} else {
		pc.notModified.Add(1)
	}
	env, tag, err := pc.c.envIfNoneMatch(ctx, k.agent, k.env, envTag)
	switch {
	case err != nil && (Unreachable(err) || errors.Is(err, context.Canceled)):
		// The prompt answered but the env did not: keep the last known list.
	case err != nil:
		return pc.drop(out, err)
	case env != nil:
		out.envTag, out.revoked = tag, env.Revoked
	}
	if out.prompt != nil && contains(out.revoked, out.prompt.Version) {
		return pc.drop(out, fmt.Errorf("%w: %s/%s version %d", ErrPromptRevoked, k.agent, k.env, out.prompt.Version))
	}
	out.validated = true
	return out
}

// failed: promptd could not answer (serve the last good prompt) or
// refused (drop it).
func (pc *PromptCache) failed(out revalidation, err error) revalidation {
	out.err = err
	if errors.Is(err, context.Canceled) { // the caller gave up: nothing learnt
		return out
	}
	if !Unreachable(err) || out.prompt == nil {
		return pc.drop(out, err)
	}
	pc.staleServed.Add(1)
	out.validated = true // wait MaxAge before asking again
	return out
}

func (pc *PromptCache) drop(out revalidation, err error) revalidation {
	if out.prompt != nil {
		pc.dropped.Add(1)
	}
	out.prompt, out.err, out.validated = nil, err, false
	return out
}

// envIfNoneMatch reads an env pointer with If-None-Match: etag; a 304
// returns (nil, etag, nil).
func (c *Client) envIfNoneMatch(ctx context.Context, agent, env, etag string) (*Env, string, error) {
	k := call{method: http.MethodGet, path: envPath(agent, env)}
	if etag != "" {
		k.header = map[string]string{"If-None-Match": etag}
	}
	var e Env
	resp, err := c.do(ctx, k, &e)
	if err != nil {
		return nil, etag, err
	}
	if resp.StatusCode == http.StatusNotModified {
		return nil, etag, nil
	}
	return &e, resp.Header.Get("ETag"), nil
}

func contains(vs []int, v int) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// Len is the number of callers cached.
func (pc *PromptCache) Len() int {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return len(pc.entries)
}

// followActions are the events that change what an env resolves to.
var followActions = []string{"pointer.switched", "version.revoked", "version.unrevoked", "release.*", "env.rolled_back"}

// Follow keeps the cache current from promptd's change feed until ctx
// ends: a pointer switch, rollback, release change or revocation of an
// agent's env invalidates its entries at once (the next Get revalidates),
// and a revoked version is dropped before anyone can be served it. While
// the stream is up, entries are served up to CacheStreamMaxAge; when it is
// down (Follow reconnects with Last-Event-ID, missing nothing), the cache
// falls back to revalidating every MaxAge. Run it in a goroutine; it
// returns ctx's error, or an authoritative refusal (a bad token).
func (pc *PromptCache) Follow(ctx context.Context) error {
	defer pc.streaming.Store(false)
	return pc.c.Subscribe(ctx, Subscription{
		Filter:  EventFilter{Actions: followActions},
		OnEvent: pc.apply,
		OnState: func(up bool, _ error) {
			if up && !pc.streaming.Load() {
				// What changed while no stream was up is not known:
				// revalidate everything once (cheap 304s).
				pc.invalidate(func(cacheKey) bool { return true }, 0)
			}
			pc.streaming.Store(up)
		},
		OnReset: func() { pc.invalidate(func(cacheKey) bool { return true }, 0) },
	})
}

// apply invalidates the entries an event changes.
func (pc *PromptCache) apply(ev Event) {
	pc.applied.Add(1)
	if ev.Agent == "" {
		pc.invalidate(func(cacheKey) bool { return true }, 0)
		return
	}
	revoked := 0
	if ev.Action == "version.revoked" {
		var d struct {
			Version int `json:"version"`
		}
		_ = json.Unmarshal(ev.Details, &d)
		revoked = d.Version
	}
	pc.invalidate(func(k cacheKey) bool { return k.agent == ev.Agent && (ev.Env == "" || k.env == ev.Env) }, revoked)
}

// invalidate marks the matching entries for revalidation, and drops their
// prompt when it is version revoked (non-zero).
func (pc *PromptCache) invalidate(match func(cacheKey) bool, revoked int) {
	pc.mu.Lock()
	var hit []*cacheEntry
	for k, e := range pc.entries {
		if match(k) {
			hit = append(hit, e)
		}
	}
	pc.mu.Unlock()
	for _, e := range hit {
		e.mu.Lock()
		e.checked = time.Time{}
		e.gen++
		if revoked != 0 {
			e.evicted = append(e.evicted, revoked)
		}
		if revoked != 0 && e.prompt != nil && e.prompt.Version == revoked {
			e.prompt = nil
			pc.dropped.Add(1)
		}
		e.mu.Unlock()
	}
}

// Streaming reports whether Follow's stream is up.
func (pc *PromptCache) Streaming() bool { return pc.streaming.Load() }
