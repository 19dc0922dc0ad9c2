package api_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/sqlstore"
)

// With Redis down, lease exclusivity can be neither granted nor checked:
// lease routes answer 503 store_unavailable (store redis) with
// Retry-After, and session writes proceed on their SQL conditions alone.
func TestLeaseRoutes_redisDown_are503_writesProceed(t *testing.T) {
	srv := testenv.StartRedis(t)
	keys := locks.Keys{Prefix: "degraded"}
	locker := locks.NewRedis(srv.Client(t), locks.RedisOptions{Keys: keys, Timeout: 100 * time.Millisecond}, locks.Options{Holder: "test-1"})
	t.Cleanup(func() { _ = locker.Close(context.Background()) })
	db := testenv.OpenDB(t, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "promptd.db")}, migrations())
	a := newAppWith(t, db, promptstore.Options{Instance: "test-1", Locker: locker, Keys: keys})
	a.withVersions(1)
	a.createSession("s1", "")
	srv.Kill()

	for _, r := range []struct{ method, path, body string }{
		{"POST", "/v1/leases", `{"resources": ["order:1"], "holder": "a"}`},
		{"POST", "/v1/sessions/s1/lease", `{"holder": "a"}`},
		{"POST", "/v1/sessions/s1/lease/renew", `{"ttl_ms": 1000}`},
		{"DELETE", "/v1/sessions/s1/lease", ""},
		{"POST", "/v1/leases/ls_YQ/renew", `{"ttl_ms": 1000}`},
		{"DELETE", "/v1/leases/ls_YQ", ""},
	} {
		rec := a.do(r.method, r.path, runtime, r.body, "Lease-Token", "some-token")
		if p := problem(t, rec, 503, "store_unavailable"); p["store"] != "redis" || rec.Header().Get("Retry-After") == "" {
			t.Errorf("%s %s: %v (Retry-After %q)", r.method, r.path, p, rec.Header().Get("Retry-After"))
		}
	}
	if strings.Contains(a.logs.String(), "some-token") {
		t.Fatal("a lease token reached the error log")
	}
	a.ok(a.do("POST", "/v1/sessions/s1/turns", runtime, appendBody(0, nil, "still works")), 201)
	a.ok(a.do("PUT", "/v1/sessions/s1/state/k", runtime, `{"value": 1, "expected_revision": 0}`), 200)
}
