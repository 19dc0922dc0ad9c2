package api

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/events"
	"github.com/promptd/promptd/ident"
)

// Change feed limits (api/openapi.yaml, Events: change feed).
const (
	// DefaultStreamsPerToken caps the open streams and waits of one token
	// on one instance (PROMPTD_STREAMS_PER_TOKEN).
	DefaultStreamsPerToken = 20
	eventsDefaultLimit     = 100
	eventsMaxLimit         = 1000
	eventsDefaultWait      = 25 * time.Second
	eventsMaxWait          = 30 * time.Second
	// progressEvery is the period of SSE progress events: they keep
	// proxies from closing a quiet stream and advance a filtered reader's
	// cursor.
	progressEvery = 15 * time.Second
	// streamWriteTimeout bounds each write to a stream: a subscriber that
	// stops reading is dropped after it (and resumes from its last id),
	// never buffered for.
	streamWriteTimeout = 10 * time.Second
	maxActionPatterns  = 32
	streamPage         = 500
)

// runtimeActions are the events a runtime token may see; admin tokens see
// every event.
var runtimeActions = map[string]bool{
	"version.created": true, "pointer.switched": true, "version.revoked": true, "version.unrevoked": true,
	"release.created": true, "release.percent_changed": true, "release.step_applied": true, "release.paused": true,
	"release.resumed": true, "release.promoted": true, "release.rolled_back": true, "release.guard_tripped": true,
	"env.rolled_back": true,
}

// visibleTo reports whether a token of role may see an event of action.
func visibleTo(role, action string) bool {
	return role == RoleAdmin || runtimeActions[action] || strings.HasPrefix(action, "board.")
}

// feedEvent is an event of the change feed as the API shows it (the same
// shape webhook deliveries carry as data).
type feedEvent = events.FeedEvent

func toFeedEvent(e audit.Stamped, admin bool) feedEvent { return events.ToFeedEvent(e, admin) }

// frameCache keeps the SSE frames of recent events, per role view, so
// that an event sent to many subscribers is encoded once per view.
type frameCache struct {
	mu     sync.Mutex
	frames [4096]struct {
		seq   int64
		admin bool
		b     []byte
	}
}

func (fc *frameCache) frame(e audit.Stamped, admin bool) ([]byte, error) {
	i := e.Seq * 2 % int64(len(fc.frames))
	if admin {
		i++
	}
	fc.mu.Lock()
	if f := fc.frames[i]; f.seq == e.Seq && f.admin == admin && f.b != nil {
		fc.mu.Unlock()
		return f.b, nil
	}
	fc.mu.Unlock()
	b, err := encodeJSON(toFeedEvent(e, admin))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.WriteString("id: " + strconv.FormatInt(e.Seq, 10) + "\nevent: " + e.Action + "\ndata: ")
	buf.Write(bytes.TrimRight(b, "\n"))
	buf.WriteString("\n\n")
	out := buf.Bytes()
	fc.mu.Lock()
	fc.frames[i].seq, fc.frames[i].admin, fc.frames[i].b = e.Seq, admin, out
	fc.mu.Unlock()
	return out, nil
}

// streamSlots counts the open streams and waits of each token on this
// instance.
type streamSlots struct {
	mu    sync.Mutex
	open  map[string]int
	limit int
}

func (s *streamSlots) take(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[token] >= s.limit {
		return false
	}
	s.open[token]++
	return true
}

func (s *streamSlots) give(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[token]--; s.open[token] <= 0 {
		delete(s.open, token)
	}
}

// feedQuery is a parsed GET /v1/events.
type feedQuery struct {
	filter events.Filter
	since  int64
	field  string // where since came from: since, or Last-Event-ID
	fresh  bool   // since omitted: new events only
	limit  int
	wait   time.Duration
	role   string
	token  *access.Token // a scoped token sees only its scope
}

