package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/promptd/promptd/bundle"
)

// LocalOptions configures a LocalPrompts.
type LocalOptions struct {
	// Agents and Envs narrow the bundle (GET /v1/bundle?agents=&envs=);
	// empty: everything the token may read.
	Agents, Envs []string
	// CachePath, when set, keeps the last good bundle on disk (written
	// atomically, mode 0600), so that a process starting while promptd is
	// down serves what it served before.
	CachePath string
	// PollEvery is the conditional re-fetch period while the event stream
	// is down (default 2 s). With the stream up, changes arrive as events.
	PollEvery time.Duration
	// FlushEvery is how often counted exposures are sent (default 5 s).
	// Negative: exposures are not counted.
	FlushEvery time.Duration
	// FetchTimeout bounds one bundle fetch (default 10 s).
	FetchTimeout time.Duration
	// OnError is told of background failures (fetch, stream, flush), for
	// logs and metrics. Optional.
	OnError func(error)
}

// LocalStats counts what a LocalPrompts did.
type LocalStats struct {
	Cursor        string // the feed position of the bundle in use
	Streaming     bool   // the event stream is up
	Fetches       int64  // bundle answers with a new body
	NotModified   int64  // conditional fetches answered 304
	ServerAnswers int64  // resolves and assembles the server answered (a session pin it must decide)
	Exposures     int64  // exposures acknowledged by promptd
	Dropped       int64  // exposures dropped: older than the server takes (24 h)
}

// LocalPrompts resolves and assembles prompts in process, from a bundle
// (GET /v1/bundle), with exactly the server's rules (package bundle):
// after the first fetch a Resolve or Assemble makes no network call. The
// change feed keeps the bundle current: an event that changes what an
// env resolves to (pointer switch, revocation, release change, rollback)
// makes it re-fetch the bundle conditionally, and while the stream is
// down it re-fetches every PollEvery; a newer bundle replaces the old one
// at once, whole, so a caller sees one bundle or the next, never a mix.
// When promptd cannot be reached the last good bundle keeps serving.
//
// A session whose pin the bundle cannot answer (the pinned version is
// revoked, or not in the bundle) is resolved by promptd, which re-pins it;
// callers pass the pinned version they got when the session was created.
// For Assemble with a session, pass its turns (oldest first) in History:
// the local answer assembles what it is given.
//
// Resolves are counted as exposures per minute and sent in batches
// (POST /v1/exposures), each batch with an Idempotency-Key kept across
// its retries, so a batch is counted once.
type LocalPrompts struct {
	c    *Client
	opts LocalOptions

	cur     atomic.Pointer[localBundle]
	refresh chan struct{}

	streaming                           atomic.Bool
	fetches, notModified, serverAnswers atomic.Int64
	exposuresSent, exposuresDropped     atomic.Int64
	cancel                              context.CancelFunc
	done                                chan struct{}
	exp                                 *exposures
	closeOnce                           sync.Once
}

type localBundle struct {
	ev     *bundle.Evaluator
	etag   string
	cursor int64
}

// NewLocalPrompts fetches the bundle (or, when promptd cannot be reached
// and CachePath holds one, reads the disk copy) and starts following the
// change feed in the background until Close.
func (c *Client) NewLocalPrompts(ctx context.Context, opts LocalOptions) (*LocalPrompts, error) {
	if opts.PollEvery <= 0 {
		opts.PollEvery = 2 * time.Second
	}
	if opts.FlushEvery == 0 {
		opts.FlushEvery = 5 * time.Second
	}
	if opts.FetchTimeout <= 0 {
		opts.FetchTimeout = 10 * time.Second
	}
	l := &LocalPrompts{c: c, opts: opts, refresh: make(chan struct{}, 1), done: make(chan struct{})}
	if opts.FlushEvery > 0 {
		l.exp = &exposures{counts: map[exposureKey]int64{}}
	}
	if err := l.fetch(ctx); err != nil {
		var pe *Error
		if errors.As(err, &pe) && !pe.Temporary() {
			return nil, err // a bad token or a bundle too large: the disk copy would hide it
		}
		if derr := l.loadDisk(); derr != nil {
			return nil, errors.Join(err, derr)
		}
		l.report(fmt.Errorf("promptd: serving the disk copy of the bundle: %w", err))
	}
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.cancel = cancel
	go l.run(bg)
	return l, nil
}

