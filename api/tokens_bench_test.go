package api_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/api"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/sqlstore"
)

// BenchmarkResolve_managedTokens resolves with the static runtime token
// and with 1,000 managed tokens in turn (each request the next token, so
// every cached check expires and is re-read from SQL once a second), in
// alternating batches within one run: managed/static is the same-run
// ratio of their costs per request.
func BenchmarkResolve_managedTokens(b *testing.B) {
	db := testenv.OpenDB(b, sqlstore.Config{SQLitePath: filepath.Join(b.TempDir(), "promptd.db")}, migrations())
	logger := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rt := promptd.New(db, promptd.Options{Instance: "bench-1", Logger: logger, Prompts: promptstore.Options{Metrics: promptstore.NewMetrics(nil)},
		Access: access.Options{Reserved: []string{"ops", "agent"}}})
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
	ops := &access.Token{Name: "ops", Role: access.RoleAdmin, Principal: "ops", Bootstrap: true}
	managed := make([]string, 1000)
	for i := range managed {
		t, err := rt.Access.Create(context.Background(), ops, access.CreateInput{Name: fmt.Sprintf("rt-%04d", i), Role: access.RoleRuntime,
			Scopes: &access.Scopes{Agents: []string{"support"}}})
		if err != nil {
			b.Fatal(err)
		}
		managed[i] = t.Secret
	}
	w := &discard{h: http.Header{}}
	resolve := func(token string) {
		r := httptest.NewRequest("GET", "/v1/agents/support/envs/prod/prompt?user_id=u-1", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		clear(w.h)
		h.ServeHTTP(w, r)
		if w.status != 200 {
			b.Fatalf("status %d", w.status)
		}
	}
	for _, s := range managed { // warm: every token checked once
		resolve(s)
	}
	const batch = 100
	var static, mgd time.Duration
	n, next := 0, 0
	b.ResetTimer()
	for n < b.N {
		k := min(batch, b.N-n)
		start := time.Now()
		for range k {
			resolve(runtime)
		}
		static += time.Since(start)
		start = time.Now()
		for range k {
			resolve(managed[next%len(managed)])
			next++
		}
		mgd += time.Since(start)
		n += k
	}
	b.ReportMetric(float64(static.Nanoseconds())/float64(b.N), "ns/static")
	b.ReportMetric(float64(mgd.Nanoseconds())/float64(b.N), "ns/managed")
	b.ReportMetric(float64(mgd)/float64(static), "managed/static")
}
