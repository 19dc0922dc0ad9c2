package allocbudget

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"gorm.io/gorm"

	promptd "github.com/promptd/promptd"
	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/api"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/session"
	"github.com/promptd/promptd/sqlstore"
	"github.com/promptd/promptd/telemetry"
)

const (
	adminToken   = "allocbudget-admin-secret-0123456789"
	runtimeToken = "allocbudget-runtime-secret-0123456789"
)

// Sizes of a measurement: warm-up iterations (first-time caches, pools,
// connection setup, the prepared statements of each query), then measured
// ones. Counts are per iteration, averaged over measured.
const (
	warmIterations     = 50
	measuredIterations = 300
)

// hotPath is one measured workload. start builds a fresh server (or
// locker) for it and returns its iteration; redis: it needs the shared
// test Redis (skipped, or failed under PROMPTD_REQUIRE_INTEGRATION,
// without one).
type hotPath struct {
	name  string
	redis bool
	about string
	start func(tb testing.TB, o serverOptions) iteration
}

// serverOptions varies a server: its locks on Redis (else in memory, as
// one instance runs them), and the SQL counter to install on its database
// (nil: none; it costs allocations, so it is never on while allocations
// are counted).
type serverOptions struct {
	redisLocks bool
	sql        *sqlCounter
}

// hotPaths are the measured workloads, in the order of the report.
var hotPaths = []hotPath{
	{name: "resolve", about: "GET /v1/agents/support/envs/prod/prompt?user_id=u-1, a published 4 KB config", start: startResolve},
	{name: "assemble", about: "POST /v1/agents/support/envs/prod/assemble with variables", start: startAssemble},
	{name: "turn-append", about: "POST /v1/sessions/{id}/turns with expected_revision, no lease", start: startAppend(false)},
	{name: "turn-append-leased", about: "the same under the session's lease, with its fence", start: startAppend(true)},
	{name: "session-lease", about: "POST /v1/sessions/{id}/lease then DELETE it (Lease-Token), in-memory locks", start: startLease},
	{name: "session-lease-redis", redis: true, about: "the same with the locks on Redis", start: startLease},
	{name: "version-create", about: "POST /v1/agents/support/versions, a 4 KB config", start: startVersionCreate},
	{name: "board-claim-complete", about: "POST /v1/boards/{b}/claim, PATCH to running, PATCH to done (fenced)", start: startBoard},
	{name: "locks-redis-cycle", redis: true, about: "locks.Manager.Acquire + Lease.Release on Redis, no HTTP", start: startLockCycle},
	{name: "middleware-healthz", about: "GET /healthz: the middleware chain and a trivial route", start: startHealthz(false)},
	{name: "middleware-healthz-unsampled", about: "the same with a parent-based never-sample tracer installed", start: startHealthz(true)},
}

// quiet keeps the SQL store's slow-statement warnings (a loaded machine
// has many) out of the test's output.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// server is an api handler over promptd.New on a fresh SQLite file,
// wired as cmd/promptd wires it (metrics registered, log level warn).
type server struct {
	tb  testing.TB
	h   http.Handler
	db  *gorm.DB
	w   *sink
	sql *sqlCounter
}

func newServer(tb testing.TB, o serverOptions) *server {
	tb.Helper()
	db := testenv.OpenDB(tb, sqlstore.Config{SQLitePath: filepath.Join(tb.TempDir(), "promptd.db"), Logger: quiet}, promptd.Migrations())
	if o.sql != nil {
		o.sql.install(tb, db)
	}
	logger := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var locker locks.Locker
	var keys locks.Keys
	if o.redisLocks {
		keys = locks.Keys{Prefix: "allocbudget-" + locks.NewToken()[:8]}
		m := locks.NewRedis(testenv.RedisClient(tb), locks.RedisOptions{Keys: keys}, locks.Options{Holder: "alloc-1"})
		tb.Cleanup(func() { _ = m.Close(context.Background()) })
		locker = m
	}
	rt := promptd.New(db, promptd.Options{Instance: "alloc-1", Logger: logger, Locker: locker, Keys: keys,
		Prompts: promptstore.Options{Metrics: promptstore.NewMetrics(nil)},
		Access:  access.Options{Reserved: []string{"ops", "agent"}}})
	tb.Cleanup(func() { _ = rt.Close() })
	reg := prometheus.NewRegistry()
	h := api.New(api.Config{Logger: logger, Registerer: reg, Gatherer: reg, Runtime: rt,
		Tokens: []api.Token{{Name: "ops", Role: api.RoleAdmin, Secret: adminToken}, {Name: "agent", Role: api.RoleRuntime, Secret: runtimeToken}},
	}).Handler()
	return &server{tb: tb, h: h, db: db, w: &sink{h: http.Header{}}, sql: o.sql}
}

