package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/promptd/promptd/api/client"
	"github.com/promptd/promptd/internal/harness/testenv"
)

const (
	adminSecret   = "admin-secret-for-client-tests"
	runtimeSecret = "runtime-secret-for-client-tests"
)

// server is a real promptd (embedded SQLite, in-memory locks) with an
// admin and a runtime client.
type server struct {
	p      *testenv.Promptd
	admin  *client.Client
	rt     *client.Client
	trace  *tracer // sees every answer the admin and runtime clients get
	tokens string
}

func startPromptd(t testing.TB) *server {
	t.Helper()
	if testing.Short() {
		t.Skip("starts promptd")
	}
	s := &server{trace: &tracer{}, tokens: "ops:admin:" + adminSecret + ",rt:runtime:" + runtimeSecret}
	s.p = testenv.StartPromptd(t, map[string]string{"PROMPTD_DATA_DIR": t.TempDir(), "PROMPTD_TOKENS": s.tokens})
	hc := &http.Client{Timeout: 10 * time.Second, Transport: s.trace}
	s.admin = client.New(s.p.URL, adminSecret, client.WithHTTPClient(hc))
	s.rt = client.New(s.p.URL, runtimeSecret, client.WithHTTPClient(hc))
	return s
}

// tracer is a RoundTripper that records the statuses promptd answered.
type tracer struct {
	mu       sync.Mutex
	statuses []int
	// fail, when set, is asked before each request; a non-nil error is
	// returned after the request reached promptd (its answer is lost).
	fail func(*http.Request) error
}

func (tr *tracer) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	tr.mu.Lock()
	tr.statuses = append(tr.statuses, resp.StatusCode)
	fail := tr.fail
	tr.mu.Unlock()
	if fail != nil {
		if ferr := fail(r); ferr != nil {
			resp.Body.Close()
			return nil, ferr
		}
	}
	return resp, nil
}

func (tr *tracer) count(status int) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for _, s := range tr.statuses {
		if s == status {
			n++
		}
	}
	return n
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// cfg is a small config whose system prompt is text.
func cfg(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"system": text})
	return b
}

// publish creates the next version of agent with system prompt text and
// points env at it.
func publish(t *testing.T, s *server, agent, env, text string) *client.Version {
	t.Helper()
	ctx := ctxT(t)
	base := 0
	if vs, err := s.admin.ListVersions(ctx, agent, client.ListOptions{Limit: 1}); err == nil && len(vs.Items) > 0 {
		base = vs.Items[0].Version
	}
	v, err := s.admin.CreateVersion(ctx, agent, client.CreateVersionRequest{BaseVersion: base, Config: cfg(text)})
	if err != nil {
		t.Fatalf("create %s: %v", agent, err)
	}
	if env == "" {
		return v
	}
	var rev int64
	if e, err := s.admin.GetEnv(ctx, agent, env); err == nil {
		rev = e.Revision
	}
	if _, err := s.admin.PutEnv(ctx, agent, env, client.PutEnvRequest{Version: v.Version, ExpectedRevision: rev}); err != nil {
		t.Fatalf("point %s/%s at %d: %v", agent, env, v.Version, err)
	}
	return v
}

// wantCode fails unless err carries code (errors.Is) as a *client.Error,
// and returns it.
func wantCode(t *testing.T, err error, code client.Code) *client.Error {
	t.Helper()
	if !errors.Is(err, code) {
		t.Fatalf("err = %v, want %s", err, code)
	}
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %T %v, want *client.Error", err, err)
	}
	return e
}

func unique(prefix string) string { return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()) }
