package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/promptd/promptd/api"
)

// feedPage decodes a long-poll answer.
type feedPage struct {
	Items []map[string]any `json:"items"`
	Next  string           `json:"next"`
}

func (a *app) poll(path, token string) feedPage {
	a.t.Helper()
	rec := a.do("GET", path, token, "")
	var p feedPage
	if rec.Code != 200 {
		a.t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		a.t.Fatal(err)
	}
	return p
}

// pollUntil long-polls from since until n events arrived.
func (a *app) pollUntil(query, token string, since string, n int) ([]map[string]any, string) {
	a.t.Helper()
	var out []map[string]any
	deadline := time.Now().Add(30 * time.Second) // a bound for loaded machines, not a speed target
	for len(out) < n && time.Now().Before(deadline) {
		p := a.poll("/v1/events?wait_ms=2000&since="+since+query, token)
		out = append(out, p.Items...)
		since = p.Next
	}
	return out, since
}

func actions(evs []map[string]any) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e["action"].(string)
	}
	return out
}

func TestEvents_longPoll_runtimeSeesPromptEvents_adminSeesEverything(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		v := a.createVersion("support", 0, "hello")
		a.publish("support", "prod", v, 0)
		a.createSession("s1", "u1") // session.created: admin only

		admins, next := a.pollUntil("", admin, "0", 3)
		if got := strings.Join(actions(admins), ","); got != "version.created,pointer.switched,session.created" {
			t.Fatalf("admin saw %s", got)
		}
		if admins[0]["actor"] != "ops" || admins[0]["instance"] != "test-1" || admins[0]["seq"] != float64(1) {
			t.Fatalf("admin event = %v", admins[0])
		}
		if admins[1]["revision"] != float64(1) || admins[1]["agent"] != "support" || admins[1]["env"] != "prod" {
			t.Fatalf("pointer.switched = %v", admins[1])
		}
		runtimes, _ := a.pollUntil("", runtime, "0", 2)
		if got := strings.Join(actions(runtimes), ","); got != "version.created,pointer.switched" {
			t.Fatalf("runtime saw %s", got)
		}
		if _, ok := runtimes[0]["actor"]; ok {
			t.Fatalf("runtime event shows the actor: %v", runtimes[0])
		}
		// Nothing newer: an empty page after a short wait, next unchanged.
		p := a.poll("/v1/events?wait_ms=50&since="+next, admin)
		if len(p.Items) != 0 || p.Next != next {
			t.Fatalf("after the head: %v", p)
		}
		// A filter skips events but the cursor still advances past them.
		p = a.poll("/v1/events?wait_ms=0&since=0&actions=session.*", admin)
		if len(p.Items) != 1 || p.Next != next {
			t.Fatalf("filtered: %d items, next %s (want 1, %s)", len(p.Items), p.Next, next)
		}
		p = a.poll("/v1/events?wait_ms=0&since=0&agent=other", admin)
		if len(p.Items) != 0 || p.Next != next {
			t.Fatalf("agent filter: %v", p)
		}
	})
}