func (s *Server) parseFeedQuery(c echo.Context, sse bool) (feedQuery, error) {
	q := feedQuery{limit: eventsDefaultLimit, wait: eventsDefaultWait, role: roleOf(c), token: tokenOf(c)}
	if raw := c.QueryParam("actions"); raw != "" {
		for _, a := range strings.Split(raw, ",") {
			if !validActionPattern(a) {
				return q, invalidField("actions", "actions is a comma-separated list of event names or patterns such as release.*")
			}
			q.filter.Actions = append(q.filter.Actions, a)
		}
		if len(q.filter.Actions) > maxActionPatterns {
			return q, invalidField("actions", "at most %d action patterns", maxActionPatterns)
		}
	}
	for _, p := range []struct {
		name string
		dst  *string
	}{{"agent", &q.filter.Agent}, {"env", &q.filter.Env}, {"board", &q.filter.Board}} {
		if c.QueryParams().Has(p.name) {
			v := c.QueryParam(p.name)
			if err := ident.Validate(p.name, v); err != nil {
				return q, err
			}
			*p.dst = v
		}
	}
	since, field := c.QueryParam("since"), "since"
	if id := c.Request().Header.Get("Last-Event-ID"); sse && id != "" {
		since, field = id, "Last-Event-ID"
	}
	if since == "" {
		q.fresh = true
	} else if n, ok := positive(since, 1<<62); ok || since == "0" {
		q.since, q.field = int64(n), field
	} else {
		return q, invalidField(field, "%s must be a feed position (a non-negative integer)", field)
	}
	if v := c.QueryParam("limit"); v != "" {
		n, ok := positive(v, eventsMaxLimit)
		if !ok || n == 0 {
			return q, invalidField("limit", "limit must be 1..%d", eventsMaxLimit)
		}
		q.limit = int(n)
	}
	if v := c.QueryParam("wait_ms"); v != "" {
		n, ok := positive(v, int64(eventsMaxWait/time.Millisecond))
		if !ok && v != "0" {
			return q, invalidField("wait_ms", "wait_ms must be 0..%d", eventsMaxWait/time.Millisecond)
		}
		q.wait = time.Duration(n) * time.Millisecond
	}
	return q, nil
}

// validActionPattern: an event name of [a-z0-9._] with '*' wildcards, up
// to 64 bytes.
func validActionPattern(a string) bool {
	return a != "" && validAction(strings.ReplaceAll(a, "*", "x"))
}

// start resolves where a reader begins: the feed's head for new events
// only; the oldest kept position for 0; an expired position is
// 410 cursor_expired.
func (s *Server) feedStart(ctx context.Context, q feedQuery) (int64, error) {
	f := s.rt.Feed
	if q.fresh {
		return f.Position(ctx)
	}
	if q.since == 0 {
		return f.OldestNow(ctx)
	}
	if err := f.Kept(ctx, q.since); err != nil {
		return 0, err
	}
	var ahead *audit.AheadError
	if err := f.CheckPosition(ctx, q.since); errors.As(err, &ahead) {
		return 0, invalidField(q.field, "%s %d is beyond the feed's head %d", q.field, q.since, ahead.Head)
	} else if err != nil {
		return 0, err
	}
	return q.since, nil
}

// handleEvents: GET /v1/events, as Server-Sent Events or a JSON long-poll.
func (s *Server) handleEvents(c echo.Context) error {
	sse := strings.Contains(c.Request().Header.Get("Accept"), "text/event-stream")
	return s.serveFeed(c, sse, nil)
}

// handleBoardChanges: GET /v1/boards/{board}/changes, the board's events
// (as /v1/events?board=).
func (s *Server) handleBoardChanges(c echo.Context) error {
	board := c.Param("board")
	if err := ident.Validate("board", board); err != nil {
		return err
	}
	sse := strings.Contains(c.Request().Header.Get("Accept"), "text/event-stream")
	return s.serveFeed(c, sse, func(q *feedQuery) { q.filter.Board = board })
}

