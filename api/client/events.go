package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Event is one change of the feed (GET /v1/events).
type Event struct {
	Seq      int64           `json:"seq"`
	ID       int64           `json:"id"`
	At       time.Time       `json:"at"`
	Action   string          `json:"action"`
	Agent    string          `json:"agent,omitempty"`
	Env      string          `json:"env,omitempty"`
	Board    string          `json:"board,omitempty"`
	Resource string          `json:"resource"`
	Revision *int64          `json:"revision,omitempty"`
	Details  json.RawMessage `json:"details"`
	Actor    string          `json:"actor,omitempty"`    // admin tokens only
	Instance string          `json:"instance,omitempty"` // admin tokens only
}

// EventFilter selects events; empty fields match everything. Actions are
// names or patterns ("release.*").
type EventFilter struct {
	Actions           []string
	Agent, Env, Board string
}

func (f EventFilter) query() url.Values {
	q := url.Values{}
	if len(f.Actions) > 0 {
		q.Set("actions", strings.Join(f.Actions, ","))
	}
	for k, v := range map[string]string{"agent": f.Agent, "env": f.Env, "board": f.Board} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q
}

// EventPage is one long-poll answer: Next is the position scanned.
type EventPage struct {
	Items []Event `json:"items"`
	Next  string  `json:"next"`
}

// PollEvents is one long-poll: the events after since (a position; "" for
// new events only, "0" for the oldest kept), waiting up to wait for one.
func (c *Client) PollEvents(ctx context.Context, f EventFilter, since string, limit int, wait time.Duration) (*EventPage, error) {
	q := f.query()
	if since != "" {
		q.Set("since", since)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	q.Set("wait_ms", strconv.FormatInt(wait.Milliseconds(), 10))
	var p EventPage
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/events", query: q}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Subscription configures Subscribe.
type Subscription struct {
	Filter EventFilter
	// Since is where to start: "" new events only, "0" the oldest kept, or
	// a position (the Seq of the last event handled).
	Since string
	// OnEvent is called for each event, in order, from one goroutine.
	OnEvent func(Event)
	// OnState is told when the stream connects (up true) and when it drops
	// (up false, with the cause). Optional.
	OnState func(up bool, err error)
	// OnReset is called when the position to resume from has expired
	// (410 cursor_expired): events were missed, and the stream goes on
	// from the oldest kept. Optional.
	OnReset func()
}

// Subscribe follows the change feed with Server-Sent Events until ctx
// ends, reconnecting with Last-Event-ID after a drop (100 ms doubling up
// to 5 s, with jitter), so every event after Since is handled once, in
// order. It returns ctx's error, or an authoritative refusal (401, 403,
// 400), which retrying would not change.
func (c *Client) Subscribe(ctx context.Context, s Subscription) error {
	if c.baseErr != nil {
		return c.baseErr
	}
	pos := s.Since
	for attempt := 0; ; {
		connected, err := c.stream(ctx, s, &pos)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var e *Error
		if errors.As(err, &e) {
			switch {
			case e.Code == "cursor_expired":
				pos = "0"
				if s.OnReset != nil {
					s.OnReset()
				}
				continue
			case !e.Temporary():
				return err
			}
		}
		if s.OnState != nil {
			s.OnState(false, err)
		}
		if connected {
			attempt = 0
		}
		if werr := c.sleep(ctx, backoff(attempt, 5*time.Second)); werr != nil {
			return werr
		}
		attempt++
	}
}

// maxEventLine bounds one line of the stream (an event's data).
const maxEventLine = 8 << 20

// stream reads one connection of the stream, advancing *pos past each
// event handled (and each progress event). connected says the stream was
// opened.
func (c *Client) stream(ctx context.Context, s Subscription, pos *string) (connected bool, err error) {
	q := s.Filter.query()
	if *pos != "" {
		q.Set("since", *pos)
	}
	u := c.base + "/v1/events"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, err
	}
	inject(ctx, req.Header)
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", c.userAgent)
	if *pos != "" {
		req.Header.Set("Last-Event-ID", *pos)
	}
	// The stream has no overall timeout: the client's Timeout would cut
	// it. Silence is bounded instead: promptd sends progress every 15 s.
	hc := *c.hc
	hc.Timeout = 0
	resp, err := hc.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return false, problemFrom(resp, raw)
	}
	if s.OnState != nil {
		s.OnState(true, nil)
	}
	// A watchdog closes a silent stream (progress comes every 15 s).
	alive := make(chan struct{}, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTimer(45 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-alive:
				t.Reset(45 * time.Second)
			case <-t.C:
				resp.Body.Close()
				return
			}
		}
	}()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), maxEventLine)
	var id, event string
	var data strings.Builder
	for sc.Scan() {
		select {
		case alive <- struct{}{}:
		default:
		}
		line := sc.Text()
		switch {
		case line == "":
			if event == "progress" && id != "" {
				*pos = id
			} else if event != "" && data.Len() > 0 {
				var ev Event
				if err := json.Unmarshal([]byte(data.String()), &ev); err != nil {
					return true, fmt.Errorf("promptd: event %s: %w", id, err)
				}
				if s.OnEvent != nil {
					s.OnEvent(ev)
				}
				*pos = strconv.FormatInt(ev.Seq, 10)
			}
			id, event = "", ""
			data.Reset()
		case strings.HasPrefix(line, ":"): // a comment
		case strings.HasPrefix(line, "id:"):
			id = strings.TrimSpace(line[3:])
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(line[6:])
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(line[5:], " "))
		}
	}
	if err := sc.Err(); err != nil {
		return true, err
	}
	return true, io.ErrUnexpectedEOF // the server ended the stream (shutdown): resume
}