// sink is a ResponseWriter that keeps the status and body in reused
// buffers, so a measurement counts the handler, not a recorder.
type sink struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (s *sink) Header() http.Header { return s.h }
func (s *sink) WriteHeader(status int) {
	if s.status == 0 {
		s.status = status
	}
}
func (s *sink) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.body.Write(p)
}
func (s *sink) reset() { clear(s.h); s.status = 0; s.body.Reset() }

// request builds a request (not measured); headers come in name, value
// pairs.
func request(method, path, token, body string, headers ...string) *http.Request {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r := httptest.NewRequest(method, path, rd)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	return r
}

// serve runs r through mark and checks its status; out, when not nil,
// receives the JSON answer (decoded after the measured part).
func (s *server) serve(mark func(func()), r *http.Request, want int, out any) error {
	s.w.reset()
	if s.sql != nil {
		r = r.WithContext(context.WithValue(r.Context(), requestKey{}, true))
	}
	mark(func() { s.h.ServeHTTP(s.w, r) })
	if s.w.status != want {
		return fmt.Errorf("%s %s: %d %s, want %d", r.Method, r.URL, s.w.status, s.w.body.Bytes(), want)
	}
	if out != nil {
		return json.Unmarshal(s.w.body.Bytes(), out)
	}
	return nil
}

// must runs a setup request.
func (s *server) must(method, path, token, body string, want int, out any) {
	s.tb.Helper()
	if err := s.serve(func(f func()) { f() }, request(method, path, token, body), want, out); err != nil {
		s.tb.Fatal(err)
	}
}

// config4K is a 4 KB config with one required variable.
func config4K(n int) string {
	system := fmt.Sprintf("You are {{persona}} (v%d). ", n) + strings.Repeat("You are a careful support agent. ", 4096/33)
	return `{"system": "` + system + `", "model": {"name": "m"}, "variables": {"persona": {"required": true}}}`
}

// published: support v1 (4 KB) at support/prod.
func published(tb testing.TB, o serverOptions) *server {
	s := newServer(tb, o)
	s.must("POST", "/v1/agents/support/versions", adminToken, `{"base_version": 0, "config": `+config4K(1)+`}`, 201, nil)
	s.must("PUT", "/v1/agents/support/envs/prod", adminToken, `{"version": 1, "expected_revision": 0}`, 201, nil)
	return s
}

func startResolve(tb testing.TB, o serverOptions) iteration {
	s := published(tb, o)
	return func(i int, mark func(func())) error {
		return s.serve(mark, request("GET", "/v1/agents/support/envs/prod/prompt?user_id=u-1", runtimeToken, ""), 200, nil)
	}
}

func startAssemble(tb testing.TB, o serverOptions) iteration {
	s := published(tb, o)
	const body = `{"user_id": "u-1", "variables": {"persona": "a support agent"}}`
	return func(i int, mark func(func())) error {
		return s.serve(mark, request("POST", "/v1/agents/support/envs/prod/assemble", runtimeToken, body), 200, nil)
	}
}

// leaseBody asks for the session lease for the longest TTL.
var leaseBody = fmt.Sprintf(`{"holder": "agent-1", "ttl_ms": %d}`, session.MaxLeaseTTL.Milliseconds())

type leaseAnswer struct {
	Token string `json:"token"`
	Fence int64  `json:"fence"`
}

func startAppend(leased bool) func(tb testing.TB, o serverOptions) iteration {
	return func(tb testing.TB, o serverOptions) iteration {
		s := published(tb, o)
		s.must("POST", "/v1/sessions", runtimeToken, `{"session_id": "s-1", "agent": "support", "env": "prod", "user_id": "u-1"}`, 201, nil)
		var lease leaseAnswer
		fence := ""
		if leased {
			s.must("POST", "/v1/sessions/s-1/lease", runtimeToken, leaseBody, 200, &lease)
			fence = fmt.Sprintf(`, "fence": %d`, lease.Fence)
		}
		var rev int64
		return func(i int, mark func(func())) error {
			if leased && i%25 == 0 { // the lease outlives any pause of the run
				r := request("POST", "/v1/sessions/s-1/lease/renew", runtimeToken, fmt.Sprintf(`{"ttl_ms": %d}`, session.MaxLeaseTTL.Milliseconds()),
					"Lease-Token", lease.Token)
				if err := s.serve(func(f func()) { f() }, r, 200, nil); err != nil {
					return err
				}
			}
			body := fmt.Sprintf(`{"expected_revision": %d%s, "turns": [{"role": "user", "content": "turn %d: where is my order?"}]}`, rev, fence, i)
			var out struct {
				Revision int64 `json:"revision"`
			}
			r := request("POST", "/v1/sessions/s-1/turns", runtimeToken, body)
			if err := s.serve(mark, r, 201, &out); err != nil {
				return err
			}
			rev = out.Revision
			return nil
		}
	}
}

