package client_test

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promptd/promptd/api/client"
)

// TestRetry_lostAnswer_sameIdempotencyKey_createsOnce: the answer to a
// version create is lost after promptd wrote it; the client retries with
// the same Idempotency-Key and gets the first outcome back, so exactly one
// version exists. A PUT (no key) whose answer is lost is not retried.
func TestRetry_lostAnswer_sameIdempotencyKey_createsOnce(t *testing.T) {
	s := startPromptd(t)
	ctx := ctxT(t)
	var keys []string
	var lose atomic.Int32
	lose.Store(1)
	s.trace.fail = func(r *http.Request) error {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/versions") {
			keys = append(keys, r.Header.Get("Idempotency-Key"))
		}
		if lose.Load() > 0 && r.Method != http.MethodGet {
			lose.Add(-1)
			return errors.New("connection reset after the request was sent")
		}
		return nil
	}
	v, err := s.admin.CreateVersion(ctx, "support", client.CreateVersionRequest{Config: cfg("once")})
	if err != nil || v.Version != 1 {
		t.Fatalf("create: %+v, %v", v, err)
	}
	if len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
		t.Fatalf("want two attempts with one key, got %q", keys)
	}
	vs, err := s.admin.ListVersions(ctx, "support", client.ListOptions{})
	if err != nil || len(vs.Items) != 1 {
		t.Fatalf("versions: %+v, %v", vs, err)
	}

	lose.Store(1)
	puts := s.trace.count(http.StatusCreated)
	_, err = s.admin.PutEnv(ctx, "support", "prod", client.PutEnvRequest{Version: 1})
	if err == nil || errors.As(err, new(*client.Error)) || !client.Unreachable(err) {
		t.Fatalf("lost PUT answer: %v, want the transport error", err)
	}
	if got := s.trace.count(http.StatusCreated) - puts; got != 1 {
		t.Fatalf("the PUT was sent %d times, want 1 (not retried)", got)
	}
}

// TestRetry_promptdDown_boundedAttempts: a refused connection is retried a
// bounded number of times, then reported.
func TestRetry_promptdDown_boundedAttempts(t *testing.T) {
	s := startPromptd(t)
	s.p.Kill()
	c := client.New(s.p.URL, adminSecret, client.WithRetries(2), client.WithMaxRetryWait(50*time.Millisecond))
	start := time.Now()
	_, err := c.ListAgents(ctxT(t), client.ListOptions{})
	if err == nil || !client.Unreachable(err) || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
}