func (s *Server) serveFeed(c echo.Context, sse bool, adjust func(*feedQuery)) error {
	q, err := s.parseFeedQuery(c, sse)
	if err != nil {
		return err
	}
	if adjust != nil {
		adjust(&q)
	}
	ctx := c.Request().Context()
	after, err := s.feedStart(ctx, q)
	if err != nil {
		return err
	}
	token := actorOf(c)
	if !s.streams.take(token) {
		return (&Error{Code: "quota_exceeded", Detail: "this token has too many open event streams and waits on this instance"}).
			WithHeader("Retry-After", "1")
	}
	defer s.streams.give(token)
	if m := s.cfg.FeedMetrics; m != nil {
		m.Subscribers.Inc()
		defer m.Subscribers.Dec()
	}
	// The stream or wait ends when the client leaves or the server shuts down.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.closing, cancel)
	defer stop()
	if t := tokenOf(c); t != nil && (!t.Bootstrap || s.viaCookie(c.Request())) {
		go s.watchToken(ctx, c.Request(), cancel)
	}
	if sse {
		return s.streamFeed(c, ctx, q, after)
	}
	return s.pollFeed(c, ctx, q, after)
}

// scan reads the feed after position after up to limit matching events,
// skipping what q's filter and the token's role hide; it returns them and
// the position scanned. A scoped token's events outside its scopes are
// not read at all (Feed.ReadScoped), so they neither fill its answers nor
// use its budget. It looks at most Config.FeedScanMax events: more
// reports that it stopped there with the feed not yet read to its head,
// so a filter that matches little costs a bounded slice of the feed per
// answer, and next still advances.
func (s *Server) scan(ctx context.Context, q feedQuery, after int64, limit int) (out []audit.Stamped, next int64, more bool, err error) {
	budget := s.cfg.FeedScanMax
	read := s.rt.Feed.Read
	if b := q.filter.Board; b != "" { // a board's feed reads only its events
		read = func(ctx context.Context, after int64, limit int) ([]audit.Stamped, int64, error) {
			return s.rt.Feed.ReadBoard(ctx, b, after, limit)
		}
	}
	if sc := listScope(q.token); sc != nil { // a scoped reader reads only its events: the others use no budget
		scope := audit.Scope{Agents: sc.Names(access.KindAgent), Envs: sc.Names(access.KindEnv), Boards: sc.Names(access.KindBoard)}
		read = func(ctx context.Context, after int64, limit int) ([]audit.Stamped, int64, error) {
			return s.rt.Feed.ReadScoped(ctx, scope, q.filter.Board, after, limit)
		}
	}
	for {
		evs, scanned, err := read(ctx, after, max(limit, streamPage))
		if err != nil {
			return nil, after, false, err
		}
		for _, e := range evs {
			if len(out) == limit {
				return out, after, false, nil
			}
			if budget == 0 {
				return out, after, true, nil
			}
			budget--
			after = e.Seq
			if visibleTo(q.role, e.Action) && visible(q.token, e.Agent, e.Env, e.Board) && q.filter.Match(e) {
				out = append(out, e)
			}
		}
		after = max(after, scanned)
		if len(evs) == 0 || len(out) == limit {
			return out, after, false, nil
		}
	}
}

// pollFeed answers one long-poll: the events after after, waiting up to
// q.wait for one when there is none.
func (s *Server) pollFeed(c echo.Context, ctx context.Context, q feedQuery, after int64) error {
	s.extendDeadlines(c, q.wait)
	deadline := time.Now().Add(q.wait)
	for {
		out, next, more, err := s.scan(ctx, q, after, q.limit)
		if err != nil {
			return err
		}
		after = next
		if len(out) > 0 || more || !time.Now().Before(deadline) {
			items := make([]feedEvent, len(out))
			for i, e := range out {
				items[i] = toFeedEvent(e, q.role == RoleAdmin)
			}
			return s.send(c, http.StatusOK, feedPage{Items: items, Next: strconv.FormatInt(after, 10)})
		}
		wctx, cancel := context.WithDeadline(ctx, deadline)
		s.rt.Feed.Wait(wctx, after)
		cancel()
		if ctx.Err() != nil {
			if c.Request().Context().Err() != nil {
				return c.Request().Context().Err() // the client left
			}
			// shutting down: answer what was scanned; the client resumes
			return s.send(c, http.StatusOK, feedPage{Items: []feedEvent{}, Next: strconv.FormatInt(after, 10)})
		}
	}
}