func startLease(tb testing.TB, o serverOptions) iteration {
	s := published(tb, o)
	s.must("POST", "/v1/sessions", runtimeToken, `{"session_id": "s-1", "agent": "support", "env": "prod", "user_id": "u-1"}`, 201, nil)
	return func(i int, mark func(func())) error {
		var lease leaseAnswer
		if err := s.serve(mark, request("POST", "/v1/sessions/s-1/lease", runtimeToken, leaseBody), 200, &lease); err != nil {
			return err
		}
		return s.serve(mark, request("DELETE", "/v1/sessions/s-1/lease", runtimeToken, "", "Lease-Token", lease.Token), 204, nil)
	}
}

func startVersionCreate(tb testing.TB, o serverOptions) iteration {
	s := published(tb, o)
	return func(i int, mark func(func())) error {
		body := fmt.Sprintf(`{"base_version": %d, "config": %s, "message": "v%d"}`, i+1, config4K(i+2), i+2)
		return s.serve(mark, request("POST", "/v1/agents/support/versions", adminToken, body), 201, nil)
	}
}

func startBoard(tb testing.TB, o serverOptions) iteration {
	s := newServer(tb, o)
	type record struct {
		ID       string `json:"id"`
		Revision int64  `json:"revision"`
	}
	return func(i int, mark func(func())) error {
		// One pending record, created unmeasured: the claim finds it.
		if err := s.serve(func(f func()) { f() }, request("POST", "/v1/boards/work/records", runtimeToken, fmt.Sprintf(`{"payload": {"n": %d}}`, i)), 201, nil); err != nil {
			return err
		}
		var claim struct {
			Record record `json:"record"`
			Fence  int64  `json:"fence"`
		}
		if err := s.serve(mark, request("POST", "/v1/boards/work/claim", runtimeToken, `{"holder": "agent-1"}`), 200, &claim); err != nil {
			return err
		}
		rec := claim.Record
		for _, state := range []string{"running", "done"} {
			body := fmt.Sprintf(`{"expected_revision": %d, "state": %q, "fence": %d}`, rec.Revision, state, claim.Fence)
			if err := s.serve(mark, request("PATCH", "/v1/boards/work/records/"+rec.ID, runtimeToken, body), 200, &rec); err != nil {
				return err
			}
		}
		return nil
	}
}

func startLockCycle(tb testing.TB, _ serverOptions) iteration {
	keys := locks.Keys{Prefix: "allocbudget-" + locks.NewToken()[:8]}
	m := locks.NewRedis(testenv.RedisClient(tb), locks.RedisOptions{Keys: keys}, locks.Options{Holder: "alloc-1"})
	tb.Cleanup(func() { _ = m.Close(context.Background()) })
	key, err := keys.Key("lease", "k-1")
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	return func(i int, mark func(func())) error {
		var err error
		mark(func() {
			var l *locks.Lease
			if l, err = m.Acquire(ctx, key, 10*time.Second); err == nil {
				err = l.Release(ctx)
			}
		})
		return err
	}
}

// discardSpans drops every span batch.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

func startHealthz(unsampled bool) func(tb testing.TB, o serverOptions) iteration {
	return func(tb testing.TB, o serverOptions) iteration {
		if unsampled {
			tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())), sdktrace.WithBatcher(discardSpans{}))
			telemetry.Install(tp)
			tb.Cleanup(func() { telemetry.Uninstall(); _ = tp.Shutdown(context.Background()) })
		}
		s := newServer(tb, o)
		return func(i int, mark func(func())) error {
			return s.serve(mark, request("GET", "/healthz", "", ""), 200, nil)
		}
	}
}

// runPath measures p on a fresh server; skipped without Redis when p
// needs it.
func runPath(tb testing.TB, p hotPath, o serverOptions) result {
	tb.Helper()
	if p.redis {
		o.redisLocks = true
		skipWithoutRedis(tb)
	}
	return measure(tb, warmIterations, measuredIterations, p.start(tb, o))
}

// skipWithoutRedis skips tb without the shared test Redis, unless
// integration tests are required (testenv then fails it).
func skipWithoutRedis(tb testing.TB) {
	tb.Helper()
	if os.Getenv("PROMPTD_TEST_REDIS_URL") == "" && os.Getenv("PROMPTD_REQUIRE_INTEGRATION") != "1" {
		tb.Skip("needs Redis (PROMPTD_TEST_REDIS_URL): see docs/performance.md")
	}
}
