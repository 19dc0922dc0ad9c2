package api_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/sqlstore"
)

// observedLocker is a locks.Manager over b whose log and metrics the test reads.
func observedLocker(t *testing.T, b locks.Backend, o locks.Options) (*locks.Manager, *syncBuffer, *prometheus.Registry) {
	t.Helper()
	logs := &syncBuffer{}
	reg := prometheus.NewRegistry()
	o.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	o.Metrics = locks.NewMetrics(reg)
	m := locks.New(b, o)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	return m, logs, reg
}

func lostCount(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() == "promptd_lock_leases_lost_total" {
			for _, m := range mf.GetMetric() {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

// A lease acquired over HTTP on one instance and renewed and released by
// token on another (or the same) is never logged or counted as lost by the
// instance that granted it.
func TestLeasesOverHTTP_renewedAndReleasedByToken_areNotReportedLost(t *testing.T) {
	run := func(t *testing.T, grant, other *app, logs *syncBuffer, reg *prometheus.Registry) {
		grant.withVersions(1)
		grant.createSession("s1", "")
		const ttl = 300
		tokenHeader := func(m map[string]any) []string { return []string{"Lease-Token", m["token"].(string)} }

		g := grant.leases(fmt.Sprintf(`{"resources": ["order:1", "machine/7"], "holder": "agent-a", "ttl_ms": %d}`, ttl))
		for i := 0; i < 4; i++ { // renewed past the granting instance's local deadline
			time.Sleep(ttl / 3 * time.Millisecond)
			other.ok(other.do("POST", "/v1/leases/"+g["lease_id"].(string)+"/renew", runtime, fmt.Sprintf(`{"ttl_ms": %d}`, ttl), tokenHeader(g)...), 200)
		}
		if rec := other.do("DELETE", "/v1/leases/"+g["lease_id"].(string), runtime, "", tokenHeader(g)...); rec.Code != 204 {
			t.Fatalf("release = %d %s", rec.Code, rec.Body)
		}
		sl := grant.lease("s1", fmt.Sprintf(`{"holder": "runtime-a", "ttl_ms": %d}`, ttl))
		other.ok(other.do("POST", "/v1/sessions/s1/lease/renew", runtime, fmt.Sprintf(`{"ttl_ms": %d}`, ttl), tokenHeader(sl)...), 200)
		if rec := other.do("DELETE", "/v1/sessions/s1/lease", runtime, "", tokenHeader(sl)...); rec.Code != 204 {
			t.Fatalf("session lease release = %d %s", rec.Code, rec.Body)
		}
		time.Sleep(3 * ttl * time.Millisecond) // every local deadline has passed

		for _, l := range []string{logs.String(), grant.logs.String()} {
			if strings.Contains(l, "lease lost") {
				t.Errorf("a lease renewed and released by token was logged lost:\n%s", l)
			}
		}
		if n := lostCount(t, reg); n != 0 {
			t.Errorf("promptd_lock_leases_lost_total = %v", n)
		}
	}
	t.Run("memory", func(t *testing.T) {
		m, logs, reg := observedLocker(t, locks.NewMemoryBackend(nil), locks.Options{Holder: "test-1"})
		a := sqliteAppWith(t, promptstore.Options{Instance: "test-1", Locker: m})
		run(t, a, a, logs, reg)
	})
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		t.Run("redis_two_instances", func(t *testing.T) {
			keys := locks.Keys{Prefix: fmt.Sprintf("api-%d", time.Now().UnixNano())}
			backend := func() locks.Backend {
				return locks.NewRedisBackend(testenv.RedisClient(t), locks.RedisOptions{Keys: keys, Timeout: time.Second})
			}
			ma, logs, reg := observedLocker(t, backend(), locks.Options{Holder: "test-1"})
			mb, _, _ := observedLocker(t, backend(), locks.Options{Holder: "test-2"})
			a := newAppWith(t, db, promptstore.Options{Instance: "test-1", Locker: ma, Keys: keys})
			b := newAppWith(t, db, promptstore.Options{Instance: "test-2", Locker: mb, Keys: keys})
			run(t, a, b, logs, reg)
		})
	})
}

// Over the per-process waiter limit, a lease request that would wait is
// answered 429 quota_exceeded with Retry-After at once.
func TestLeasesOverHTTP_tooManyWaiters_isQuotaExceededWithRetryAfter(t *testing.T) {
	m, _, _ := observedLocker(t, locks.NewMemoryBackend(nil), locks.Options{Holder: "test-1", MaxWaiters: 1})
	a := sqliteAppWith(t, promptstore.Options{Instance: "test-1", Locker: m})
	a.withVersions(1)
	a.createSession("s1", "")
	held := a.leases(`{"resources": ["printer:1"], "holder": "agent-a", "ttl_ms": 30000}`)
	a.lease("s1", `{"holder": "runtime-a", "ttl_ms": 30000}`)

	done := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		rec := httptest.NewRecorder()
		a.h.ServeHTTP(rec, req("POST", "/v1/leases", runtime, `{"resources": ["printer:1"], "holder": "agent-b", "ttl_ms": 5000, "wait_ms": 20000}`))
		done <- rec
	}()
	for deadline := time.Now().Add(10 * time.Second); m.Waiters() < 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first waiter never waited")
		}
	}
	for _, rq := range []struct{ path, body string }{
		{"/v1/leases", `{"resources": ["printer:1"], "holder": "agent-c", "ttl_ms": 5000, "wait_ms": 20000}`},
		{"/v1/sessions/s1/lease", `{"holder": "runtime-c", "mode": "wait", "wait_ms": 20000}`},
	} {
		rec := a.do("POST", rq.path, runtime, rq.body)
		problem(t, rec, 429, "quota_exceeded")
		if rec.Header().Get("Retry-After") == "" {
			t.Errorf("%s: 429 without Retry-After", rq.path)
		}
	}
	if rec := a.do("DELETE", "/v1/leases/"+held["lease_id"].(string), runtime, "", "Lease-Token", held["token"].(string)); rec.Code != 204 {
		t.Fatalf("release = %d", rec.Code)
	}
	select {
	case rec := <-done:
		a.ok(rec, 200)
	case <-time.After(15 * time.Second):
		t.Fatal("the waiter within the limit was not served")
	}
}

// sqliteAppWith is an app over a fresh SQLite file and a store with o.
func sqliteAppWith(t *testing.T, o promptstore.Options) *app {
	t.Helper()
	db := testenv.OpenDB(t, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "promptd.db")}, migrations())
	return newAppWith(t, db, o)
}