// feedPage is a long-poll answer: next is the position scanned.
type feedPage struct {
	Items []feedEvent `json:"items"`
	Next  string      `json:"next"`
}

// streamScanEvery paces a stream whose scans stop at their budget.
const streamScanEvery = time.Second

// streamFeed serves Server-Sent Events until the client leaves or the
// server shuts down.
func (s *Server) streamFeed(c echo.Context, ctx context.Context, q feedQuery, after int64) error {
	w := c.Response()
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	rc := http.NewResponseController(w)
	write := func(b []byte) error {
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if _, err := w.Write(b); err != nil {
			return err
		}
		return rc.Flush()
	}
	w.WriteHeader(http.StatusOK)
	// A first comment tells the client the stream is open.
	if err := write([]byte(": promptd change feed\nretry: 1000\n\n")); err != nil {
		return nil
	}
	var buf bytes.Buffer
	progress := time.Now().Add(progressEvery)
	for {
		out, next, more, err := s.scan(ctx, q, after, streamPage)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.log.Warn("event stream: reading the feed failed; closing it (the client resumes)", "err", err)
			return nil
		}
		if len(out) > 0 {
			buf.Reset()
			for _, e := range out {
				b, err := s.frames.frame(e, q.role == RoleAdmin)
				if err != nil {
					return nil
				}
				buf.Write(b)
			}
			span := sendSpan(ctx, out)
			err := write(buf.Bytes())
			endSend(span, err)
			if err != nil {
				return nil // a subscriber that does not read is dropped; it resumes by Last-Event-ID
			}
		}
		after = next
		if more {
			// The scan stopped at its budget (Config.FeedScanMax) with the
			// feed not read to its head: a filter that matches little, on
			// a stream that resumed far back. The client learns how far it
			// got (a reconnect resumes from there), and the stream scans
			// on after streamScanEvery: a stream looks at FeedScanMax
			// events a second at most, however far back it starts.
			if err := write([]byte("id: " + strconv.FormatInt(after, 10) + "\nevent: progress\ndata: {}\n\n")); err != nil {
				return nil
			}
			progress = time.Now().Add(progressEvery)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(streamScanEvery):
			}
			continue
		}
		if len(out) == streamPage {
			continue
		}
		wctx, cancel := context.WithDeadline(ctx, progress)
		moved := s.rt.Feed.Wait(wctx, after)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if !moved && !time.Now().Before(progress) {
			if err := write([]byte("id: " + strconv.FormatInt(after, 10) + "\nevent: progress\ndata: {}\n\n")); err != nil {
				return nil
			}
			progress = time.Now().Add(progressEvery)
		}
	}
}

// tokenRecheck is how often an open stream or wait of a managed token
// checks that its token still holds: a revocation (pushed on the bus, or
// seen when the 1 s cached check is re-read from SQL) or the expiry ends
// it within about a second.
const tokenRecheck = 200 * time.Millisecond

// watchToken cancels a stream or wait when its request's token is revoked
// or expires, or SQL can no longer confirm it, or (console cookie) its
// session is logged out or expires; it returns when ctx ends.
func (s *Server) watchToken(ctx context.Context, r *http.Request, cancel context.CancelFunc) {
	t := time.NewTicker(tokenRecheck)
	defer t.Stop()
	r = asRecheck(r)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.authenticate(r); err != nil {
				cancel()
				return
			}
		}
	}
}
