package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/api"
	"github.com/promptd/promptd/console"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/webhook"
)

// TestConsolePages_serverTimePerPage seeds a real promptd (SQLite, and
// MariaDB when the test script provides it) and times, server-side, the
// /v1 requests each console page makes (console/assets/pages/*.js), over
// HTTP with the session cookie. PROMPTD_BENCH_CONSOLE=1 seeds 1,000 agents
// x 10 versions (10,000 versions) and runs each page 100 times; without it,
// a smoke size (20 x 3, 5 runs) checks only that every page answers. No
// timed assertion: the table is printed (go test -v).
//
//	PROMPTD_BENCH_CONSOLE=1 ./scripts/test.sh -v -run TestConsolePages_serverTimePerPage ./api/
func TestConsolePages_serverTimePerPage(t *testing.T) {
	size := benchSize{agents: 20, versions: 3, runs: 5, sessions: 20, records: 20, tokens: 5, releases: 3, requests: 3, intents: 5}
	if os.Getenv("PROMPTD_BENCH_CONSOLE") == "1" {
		size = benchSize{agents: 1000, versions: 10, runs: 100, sessions: 1000, records: 1000, tokens: 100, releases: 100, requests: 50, intents: 500}
	}
	testenv.ForEachDialect(t, promptd.Migrations(), func(t *testing.T, db *gorm.DB) {
		b := newBenchServer(t, db)
		start := time.Now()
		seed := b.seed(size)
		t.Logf("seeded %d agents x %d versions, %d sessions, %d board records, %d tokens, %d releases, %d change requests, %d audit events in %s",
			size.agents, size.versions, size.sessions, size.records, size.tokens, size.releases, size.requests, b.count("audit_events"),
			time.Since(start).Round(time.Second))
		b.login()
		rows := make([]benchRow, 0, len(consolePages))
		for _, p := range consolePages {
			reqs := p.requests(seed)
			var totals []time.Duration
			slowest := map[string][]time.Duration{}
			for range size.runs {
				var total time.Duration
				for _, r := range reqs {
					d := b.timed(r)
					total += d
					slowest[r] = append(slowest[r], d)
				}
				totals = append(totals, total)
			}
			worst, worstP99 := "", time.Duration(0)
			for r, ds := range slowest {
				if q := quantile(ds, 0.99); q > worstP99 {
					worst, worstP99 = r, q
				}
			}
			rows = append(rows, benchRow{page: p.name, requests: len(reqs), p50: quantile(totals, 0.5), p99: quantile(totals, 0.99),
				worst: worst, worstP99: worstP99})
		}
		var sb strings.Builder
		fmt.Fprintf(&sb, "console pages, %s, %d agents x %d versions, %d runs each: server time per page (sum of its /v1 requests)\n",
			t.Name(), size.agents, size.versions, size.runs)
		fmt.Fprintf(&sb, "%-22s %4s %9s %9s  %s\n", "page", "reqs", "p50 ms", "p99 ms", "slowest request (its p99 ms)")
		for _, r := range rows {
			fmt.Fprintf(&sb, "%-22s %4d %9.2f %9.2f  %s (%.2f)\n", r.page, r.requests, ms(r.p50), ms(r.p99), r.worst, ms(r.worstP99))
		}
		t.Log("\n" + sb.String())
	})
}

type benchSize struct {
	agents, versions, runs, sessions, records, tokens, releases, requests, intents int
}

