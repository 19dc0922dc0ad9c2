package api_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/api"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/sqlstore"
)

// discard is a ResponseWriter that keeps nothing, so a benchmark measures
// the handler and not a recorder.
type discard struct {
	h      http.Header
	status int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) WriteHeader(status int)      { d.status = status }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }

// benchResolveServer is a server wired as cmd/promptd wires it (session
// pin -> release arm -> env pointer, metrics registered, log level warn),
// over SQLite, with a 4 KB config published at support/prod (the config
// of cmd/promptbench's resolve scenario).
func benchResolveServer(b *testing.B) http.Handler {
	b.Helper()
	db := testenv.OpenDB(b, sqlstore.Config{SQLitePath: filepath.Join(b.TempDir(), "promptd.db")}, migrations())
	logger := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rt := promptd.New(db, promptd.Options{Instance: "bench-1", Logger: logger, Prompts: promptstore.Options{Metrics: promptstore.NewMetrics(nil)}})
	b.Cleanup(func() { _ = rt.Close() })
	reg := prometheus.NewRegistry()
	h := api.New(api.Config{Logger: logger, Registerer: reg, Gatherer: reg, Tokens: testTokens, Runtime: rt}).Handler()
	system := strings.Repeat("You are a careful support agent. ", 4096/33)
	for _, r := range []*http.Request{
		req("POST", "/v1/agents/support/versions", admin, `{"base_version": 0, "config": {"system": "`+system+`", "model": {"name": "m"}}}`),
		req("PUT", "/v1/agents/support/envs/prod", admin, `{"version": 1, "expected_revision": 0}`),
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code/100 != 2 {
			b.Fatalf("%s %s: %d %s", r.Method, r.URL, rec.Code, rec.Body)
		}
	}
	return h
}

// BenchmarkResolve is GET .../prompt through the whole handler chain
// (request id, metrics, auth, resolve, body, ETag); bare is a bare Echo
// handler serving the same number of bytes, the load benchmark's
// reference. The difference is promptd's own cost per request.
func BenchmarkResolve(b *testing.B) {
	h := benchResolveServer(b)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req("GET", "/v1/agents/support/envs/prod/prompt", runtime, ""))
	body, etag := rec.Body.Bytes(), rec.Header().Get("ETag")
	if rec.Code != 200 || etag == "" {
		b.Fatalf("resolve: %d %s", rec.Code, rec.Body)
	}
	bare := echo.New()
	bare.GET("/prompt", func(c echo.Context) error { return c.Blob(200, "application/json", body) })
	for _, bc := range []struct {
		name, path, token string
		h                 http.Handler
		hdr               []string
		want              int
	}{
		{"bare", "/prompt", "", bare, nil, 200},
		{"resolve", "/v1/agents/support/envs/prod/prompt", runtime, h, nil, 200},
		{"resolve-user", "/v1/agents/support/envs/prod/prompt?user_id=u-1", runtime, h, nil, 200},
		{"resolve-304", "/v1/agents/support/envs/prod/prompt", runtime, h, []string{"If-None-Match", etag}, 304},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				w := &discard{h: http.Header{}}
				for pb.Next() {
					r := httptest.NewRequest("GET", bc.path, nil)
					if bc.token != "" {
						r.Header.Set("Authorization", "Bearer "+bc.token)
					}
					for i := 0; i+1 < len(bc.hdr); i += 2 {
						r.Header.Set(bc.hdr[i], bc.hdr[i+1])
					}
					clear(w.h)
					bc.h.ServeHTTP(w, r)
					if w.status != bc.want {
						b.Fatalf("status %d", w.status)
					}
				}
			})
		})
	}
}