// Resolve answers as GET /v1/agents/{agent}/envs/{env}/prompt would, from
// the bundle.
func (l *LocalPrompts) Resolve(ctx context.Context, req bundle.Request) (*bundle.Resolved, error) {
	res, err := l.cur.Load().ev.Resolve(req)
	if errors.Is(err, bundle.ErrAskServer) {
		return l.serverResolve(ctx, req)
	}
	if err != nil {
		return nil, err
	}
	l.count(res)
	return res, nil
}

// Assemble answers as POST /v1/agents/{agent}/envs/{env}/assemble would:
// the answer's bytes in req.Format ("plain" or "openai"), byte for byte
// the server's, and the resolution behind it.
func (l *LocalPrompts) Assemble(ctx context.Context, req bundle.Request) ([]byte, *bundle.Resolved, error) {
	body, res, err := l.cur.Load().ev.Assemble(req)
	if errors.Is(err, bundle.ErrAskServer) {
		return l.serverAssemble(ctx, req)
	}
	if err != nil {
		return nil, nil, err
	}
	l.count(res)
	return body, res, nil
}

// Stats reports what the LocalPrompts did so far.
func (l *LocalPrompts) Stats() LocalStats {
	return LocalStats{Cursor: strconv.FormatInt(l.cur.Load().cursor, 10), Streaming: l.streaming.Load(),
		Fetches: l.fetches.Load(), NotModified: l.notModified.Load(), ServerAnswers: l.serverAnswers.Load(),
		Exposures: l.exposuresSent.Load(), Dropped: l.exposuresDropped.Load()}
}

// Close stops following the feed and sends the exposures counted so far
// (bounded by ctx).
func (l *LocalPrompts) Close(ctx context.Context) error {
	var err error
	l.closeOnce.Do(func() {
		l.cancel()
		<-l.done
		if l.exp != nil {
			err = l.flush(ctx)
		}
	})
	return err
}

// run follows the change feed from the bundle's cursor and re-fetches
// when an event may change an answer, polls while the stream is down, and
// flushes exposures.
func (l *LocalPrompts) run(ctx context.Context) {
	defer close(l.done)
	go func() {
		err := l.c.Subscribe(ctx, Subscription{
			Filter: EventFilter{Actions: followActions},
			Since:  strconv.FormatInt(l.cur.Load().cursor, 10),
			OnEvent: func(ev Event) {
				if ev.Seq > l.cur.Load().cursor && l.wants(ev.Agent, ev.Env) {
					l.kick()
				}
			},
			OnState: func(up bool, err error) {
				if up {
					l.kick() // what changed while no stream was up
				} else if err != nil {
					l.report(fmt.Errorf("promptd: event stream: %w", err))
				}
				l.streaming.Store(up)
			},
			OnReset: l.kick,
		})
		l.streaming.Store(false)
		if err != nil && ctx.Err() == nil {
			l.report(fmt.Errorf("promptd: event stream stopped: %w", err))
		}
	}()
	poll := time.NewTicker(l.opts.PollEvery)
	defer poll.Stop()
	var flush <-chan time.Time
	if l.exp != nil {
		t := time.NewTicker(l.opts.FlushEvery)
		defer t.Stop()
		flush = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.refresh:
		case <-poll.C:
			if l.streaming.Load() {
				continue
			}
		case <-flush:
			if err := l.flush(ctx); err != nil && ctx.Err() == nil {
				l.report(err)
			}
			continue
		}
		if err := l.fetch(ctx); err != nil && ctx.Err() == nil {
			l.report(err)
		}
	}
}

func (l *LocalPrompts) kick() {
	select {
	case l.refresh <- struct{}{}:
	default:
	}
}