type benchRow struct {
	page     string
	requests int
	p50, p99 time.Duration
	worst    string
	worstP99 time.Duration
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// benchSeed names what the pages open.
type benchSeed struct {
	agent, midAgent, release, session, board, webhook, intent string
	versions                                                  int
}

// consolePage is a console page and the /v1 requests it makes on load
// (console/assets/pages/*.js; the shell's GET /ui/session with each).
type consolePage struct {
	name     string
	requests func(s benchSeed) []string
}

var consolePages = []consolePage{
	{"agents", func(s benchSeed) []string { return []string{"/ui/session", "/v1/agents?limit=50"} }},
	{"agents (page 10)", func(s benchSeed) []string {
		return []string{"/ui/session", "/v1/agents?limit=50&cursor=" + s.midAgent}
	}},
	{"agent", func(s benchSeed) []string {
		a := "/v1/agents/" + s.agent
		return []string{"/ui/session", a + "/versions?limit=20", a + "/versions?limit=1", "/v1/bundle?agents=" + s.agent}
	}},
	{"diff", func(s benchSeed) []string {
		return []string{"/ui/session", fmt.Sprintf("/v1/agents/%s/versions/1/diff/%d", s.agent, s.versions)}
	}},
	{"env", func(s benchSeed) []string {
		a := "/v1/agents/" + s.agent + "/envs/prod"
		return []string{"/ui/session", a, a + "/history?limit=20"}
	}},
	{"releases", func(s benchSeed) []string {
		return []string{"/ui/session", "/v1/agents/" + s.agent + "/envs/prod/releases?limit=20", "/v1/agents?limit=100"}
	}},
	{"releases (recent)", func(s benchSeed) []string {
		return []string{"/ui/session", "/v1/audit?action=release.created&order=desc&limit=50", "/v1/agents?limit=100"}
	}},
	{"release", func(s benchSeed) []string {
		from := url.QueryEscape(time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
		return []string{"/ui/session", "/v1/releases/" + s.release, "/v1/agents/" + s.agent + "/envs/prod/exposures?from=" + from + "&limit=500"}
	}},
	{"sessions", func(s benchSeed) []string {
		return []string{"/ui/session", "/v1/sessions?limit=50"}
	}},
	{"session", func(s benchSeed) []string {
		a := "/v1/sessions/" + s.session
		return []string{"/ui/session", a + "?limit=1", a + "?since=0&limit=50", a + "/state"}
	}},
	{"boards", func(s benchSeed) []string {
		return []string{"/ui/session", "/v1/boards?limit=50"}
	}},
	{"board", func(s benchSeed) []string {
		a := "/v1/boards/" + s.board
		return []string{"/ui/session", a, a + "/records?limit=50", a + "/changes?actions=board.record_reclaimed&since=0&wait_ms=0&limit=50"}
	}},
	{"intents", func(s benchSeed) []string { return []string{"/ui/session", "/v1/intents?limit=50"} }},
	{"intents (by board)", func(s benchSeed) []string {
		return []string{"/ui/session", "/v1/intents?board=" + s.board + "&limit=50"}
	}},
	{"intent", func(s benchSeed) []string { return []string{"/ui/session", "/v1/intents/" + s.intent} }},
	{"webhooks", func(s benchSeed) []string { return []string{"/ui/session", "/v1/webhooks?limit=50"} }},
	{"webhook", func(s benchSeed) []string {
		return []string{"/ui/session", "/v1/webhooks/" + s.webhook, "/v1/webhooks/" + s.webhook + "/deliveries?limit=50"}
	}},
	{"tokens", func(s benchSeed) []string { return []string{"/ui/session", "/v1/tokens?limit=50"} }},
	{"change-requests", func(s benchSeed) []string {
		return []string{"/ui/session", "/v1/change-requests?state=pending&limit=50"}
	}},
	{"audit", func(s benchSeed) []string { return []string{"/ui/session", "/v1/audit?order=desc&limit=50"} }},
	{"audit (by agent)", func(s benchSeed) []string {
		return []string{"/ui/session", "/v1/audit?agent=" + s.agent + "&order=desc&limit=50"}
	}},
}

// benchServer is a promptd over db behind a real listener, timing each
// request server-side by its X-Request-Id.
type benchServer struct {
	t      *testing.T
	db     *gorm.DB
	url    string
	client *http.Client
	cookie string
	mu     sync.Mutex
	took   map[string]time.Duration
	n      int
}

func newBenchServer(t *testing.T, db *gorm.DB) *benchServer {
	t.Helper()
	key, _ := webhook.ParseKey(webhook.NewKey())
	cipher, _ := webhook.NewCipher(key)
	locker := locks.NewMemory(locks.Options{Holder: "bench"})
	rt := promptd.New(db, promptd.Options{Instance: "bench", Locker: locker, EventFlush: 20 * time.Millisecond,
		Webhooks: webhook.Options{Cipher: cipher, Client: &http.Client{Transport: noNetwork{}}},
		Access:   access.Options{Reserved: []string{"ops", "agent"}}})
	t.Cleanup(func() { _ = rt.Close() })
	reg := prometheus.NewRegistry()
	srv, _, _ := newServer(t, api.Config{
		Registerer: reg, Gatherer: reg, Tokens: testTokens, Runtime: rt, Console: console.Assets(),
	})
	b := &benchServer{t: t, db: db, took: map[string]time.Duration{}, client: &http.Client{Timeout: time.Minute}}
	h := srv.Handler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		h.ServeHTTP(w, r)
		if id := r.Header.Get("X-Request-Id"); id != "" {
			b.mu.Lock()
			b.took[id] = time.Since(start)
			b.mu.Unlock()
		}
	}))
	t.Cleanup(hs.Close)
	b.url = hs.URL
	return b
}

