package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/api"
	"github.com/promptd/promptd/sqlstore"
)

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newServer returns a server over cfg with its own registry and a captured
// debug log.
func newServer(t *testing.T, cfg api.Config) (*api.Server, *prometheus.Registry, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	reg := prometheus.NewRegistry()
	cfg.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.Registerer, cfg.Gatherer = reg, reg
	if cfg.Runtime == nil {
		cfg.Runtime = bareRuntime(t)
	}
	return api.New(cfg), reg, logs
}

// bareRuntime is a runtime over a fresh SQLite file, for the tests of the
// server's own routes (health, metrics, errors).
func bareRuntime(t testing.TB) *promptd.Runtime {
	t.Helper()
	rt, err := promptd.Open(context.Background(), sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "promptd.db")},
		promptd.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

func do(t *testing.T, h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	checkResponse(t, req, rec) // every answer must be the one openapi.yaml documents
	return rec
}

func get(t *testing.T, h http.Handler, path string) *httptest.ResponseRecorder {
	t.Helper()
	return do(t, h, httptest.NewRequest(http.MethodGet, path, nil))
}

// problem decodes and checks a problem+json response.
func problem(t *testing.T, rec *httptest.ResponseRecorder, status int, code string) map[string]any {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status = %d, want %d; body %s", rec.Code, status, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type = %q, want application/problem+json", ct)
	}
	var p map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
	for _, k := range []string{"type", "title", "status", "detail", "code"} {
		if _, ok := p[k]; !ok {
			t.Errorf("problem lacks %q: %v", k, p)
		}
	}
	if p["code"] != code || p["status"] != float64(status) || p["type"] != "urn:promptd:problem:"+code {
		t.Errorf("problem = %v, want code %s status %d", p, code, status)
	}
	return p
}

func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