// wants reports whether an event's agent and env are in the bundle's
// selection (an event that names none may concern anything).
func (l *LocalPrompts) wants(agent, env string) bool {
	in := func(list []string, s string) bool {
		if len(list) == 0 || s == "" {
			return true
		}
		for _, v := range list {
			if v == s {
				return true
			}
		}
		return false
	}
	return in(l.opts.Agents, agent) && in(l.opts.Envs, env)
}

// fetch asks for the bundle with If-None-Match and installs a newer one.
func (l *LocalPrompts) fetch(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, l.opts.FetchTimeout)
	defer cancel()
	q := url.Values{}
	if len(l.opts.Agents) > 0 {
		q.Set("agents", strings.Join(l.opts.Agents, ","))
	}
	if len(l.opts.Envs) > 0 {
		q.Set("envs", strings.Join(l.opts.Envs, ","))
	}
	k := call{method: http.MethodGet, path: "/v1/bundle", query: q}
	old := l.cur.Load()
	if old != nil && old.etag != "" {
		k.header = map[string]string{"If-None-Match": old.etag}
	}
	var raw []byte
	resp, err := l.c.do(ctx, k, &raw)
	if err != nil {
		return err
	}
	if resp.StatusCode == http.StatusNotModified {
		l.notModified.Add(1)
		return nil
	}
	nb, err := parseBundle(raw, resp.Header.Get("ETag"))
	if err != nil {
		return err
	}
	if old != nil && nb.cursor < old.cursor {
		return nil // an instance behind the one the bundle in use came from
	}
	l.cur.Store(nb)
	l.fetches.Add(1)
	if l.opts.CachePath != "" {
		if err := writeFileAtomic(l.opts.CachePath, raw); err != nil {
			l.report(fmt.Errorf("promptd: writing the bundle's disk copy: %w", err))
		}
	}
	return nil
}

func parseBundle(raw []byte, etag string) (*localBundle, error) {
	var b bundle.Bundle
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, fmt.Errorf("promptd: decoding the bundle: %w", err)
	}
	ev, err := bundle.New(&b)
	if err != nil {
		return nil, err
	}
	cursor, err := strconv.ParseInt(b.Cursor, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("promptd: the bundle's cursor %q: %w", b.Cursor, err)
	}
	return &localBundle{ev: ev, etag: etag, cursor: cursor}, nil
}

// loadDisk installs the disk copy (no ETag: the first fetch that works
// replaces it).
func (l *LocalPrompts) loadDisk() error {
	if l.opts.CachePath == "" {
		return errors.New("promptd: no bundle: promptd cannot be reached and no CachePath is set")
	}
	raw, err := os.ReadFile(l.opts.CachePath)
	if err != nil {
		return fmt.Errorf("promptd: no bundle: the disk copy: %w", err)
	}
	nb, err := parseBundle(raw, "")
	if err != nil {
		return fmt.Errorf("promptd: the disk copy %s: %w", l.opts.CachePath, err)
	}
	l.cur.Store(nb)
	return nil
}

// writeFileAtomic writes data next to path and renames it over path, so
// that a reader (or a crash) sees the old file or the new one.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename: nothing there
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func (l *LocalPrompts) report(err error) {
	if l.opts.OnError != nil {
		l.opts.OnError(err)
	}
}

// serverResolve asks promptd (a session pin the bundle cannot answer).
func (l *LocalPrompts) serverResolve(ctx context.Context, req bundle.Request) (*bundle.Resolved, error) {
	q := url.Values{}
	if req.UserID != "" {
		q.Set("user_id", req.UserID)
	}
	if req.SessionID != "" {
		q.Set("session_id", req.SessionID)
	}
	var res bundle.Resolved
	if _, err := l.c.do(ctx, call{method: http.MethodGet, path: envPath(req.Agent, req.Env) + "/prompt", query: q}, &res); err != nil {
		return nil, err
	}
	l.serverAnswers.Add(1)
	return &res, nil
}