// call sends one request (bearer admin unless cookie) and returns its
// status and body.
func (b *benchServer) call(method, path, body string, headers ...string) (int, []byte) {
	b.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	rq, err := http.NewRequest(method, b.url+path, r)
	if err != nil {
		b.t.Fatal(err)
	}
	if body != "" {
		rq.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		rq.Header.Set(headers[i], headers[i+1])
	}
	if b.cookie != "" && rq.Header.Get("Authorization") == "" {
		rq.Header.Set("Cookie", "promptd_session="+b.cookie)
	} else if rq.Header.Get("Authorization") == "" {
		rq.Header.Set("Authorization", "Bearer "+admin)
	}
	res, err := b.client.Do(rq)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	return res.StatusCode, out
}

// must is call that fails the test on a status other than want.
func (b *benchServer) must(want int, method, path, body string, headers ...string) map[string]any {
	b.t.Helper()
	status, out := b.call(method, path, body, headers...)
	if status != want {
		b.t.Fatalf("%s %s = %d, want %d: %.300s", method, path, status, want, out)
	}
	var m map[string]any
	_ = json.Unmarshal(out, &m)
	return m
}

// timed GETs path with the session cookie and returns the server's time.
func (b *benchServer) timed(path string) time.Duration {
	b.t.Helper()
	b.n++
	id := fmt.Sprintf("bench-%d", b.n)
	status, out := b.call("GET", path, "", "X-Request-Id", id)
	if status != http.StatusOK {
		b.t.Fatalf("GET %s = %d: %.300s", path, status, out)
	}
	for range 1000 { // the handler returns just after the client has the body
		b.mu.Lock()
		d, ok := b.took[id]
		delete(b.took, id)
		b.mu.Unlock()
		if ok {
			return d
		}
		time.Sleep(time.Millisecond)
	}
	b.t.Fatalf("GET %s: no server time recorded", path)
	return 0
}

func (b *benchServer) login() {
	b.t.Helper()
	rq, _ := http.NewRequest("POST", b.url+"/ui/login", strings.NewReader(`{"token": "`+admin+`"}`))
	rq.Header.Set("Content-Type", "application/json")
	res, err := b.client.Do(rq)
	if err != nil || res.StatusCode != http.StatusNoContent {
		b.t.Fatalf("login: %v %v", err, res)
	}
	res.Body.Close()
	for _, c := range res.Cookies() {
		if c.Name == "promptd_session" {
			b.cookie = c.Value
		}
	}
}

// noNetwork answers every webhook delivery 204 without leaving the
// process.
type noNetwork struct{}

func (noNetwork) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
}

func (b *benchServer) count(table string) int64 {
	var n int64
	b.db.Raw("SELECT COUNT(*) FROM " + table).Scan(&n)
	return n
}

