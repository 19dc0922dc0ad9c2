package api_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/promptd/promptd/leases"
)

// leases takes a generic lease over HTTP and returns the grant.
func (a *app) leases(body string) map[string]any {
	a.t.Helper()
	rec := a.do("POST", "/v1/leases", runtime, body)
	l := a.ok(rec, 200)
	conforms(a.t, "Leases", rec.Body.Bytes())
	return l
}

func TestLeases_allOrNothing_conflicts_renewAndReleaseByToken(t *testing.T) {
	forEachLocker(t, func(t *testing.T, a *app) {
		la := a.leases(`{"resources": ["order:1", "machine/7", "order:1"], "holder": "agent-a", "ttl_ms": 30000}`)
		id := la["lease_id"].(string)
		raw, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(id, "ls_"))
		fences := la["fences"].(map[string]any)
		if string(raw) != "machine/7\norder:1" || len(fences) != 2 || num(fences["order:1"]) < 1 || num(fences["machine/7"]) < 1 {
			t.Fatalf("grant = %v (id names %q)", la, raw)
		}
		tokenA := la["token"].(string)

		// B wants order:2 and order:1: 423 with the conflict, and nothing kept.
		p := problem(t, a.do("POST", "/v1/leases", runtime, `{"resources": ["order:2", "order:1"], "holder": "agent-b", "ttl_ms": 5000}`), 423, "lease_held")
		conflicts := p["conflicts"].([]any)
		c0 := conflicts[0].(map[string]any)
		if len(conflicts) != 1 || c0["resource"] != "order:1" || c0["holder"] != "agent-a" || !millis.MatchString(c0["expires_at"].(string)) ||
			p["holder"] != "agent-a" {
			t.Fatalf("conflicts = %v", p)
		}
		lc := a.leases(`{"resources": ["order:2"], "holder": "agent-c", "ttl_ms": 30000}`)

		// Renew by token; a wrong token renews nothing: 409 lease_lost naming what it lacks.
		rec := a.do("POST", "/v1/leases/"+id+"/renew", runtime, `{"ttl_ms": 20000}`, "Lease-Token", tokenA)
		if r := a.ok(rec, 200); !millis.MatchString(r["expires_at"].(string)) {
			t.Fatalf("renew = %v", r)
		}
		p = problem(t, a.do("POST", "/v1/leases/"+id+"/renew", runtime, `{"ttl_ms": 20000}`, "Lease-Token", lc["token"].(string)), 409, "lease_lost")
		if fmt.Sprint(p["resources"]) != "[machine/7 order:1]" {
			t.Errorf("resources = %v", p["resources"])
		}
		// C's token does not release A's lease; A still holds it.
		p = problem(t, a.do("DELETE", "/v1/leases/"+id, runtime, "", "Lease-Token", lc["token"].(string)), 409, "lease_lost")
		if fmt.Sprint(p["resources"]) != "[machine/7 order:1]" {
			t.Errorf("resources = %v", p["resources"])
		}
		problem(t, a.do("POST", "/v1/leases", runtime, `{"resources": ["machine/7"], "holder": "agent-b"}`), 423, "lease_held")

		// A loses one resource (it expired and was taken, say): renew keeps
		// the other and says which was lost.
		key, _ := leases.Key(a.keys, "machine/7")
		if _, err := a.locker.Release(context.Background(), key, tokenA); err != nil {
			t.Fatal(err)
		}
		a.leases(`{"resources": ["machine/7"], "holder": "agent-b", "ttl_ms": 30000}`)
		p = problem(t, a.do("POST", "/v1/leases/"+id+"/renew", runtime, `{"ttl_ms": 20000}`, "Lease-Token", tokenA), 409, "lease_lost")
		if fmt.Sprint(p["resources"]) != "[machine/7]" {
			t.Errorf("resources = %v", p["resources"])
		}
		problem(t, a.do("POST", "/v1/leases", runtime, `{"resources": ["order:1"], "holder": "agent-b"}`), 423, "lease_held")
		// Release: what it held is freed, what it lost is named.
		p = problem(t, a.do("DELETE", "/v1/leases/"+id, runtime, "", "Lease-Token", tokenA), 409, "lease_lost")
		if fmt.Sprint(p["resources"]) != "[machine/7]" {
			t.Errorf("resources = %v", p["resources"])
		}
		a.leases(`{"resources": ["order:1"], "holder": "agent-b"}`)
		// Released whole: 204.
		if rec := a.do("DELETE", "/v1/leases/"+lc["lease_id"].(string), runtime, "", "Lease-Token", lc["token"].(string)); rec.Code != 204 {
			t.Fatalf("release = %d %s", rec.Code, rec.Body)
		}

		// Tokens never reach the logs.
		logs := a.logs.String()
		for _, tok := range []string{tokenA, lc["token"].(string)} {
			if strings.Contains(logs, tok) {
				t.Fatal("a lease token is in the logs")
			}
		}
	})
}

