package api_test

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"
)

// lease takes s1's lease over HTTP and returns the grant.
func (a *app) lease(session, body string) map[string]any {
	a.t.Helper()
	rec := a.do("POST", "/v1/sessions/"+session+"/lease", runtime, body)
	l := a.ok(rec, 200)
	conforms(a.t, "SessionLease", rec.Body.Bytes())
	return l
}

func appendBody(rev int64, fence any, text string) string {
	if fence == nil {
		return fmt.Sprintf(`{"expected_revision": %d, "turns": [{"role": "user", "content": %q}]}`, rev, text)
	}
	return fmt.Sprintf(`{"expected_revision": %d, "fence": %v, "turns": [{"role": "user", "content": %q}]}`, rev, num(fence), text)
}

func TestSessionLease_preemptedHolderIsFencedOut_unfencedWriterIsBlocked(t *testing.T) {
	forEachLocker(t, func(t *testing.T, a *app) {
		a.withVersions(1)
		a.createSession("s1", "")
		const turns = "/v1/sessions/s1/turns"

		la := a.lease("s1", `{"holder": "runtime-a", "ttl_ms": 30000}`)
		a.ok(a.do("POST", turns, runtime, appendBody(0, la["fence"], "from a")), 201)
		// B preempts: a higher fence, raised in the row before the answer.
		lb := a.lease("s1", `{"holder": "runtime-b", "ttl_ms": 30000, "mode": "preempt"}`)
		if num(lb["fence"]) <= num(la["fence"]) || lb["token"] == la["token"] {
			t.Fatalf("preempt: a %v, b %v", la, lb)
		}
		// A's late write with its old fence: 409 stale_fence with current_fence.
		p := problem(t, a.do("POST", turns, runtime, appendBody(1, la["fence"], "late a")), 409, "stale_fence")
		if num(p["current_fence"]) != num(lb["fence"]) {
			t.Fatalf("current_fence = %v, want %v", p["current_fence"], lb["fence"])
		}
		// An unfenced write while B holds it: 423 lease_held naming B.
		p = problem(t, a.do("POST", turns, runtime, appendBody(1, nil, "nobody")), 423, "lease_held")
		if p["holder"] != "runtime-b" || !millis.MatchString(fmt.Sprint(p["expires_at"])) {
			t.Fatalf("lease_held = %v", p)
		}
		problem(t, a.do("PUT", "/v1/sessions/s1/state/k", runtime, `{"value": 1, "expected_revision": 0}`), 423, "lease_held")
		// A asking again in reject mode: 423 at once.
		p = problem(t, a.do("POST", "/v1/sessions/s1/lease", runtime, `{"holder": "runtime-a"}`), 423, "lease_held")
		if p["holder"] != "runtime-b" {
			t.Errorf("holder = %v", p["holder"])
		}
		// A cannot renew or release B's lease.
		problem(t, a.do("POST", "/v1/sessions/s1/lease/renew", runtime, `{"ttl_ms": 5000}`, "Lease-Token", la["token"].(string)), 409, "lease_lost")
		problem(t, a.do("DELETE", "/v1/sessions/s1/lease", runtime, "", "Lease-Token", la["token"].(string)), 409, "lease_lost")

		// B writes with its fence, re-enters with its token (same fence), renews.
		a.ok(a.do("POST", turns, runtime, appendBody(1, lb["fence"], "from b")), 201)
		again := a.lease("s1", fmt.Sprintf(`{"holder": "runtime-b", "token": %q}`, lb["token"]))
		if again["fence"] != lb["fence"] || again["token"] != lb["token"] {
			t.Fatalf("re-entry = %v, first %v", again, lb)
		}
		rec := a.do("POST", "/v1/sessions/s1/lease/renew", runtime, `{"ttl_ms": 20000}`, "Lease-Token", lb["token"].(string))
		conforms(t, "Renewed", rec.Body.Bytes())
		if r := a.ok(rec, 200); !millis.MatchString(r["expires_at"].(string)) {
			t.Fatalf("renewed = %v", r)
		}
		s := a.ok(a.do("GET", "/v1/sessions/s1", runtime, ""), 200)
		if l := s["lease"].(map[string]any); l["holder"] != "runtime-b" || l["fence"] != lb["fence"] || s["fence"] != lb["fence"] {
			t.Fatalf("session = %v", s)
		}
		// Two releases (it was taken twice); then unfenced writes pass again.
		for range 2 {
			if rec := a.do("DELETE", "/v1/sessions/s1/lease", runtime, "", "Lease-Token", lb["token"].(string)); rec.Code != 204 {
				t.Fatalf("release = %d %s", rec.Code, rec.Body)
			}
		}
		problem(t, a.do("DELETE", "/v1/sessions/s1/lease", runtime, "", "Lease-Token", lb["token"].(string)), 409, "lease_lost")
		a.ok(a.do("POST", turns, runtime, appendBody(2, nil, "free again")), 201)
		if s := a.ok(a.do("GET", "/v1/sessions/s1", runtime, ""), 200); s["lease"] != nil || s["turn_count"] != float64(3) {
			t.Fatalf("after release = %v", s)
		}
		// Closing frees the lease (a closed session takes none).
		lc := a.lease("s1", `{"holder": "runtime-c"}`)
		a.ok(a.do("POST", "/v1/sessions/s1/close", runtime, fmt.Sprintf(`{"expected_revision": 3, "fence": %v}`, num(lc["fence"]))), 200)
		problem(t, a.do("POST", "/v1/sessions/s1/lease", runtime, `{"holder": "runtime-d"}`), 409, "session_closed")
	})
}

func TestSessionLease_waitMode_isWokenByTheRelease(t *testing.T) {
	forEachLocker(t, func(t *testing.T, a *app) {
		a.withVersions(1)
		a.createSession("s1", "")
		la := a.lease("s1", `{"holder": "runtime-a", "ttl_ms": 30000}`)

		// A short wait ends with 423.
		start := time.Now()
		problem(t, a.do("POST", "/v1/sessions/s1/lease", runtime, `{"holder": "runtime-b", "mode": "wait", "wait_ms": 300}`), 423, "lease_held")
		if d := time.Since(start); d < 250*time.Millisecond || d > 5*time.Second {
			t.Fatalf("a 300ms wait took %v", d)
		}

		// A long wait is woken by A's release, long before its TTL.
		type result struct {
			rec *httptest.ResponseRecorder
			at  time.Time
		}
		done := make(chan result, 1)
		go func() {
			rec := httptest.NewRecorder()
			a.h.ServeHTTP(rec, req("POST", "/v1/sessions/s1/lease", runtime, `{"holder": "runtime-b", "mode": "wait", "wait_ms": 20000}`))
			done <- result{rec, time.Now()}
		}()
		time.Sleep(300 * time.Millisecond)
		released := time.Now()
		if rec := a.do("DELETE", "/v1/sessions/s1/lease", runtime, "", "Lease-Token", la["token"].(string)); rec.Code != 204 {
			t.Fatalf("release = %d", rec.Code)
		}
		select {
		case r := <-done:
			lb := a.ok(r.rec, 200)
			if num(lb["fence"]) <= num(la["fence"]) {
				t.Fatalf("fence %v after %v", lb["fence"], la["fence"])
			}
			if d := r.at.Sub(released); d > 3*time.Second {
				t.Fatalf("the waiter got the lease %v after the release", d)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("the waiter was not woken by the release")
		}
	})
}