// seed writes the data set over HTTP with the admin token: versions by
// import (10,000 items a batch at most), a prod pointer for every agent
// and staging for a tenth, releases, sessions with turns and state, a
// board's records, intents on its records, tokens, a protected env's
// change requests, webhooks.
func (b *benchServer) seed(n benchSize) benchSeed {
	b.t.Helper()
	name := func(i int) string { return fmt.Sprintf("agent-%04d", i) }
	var items []string
	for i := range n.agents {
		for v := range n.versions {
			items = append(items, fmt.Sprintf(`{"agent": %q, "base_version": %d, "config": {"system": "You are agent %d, version %d.\nBe brief.\nLine %d."}, "message": "v%d"}`,
				name(i), v, i, v+1, v, v+1))
		}
	}
	for len(items) > 0 {
		batch := items[:min(2000, len(items))]
		items = items[len(batch):]
		b.must(200, "POST", "/v1/import", `{"mode": "partial", "items": [`+strings.Join(batch, ",")+`]}`, "Idempotency-Key", fmt.Sprintf("seed-%d", len(items)))
	}
	for i := range n.agents {
		b.must(201, "PUT", "/v1/agents/"+name(i)+"/envs/prod", fmt.Sprintf(`{"version": %d, "expected_revision": 0}`, n.versions-1))
		if i%10 == 0 {
			b.must(201, "PUT", "/v1/agents/"+name(i)+"/envs/staging", `{"version": 1, "expected_revision": 0}`)
		}
	}
	s := benchSeed{agent: name(0), midAgent: name(n.agents / 2), versions: n.versions}
	for i := range n.releases {
		r := b.must(201, "POST", "/v1/agents/"+name(i)+"/envs/prod/releases",
			fmt.Sprintf(`{"candidate_version": %d, "percent": 10, "stickiness": "user"}`, n.versions), "Idempotency-Key", fmt.Sprintf("rel-%d", i))
		if i == 0 {
			s.release = r["id"].(string)
		}
	}
	for i := range n.sessions {
		id := fmt.Sprintf("sess-%05d", i)
		b.must(201, "POST", "/v1/sessions", fmt.Sprintf(`{"session_id": %q, "agent": %q, "env": "prod", "user_id": "u%d"}`, id, name(i%n.agents), i),
			"Idempotency-Key", "s-"+id)
		if i < 10 {
			b.must(201, "POST", "/v1/sessions/"+id+"/turns", `{"expected_revision": 0, "turns": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]}`,
				"Idempotency-Key", "t-"+id)
			b.must(200, "PUT", "/v1/sessions/"+id+"/state/notes", `{"value": {"k": "v"}, "expected_revision": 0}`, "Idempotency-Key", "st-"+id)
		}
	}
	s.session = "sess-00000"
	s.board = "tasks"
	for i := range n.records {
		b.must(201, "POST", "/v1/boards/tasks/records", fmt.Sprintf(`{"payload": {"n": %d}}`, i), "Idempotency-Key", fmt.Sprintf("rec-%d", i))
	}
	for i := range n.intents { // disjoint record prefixes of the board: none overlaps another
		it := b.must(201, "POST", "/v1/intents", fmt.Sprintf(`{"holder": "importer-%d", "ttl_ms": 3600000, "scope": {"records": [{"board": "tasks", "prefixes": ["part-%d-"]}]}}`, i, i),
			"Idempotency-Key", fmt.Sprintf("int-%d", i))
		s.intent = it["id"].(string)
	}
	for i := range n.tokens {
		b.must(201, "POST", "/v1/tokens", fmt.Sprintf(`{"name": "tok-%03d", "role": "runtime", "scopes": {"agents": ["agent-%d*"]}}`, i, i%10),
			"Idempotency-Key", fmt.Sprintf("tok-%d", i))
	}
	b.must(200, "PUT", "/v1/protections/guarded", `{"approvals": 1}`)
	for i := range n.requests {
		b.must(202, "PUT", "/v1/agents/"+name(i)+"/envs/guarded", `{"version": 1, "expected_revision": 0}`)
	}
	for i := range 5 {
		w := b.must(201, "POST", "/v1/webhooks", fmt.Sprintf(`{"url": "https://93.184.216.34/hook/%d", "actions": ["*"]}`, i), "Idempotency-Key", fmt.Sprintf("wh-%d", i))
		s.webhook = w["id"].(string)
	}
	return s
}