func (l *LocalPrompts) serverAssemble(ctx context.Context, req bundle.Request) ([]byte, *bundle.Resolved, error) {
	body := map[string]any{"history": req.SessionID != "", "variables": req.Variables}
	if req.Variables == nil {
		body["variables"] = map[string]any{}
	}
	for k, v := range map[string]string{"user_id": req.UserID, "session_id": req.SessionID, "format": req.Format} {
		if v != "" {
			body[k] = v
		}
	}
	if req.MaxHistoryTurns > 0 {
		body["max_history_turns"] = req.MaxHistoryTurns
	}
	var raw []byte
	resp, err := l.c.do(ctx, call{method: http.MethodPost, path: envPath(req.Agent, req.Env) + "/assemble", body: body}, &raw)
	if err != nil {
		return nil, nil, err
	}
	l.serverAnswers.Add(1)
	res := &bundle.Resolved{Agent: req.Agent, Env: req.Env}
	if v := resp.Header.Get("Promptd-Version"); v != "" {
		if i := strings.LastIndexByte(v, '/'); i >= 0 {
			res.Version, _ = strconv.Atoi(v[i+1:])
		}
	}
	res.Pinned = req.SessionID != ""
	return raw, res, nil
}

// ---- exposures ----

type exposureKey struct {
	agent, env, releaseID, arm string
	version                    int
	minute                     int64 // unix minutes
}

type exposureBatch struct {
	key   string // Idempotency-Key, kept across retries
	items []map[string]any
	n     int64
	at    time.Time // the oldest minute in it
}

type exposures struct {
	mu      sync.Mutex
	counts  map[exposureKey]int64
	pending []exposureBatch // sent without an answer: resent with the same key
}

// count adds one exposure of res's version and arm in this minute.
func (l *LocalPrompts) count(res *bundle.Resolved) {
	if l.exp == nil {
		return
	}
	k := exposureKey{agent: res.Agent, env: res.Env, version: res.Version, minute: time.Now().Unix() / 60}
	if res.Release != nil {
		k.releaseID, k.arm = res.Release.ID, res.Release.Arm
	}
	l.exp.mu.Lock()
	l.exp.counts[k]++
	l.exp.mu.Unlock()
}

// maxExposureItems is the most items one POST /v1/exposures takes.
const maxExposureItems = 1000

// flush sends the counted exposures: first the batches whose answer was
// lost (same key: promptd counts a batch once), then the new counts.
func (l *LocalPrompts) flush(ctx context.Context) error {
	e := l.exp
	e.mu.Lock()
	counts := e.counts
	e.counts = map[exposureKey]int64{}
	batches := e.pending
	e.pending = nil
	e.mu.Unlock()

	var cur *exposureBatch
	for k, n := range counts {
		if cur == nil || len(cur.items) == maxExposureItems {
			batches = append(batches, exposureBatch{key: newIdempotencyKey()})
			cur = &batches[len(batches)-1]
		}
		at := time.Unix(k.minute*60, 0).UTC()
		item := map[string]any{"agent": k.agent, "env": k.env, "version": k.version, "count": n,
			"at": at.Format("2006-01-02T15:04:05.000Z07:00")}
		if k.releaseID != "" {
			item["release_id"], item["arm"] = k.releaseID, k.arm
		}
		cur.items = append(cur.items, item)
		cur.n += n
		if cur.at.IsZero() || at.Before(cur.at) {
			cur.at = at
		}
	}
	var errs []error
	for i, b := range batches {
		if time.Since(b.at) > 23*time.Hour {
			l.exposuresDropped.Add(b.n) // promptd takes exposures up to 24 h old
			continue
		}
		var out struct {
			Accepted int64 `json:"accepted"`
		}
		_, err := l.c.do(WithIdempotencyKey(ctx, b.key),
			call{method: http.MethodPost, path: "/v1/exposures", body: map[string]any{"items": b.items}, idempotent: true}, &out)
		var pe *Error
		switch {
		case err == nil:
			l.exposuresSent.Add(b.n)
		case errors.As(err, &pe) && !pe.Temporary():
			l.exposuresDropped.Add(b.n) // refused for good: resending would not change it
			errs = append(errs, err)
		default:
			e.mu.Lock()
			e.pending = append(e.pending, batches[i:]...)
			e.mu.Unlock()
			return errors.Join(append(errs, fmt.Errorf("promptd: sending exposures: %w", err))...)
		}
	}
	return errors.Join(errs...)
}