func TestLeases_wait_isWokenByTheRelease(t *testing.T) {
	forEachLocker(t, func(t *testing.T, a *app) {
		la := a.leases(`{"resources": ["printer:1", "printer:2"], "holder": "agent-a", "ttl_ms": 30000}`)
		done := make(chan *httptest.ResponseRecorder, 1)
		go func() {
			rec := httptest.NewRecorder()
			a.h.ServeHTTP(rec, req("POST", "/v1/leases", runtime, `{"resources": ["printer:2"], "holder": "agent-b", "ttl_ms": 5000, "wait_ms": 20000}`))
			done <- rec
		}()
		time.Sleep(300 * time.Millisecond)
		released := time.Now()
		if rec := a.do("DELETE", "/v1/leases/"+la["lease_id"].(string), runtime, "", "Lease-Token", la["token"].(string)); rec.Code != 204 {
			t.Fatalf("release = %d", rec.Code)
		}
		select {
		case rec := <-done:
			a.ok(rec, 200)
			if d := time.Since(released); d > 3*time.Second {
				t.Fatalf("woken %v after the release", d)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("the waiter was not woken by the release")
		}
	})
}

func TestLeases_badInput(t *testing.T) {
	a := sqliteApp(t)
	b64 := func(s string) string { return "ls_" + base64.RawURLEncoding.EncodeToString([]byte(s)) }
	many := `"r0"` + strings.Repeat(`, "r"`, 16)
	cases := []struct {
		name, method, path, body string
		headers                  []string
		status                   int
		code, field              string
	}{
		{"no resources", "POST", "/v1/leases", `{"resources": [], "holder": "a"}`, nil, 400, "invalid_field", "resources"},
		{"17 resources", "POST", "/v1/leases", `{"resources": [` + many + `], "holder": "a"}`, nil, 400, "invalid_field", "resources"},
		{"resource with {", "POST", "/v1/leases", `{"resources": ["ok", "x{y}"], "holder": "a"}`, nil, 400, "invalid_id", "resources[1]"},
		{"resource with a space", "POST", "/v1/leases", `{"resources": ["a b"], "holder": "a"}`, nil, 400, "invalid_id", "resources[0]"},
		{"resource too long", "POST", "/v1/leases", `{"resources": ["` + strings.Repeat("r", 257) + `"], "holder": "a"}`, nil, 400, "invalid_id", "resources[0]"},
		{"no holder", "POST", "/v1/leases", `{"resources": ["r"]}`, nil, 400, "invalid_id", "holder"},
		{"ttl_ms 99", "POST", "/v1/leases", `{"resources": ["r"], "holder": "a", "ttl_ms": 99}`, nil, 400, "invalid_field", "ttl_ms"},
		{"ttl_ms 60001", "POST", "/v1/leases", `{"resources": ["r"], "holder": "a", "ttl_ms": 60001}`, nil, 400, "invalid_field", "ttl_ms"},
		{"wait_ms 30001", "POST", "/v1/leases", `{"resources": ["r"], "holder": "a", "wait_ms": 30001}`, nil, 400, "invalid_field", "wait_ms"},
		{"unknown member", "POST", "/v1/leases", `{"resources": ["r"], "holder": "a", "token": "mine"}`, nil, 400, "invalid_field", "token"},
		{"lease id without prefix", "DELETE", "/v1/leases/abc", "", []string{"Lease-Token", "t"}, 404, "lease_not_found", ""},
		{"lease id not base64", "DELETE", "/v1/leases/ls_%21%21", "", []string{"Lease-Token", "t"}, 404, "lease_not_found", ""},
		{"lease id unsorted", "POST", "/v1/leases/" + b64("b\na") + "/renew", `{"ttl_ms": 1000}`, []string{"Lease-Token", "t"}, 404, "lease_not_found", ""},
		{"lease id with a bad resource", "DELETE", "/v1/leases/" + b64("a{b}"), "", []string{"Lease-Token", "t"}, 404, "lease_not_found", ""},
		{"lease id empty", "DELETE", "/v1/leases/ls_", "", []string{"Lease-Token", "t"}, 404, "lease_not_found", ""},
		{"release without a token", "DELETE", "/v1/leases/" + b64("a"), "", nil, 400, "invalid_field", "Lease-Token"},
		{"renew with two tokens", "POST", "/v1/leases/" + b64("a") + "/renew", `{"ttl_ms": 1000}`, []string{"Lease-Token", "t", "Lease-Token", "u"}, 400, "invalid_field", "Lease-Token"},
		{"renew a lease nobody holds", "POST", "/v1/leases/" + b64("a") + "/renew", `{"ttl_ms": 1000}`, []string{"Lease-Token", "t"}, 409, "lease_lost", ""},
		{"Idempotency-Key is not taken", "POST", "/v1/leases", `{"resources": ["r"], "holder": "a", "ttl_ms": 99}`, []string{"Idempotency-Key", "k"}, 400, "invalid_field", "ttl_ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := problem(t, a.do(tc.method, tc.path, runtime, tc.body, tc.headers...), tc.status, tc.code)
			if tc.field != "" && p["field"] != tc.field {
				t.Errorf("field = %v, want %s", p["field"], tc.field)
			}
		})
	}
	if n := a.idemRows(); n != 0 {
		t.Fatalf("%d idempotency records from lease routes", n)
	}
}
