package client_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promptd/promptd/api/client"
)

// TestPromptCache_promptdKilled_servesLastGoodPrompt: the cache revalidates
// with If-None-Match (304), keeps serving the last good prompt while
// promptd is gone, and revalidates again once it is back.
func TestPromptCache_promptdKilled_servesLastGoodPrompt(t *testing.T) {
	s := startPromptd(t)
	ctx := ctxT(t)
	publish(t, s, "support", "prod", "You are helpful.")
	const maxAge = 150 * time.Millisecond
	var errs []error
	pc := s.rt.NewPromptCache(client.CacheMaxAge(maxAge), client.CacheTimeout(500*time.Millisecond),
		client.CacheOnError(func(agent, env string, err error) { errs = append(errs, err) }))

	p, err := pc.Get(ctx, "support", "prod", "u1", "")
	if err != nil || p.Version != 1 || p.ETag == "" {
		t.Fatalf("first get: %+v, %v", p, err)
	}
	if again, _ := pc.Get(ctx, "support", "prod", "u1", ""); again != p || pc.Stats().Hits != 1 {
		t.Fatalf("a fresh entry is served from memory: %+v", pc.Stats())
	}
	time.Sleep(maxAge + 50*time.Millisecond)
	if p2, err := pc.Get(ctx, "support", "prod", "u1", ""); err != nil || p2 != p {
		t.Fatalf("revalidated: %+v, %v", p2, err)
	}
	if st := pc.Stats(); st.NotModified != 1 || st.Revalidations != 2 || s.trace.count(http.StatusNotModified) < 1 {
		t.Fatalf("want one 304 revalidation: %+v, 304s seen %d", st, s.trace.count(http.StatusNotModified))
	}

	s.p.Kill()
	for i := 0; i < 3; i++ {
		time.Sleep(maxAge + 50*time.Millisecond)
		got, err := pc.Get(ctx, "support", "prod", "u1", "")
		if err != nil || got != p {
			t.Fatalf("promptd down: got %+v, %v; want the last good prompt", got, err)
		}
	}
	if st := pc.Stats(); st.StaleServed != 3 || len(errs) != 3 || !client.Unreachable(errs[0]) {
		t.Fatalf("stale served: %+v, errors %v", st, errs)
	}
	if _, err := pc.Get(ctx, "support", "prod", "u2", ""); err == nil {
		t.Fatal("a caller never fetched has no last good prompt while promptd is down")
	}

	s.p.Restart()
	time.Sleep(maxAge + 50*time.Millisecond)
	notModified := pc.Stats().NotModified
	if got, err := pc.Get(ctx, "support", "prod", "u1", ""); err != nil || got != p || pc.Stats().NotModified != notModified+1 {
		t.Fatalf("after restart: %+v, %v, %+v", got, err, pc.Stats())
	}
}

// TestPromptCache_versionRevoked_isNeverServed: once the env moves away
// from a version and revokes it, the next revalidation serves the new
// version; a closed session's prompt is dropped, not served.
func TestPromptCache_versionRevoked_isNeverServed(t *testing.T) {
	s := startPromptd(t)
	ctx := ctxT(t)
	publish(t, s, "support", "prod", "v1")
	publish(t, s, "support", "prod", "v2")
	const maxAge = 100 * time.Millisecond
	pc := s.rt.NewPromptCache(client.CacheMaxAge(maxAge))
	sess, err := s.rt.CreateSession(ctx, client.CreateSessionRequest{Agent: "support", Env: "prod", UserID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, sid := range []string{"", sess.SessionID} {
		if p, err := pc.Get(ctx, "support", "prod", "u1", sid); err != nil || p.Version != 2 {
			t.Fatalf("get (session %q): %+v, %v", sid, p, err)
		}
	}
	r, err := s.admin.RollbackEnv(ctx, "support", "prod", client.RollbackEnvRequest{ExpectedRevision: 2, Reason: "bad v2"})
	if err != nil || r.ToVersion != 1 || !r.Env.IsRevoked(2) {
		t.Fatalf("rollback: %+v, %v", r, err)
	}
	time.Sleep(maxAge + 50*time.Millisecond)
	for _, sid := range []string{"", sess.SessionID} {
		p, err := pc.Get(ctx, "support", "prod", "u1", sid)
		if err != nil || p.Version != 1 {
			t.Fatalf("after revoking v2 (session %q): %+v, %v", sid, p, err)
		}
		if sid != "" && (p.RepinnedFrom == nil || *p.RepinnedFrom != 2) {
			t.Fatalf("the session was re-pinned from 2: %+v", p)
		}
	}
	if _, err := s.rt.CloseSession(ctx, sess.SessionID, client.WriteCondition{ExpectedRevision: 0}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(maxAge + 50*time.Millisecond)
	p, err := pc.Get(ctx, "support", "prod", "u1", sess.SessionID)
	if !errors.Is(err, client.ErrSessionClosed) || p != nil {
		t.Fatalf("closed session: %+v, %v; want ErrSessionClosed and nothing served", p, err)
	}
	if pc.Stats().Dropped != 1 {
		t.Fatalf("stats %+v", pc.Stats())
	}
}

// TestPromptCache_envReportsRevoked_dropsEvenOn304: an instance that has
// not caught up answers 304 for a version its env already lists as
// revoked; the cache drops the version rather than serve it.
func TestPromptCache_envReportsRevoked_dropsEvenOn304(t *testing.T) {
	var revoked atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/prompt"):
			w.Header().Set("ETag", `"p1"`)
			if r.Header.Get("If-None-Match") == `"p1"` {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			fmt.Fprint(w, `{"agent":"a","env":"prod","version":2,"content_hash":"sha256:x","config":{"system":"s"}}`)
		default: // the env
			list := "[]"
			if revoked.Load() {
				list = "[2]"
			}
			fmt.Fprintf(w, `{"agent":"a","env":"prod","version":1,"revision":3,"revoked":%s}`, list)
		}
	}))
	defer srv.Close()
	pc := client.New(srv.URL, "t").NewPromptCache(client.CacheMaxAge(time.Millisecond))
	ctx := ctxT(t)
	if p, err := pc.Get(ctx, "a", "prod", "u", ""); err != nil || p.Version != 2 {
		t.Fatalf("get: %+v, %v", p, err)
	}
	revoked.Store(true)
	time.Sleep(5 * time.Millisecond)
	p, err := pc.Get(ctx, "a", "prod", "u", "")
	if !errors.Is(err, client.ErrPromptRevoked) || p != nil {
		t.Fatalf("got %+v, %v; want ErrPromptRevoked and nothing served", p, err)
	}
	if st := pc.Stats(); st.NotModified != 1 || st.Dropped != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestPromptCache_maxEntries_evicts: the cache holds at most MaxEntries
// callers.
func TestPromptCache_maxEntries_evicts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/prompt") {
			fmt.Fprint(w, `{"agent":"a","env":"prod","version":1,"config":{"system":"s"}}`)
			return
		}
		fmt.Fprint(w, `{"agent":"a","env":"prod","version":1,"revision":1,"revoked":[]}`)
	}))
	defer srv.Close()
	pc := client.New(srv.URL, "t").NewPromptCache(client.CacheMaxEntries(3))
	for i := 0; i < 10; i++ {
		if _, err := pc.Get(ctxT(t), "a", "prod", fmt.Sprint("user-", i), ""); err != nil {
			t.Fatal(err)
		}
	}
	if n := pc.Len(); n != 3 {
		t.Fatalf("%d entries, want 3", n)
	}
}