func TestEvents_longPoll_wakesWhenAnEventCommits(t *testing.T) {
	a := sqliteApp(t)
	since := a.poll("/v1/events?wait_ms=0", admin).Next // omitted since: from the head
	done := make(chan feedPage, 1)
	go func() {
		rec := httptest.NewRecorder()
		a.h.ServeHTTP(rec, req("GET", "/v1/events?wait_ms=10000&since="+since, admin, ""))
		var p feedPage
		_ = json.Unmarshal(rec.Body.Bytes(), &p)
		done <- p
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	a.createVersion("support", 0, "hello")
	p := <-done
	if len(p.Items) != 1 || p.Items[0]["action"] != "version.created" {
		t.Fatalf("woken with %v", p)
	}
	t.Logf("long-poll answered %v after the commit", time.Since(start).Round(time.Millisecond))
}

func TestEvents_badQuery_is400(t *testing.T) {
	a := sqliteApp(t)
	for _, c := range []struct{ q, code string }{
		{"actions=Release", "invalid_field"},
		{"actions=a,,b", "invalid_field"},
		{"limit=0", "invalid_field"},
		{"limit=1001", "invalid_field"},
		{"wait_ms=30001", "invalid_field"},
		{"since=-1", "invalid_field"},
		{"since=01", "invalid_field"},
		{"agent=%7Bx%7D", "invalid_id"},
		{"board=", "invalid_id"},
	} {
		problem(t, a.do("GET", "/v1/events?"+c.q, admin, ""), 400, c.code)
	}
	problem(t, a.do("GET", "/v1/events", "", ""), 401, "unauthorized")
}

func TestEvents_resumeOlderThanRetention_is410WithOldest(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		old := time.Now().Add(-200 * time.Hour).UnixMilli()
		for range 3 {
			if err := a.db.Exec(`INSERT INTO audit_events (at_ms, actor, instance, action, resource, details) VALUES (?, 'x', 'x', 'version.created', 'r', '{}')`, old).Error; err != nil {
				t.Fatal(err)
			}
		}
		a.createVersion("support", 0, "hello")
		for deadline := time.Now().Add(10 * time.Second); a.rt.Feed.Head() < 4 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		p := problem(t, a.do("GET", "/v1/events?wait_ms=0&since=1", admin, ""), 410, "cursor_expired")
		if p["oldest"] != "3" {
			t.Fatalf("oldest = %v, want 3", p["oldest"])
		}
		got := a.poll("/v1/events?wait_ms=0&since=0", admin)
		if len(got.Items) != 1 || got.Items[0]["seq"] != float64(4) {
			t.Fatalf("since=0 starts at the oldest kept: %v", got.Items)
		}
		if got := a.poll("/v1/events?wait_ms=0&since=3", admin); len(got.Items) != 1 {
			t.Fatalf("since=oldest: %v", got)
		}
	})
}

func TestEvents_tooManyStreamsPerToken_is429(t *testing.T) {
	a := sqliteApp(t, func(c *api.Config) { c.StreamsPerToken = 2 })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for ctx.Err() == nil { // a probe may hold a slot for a moment: try again
				rec := httptest.NewRecorder()
				a.h.ServeHTTP(rec, req("GET", "/v1/events?wait_ms=30000", admin, "").WithContext(ctx))
				if rec.Code != http.StatusTooManyRequests {
					return
				}
			}
		})
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		rec := a.do("GET", "/v1/events?wait_ms=0", admin, "")
		if rec.Code == 429 {
			problem(t, rec, 429, "quota_exceeded")
			if rec.Header().Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never refused: %d", rec.Code)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Another token has its own slots.
	if rec := a.do("GET", "/v1/events?wait_ms=0", runtime, ""); rec.Code != 200 {
		t.Fatalf("runtime token: %d", rec.Code)
	}
	cancel()
	wg.Wait()
	if rec := a.do("GET", "/v1/events?wait_ms=0", admin, ""); rec.Code != 200 {
		t.Fatalf("after the waits ended: %d", rec.Code)
	}
}

// sseEvent is one parsed Server-Sent Event.
type sseEvent struct{ id, event, data string }

func readSSE(t *testing.T, sc *bufio.Scanner) (sseEvent, bool) {
	t.Helper()
	var e sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if e.event != "" {
				return e, true
			}
		case strings.HasPrefix(line, "id: "):
			e.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			e.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			e.data = line[6:]
		}
	}
	return e, false
}

func TestEvents_sse_streamsInOrder_resumesByLastEventID_andEndsAtShutdown(t *testing.T) {
	a := sqliteApp(t)
	srv := httptest.NewServer(a.h)
	defer srv.Close()
	open := func(lastID string) (*http.Response, *bufio.Scanner) {
		r, _ := http.NewRequest("GET", srv.URL+"/v1/events?since=0", nil)
		r.Header.Set("Authorization", "Bearer "+admin)
		r.Header.Set("Accept", "text/event-stream")
		if lastID != "" {
			r.Header.Set("Last-Event-ID", lastID)
		}
		res, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("stream: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
		}
		return res, bufio.NewScanner(res.Body)
	}
	res, sc := open("")
	for i := range 3 {
		a.createVersion("support", i, fmt.Sprintf("v%d", i+1))
	}
	var last string
	for i := range 3 {
		e, ok := readSSE(t, sc)
		if !ok || e.event != "version.created" || e.id != fmt.Sprint(i+1) {
			t.Fatalf("event %d = %+v (ok %v)", i, e, ok)
		}
		var body map[string]any
		if err := json.Unmarshal([]byte(e.data), &body); err != nil || body["seq"] != float64(i+1) {
			t.Fatalf("data %q: %v", e.data, err)
		}
		last = e.id
		if i == 1 {
			break
		}
	}
	res.Body.Close()
	// Resume after the second: only the third, then the stream waits.
	res, sc = open(last)
	defer res.Body.Close()
	e, ok := readSSE(t, sc)
	if !ok || e.id != "3" {
		t.Fatalf("resumed with %+v", e)
	}
	// Shutdown ends the stream cleanly.
	ended := make(chan struct{})
	go func() {
		for sc.Scan() {
		}
		close(ended)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = a.srv.Shutdown(ctx)
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream outlived Shutdown")
	}
}

// A position beyond the feed's head is refused (it used to be accepted
// and echoed back as the next cursor), as since and as Last-Event-ID.
func TestEvents_sinceBeyondTheHead_is400NamingIt(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.createVersion("support", 0, "hello")
		for deadline := time.Now().Add(10 * time.Second); a.rt.Feed.Head() < 1 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		head := a.rt.Feed.Head()
		if p := problem(t, a.do("GET", fmt.Sprintf("/v1/events?wait_ms=0&since=%d", head+1000), admin, ""), 400, "invalid_field"); p["field"] != "since" {
			t.Fatalf("field = %v", p["field"])
		}
		if p := problem(t, a.do("GET", "/v1/events", admin, "", "Accept", "text/event-stream", "Last-Event-ID", fmt.Sprint(head+1)), 400, "invalid_field"); p["field"] != "Last-Event-ID" {
			t.Fatalf("field = %v", p["field"])
		}
		if got := a.poll(fmt.Sprintf("/v1/events?wait_ms=0&since=%d", head), admin); len(got.Items) != 0 {
			t.Fatalf("since=head: %v", got.Items)
		}
	})
}

// A filtered stream that resumes far back scans at most FeedScanMax events
// a second: it reports how far it got (progress) and goes on, rather than
// scanning the whole backlog at once (it used to loop over budgets
// without a pause: 20 such streams took 71 % of a core).
func TestEvents_sse_resumingFarBackWithAFilter_scansAtMostTheBudgetASecond(t *testing.T) {
	a := sqliteApp(t, func(c *api.Config) { c.FeedScanMax = 10 })
	srv := httptest.NewServer(a.h)
	defer srv.Close()
	for i := range 60 {
		a.createVersion("other", i, fmt.Sprintf("v%d", i+1))
	}
	a.createVersion("support", 0, "wanted")
	for deadline := time.Now().Add(10 * time.Second); a.rt.Feed.Head() < 61 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	r, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/events?since=0&agent=support", nil)
	r.Header.Set("Authorization", "Bearer "+admin)
	r.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	var progress []string
	for {
		e, ok := readSSE(t, sc)
		if !ok {
			break // the 1.5 s are up
		}
		if e.event == "version.created" {
			t.Fatalf("the matching event arrived within 1.5 s, after %v: the backlog of 61 was scanned faster than 10 a second", progress)
		}
		if e.event == "progress" {
			progress = append(progress, e.id)
		}
	}
	if len(progress) == 0 || len(progress) > 2 || progress[0] != "10" {
		t.Fatalf("progress ids in 1.5 s = %v; want 10 first, at most two budgets", progress)
	}
}
