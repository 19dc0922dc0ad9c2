package api_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/promptd/promptd/api"
)

func TestAuth_runtimeReads_adminWrites(t *testing.T) {
	a := sqliteApp(t)
	a.createVersion("support", 0, "one")
	a.ok(a.do("GET", "/v1/agents/support/versions/1", runtime, ""), 200)
	a.ok(a.do("GET", "/v1/agents/support/versions/1", admin, ""), 200)
	p := problem(t, a.do("POST", "/v1/agents/support/versions", runtime, `{"base_version": 1, "config": {"system": "x"}}`), 403, "forbidden")
	if strings.Contains(p["detail"].(string), runtime) {
		t.Errorf("detail leaks the token: %v", p["detail"])
	}
	for _, auth := range []string{"", "Bearer ", "Bearer wrong", "Basic " + admin, "Bearer " + admin + "x"} {
		r := req("GET", "/v1/agents", "", "")
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		rec := do(t, a.h, r)
		problem(t, rec, 401, "unauthorized")
		if rec.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("%q: no WWW-Authenticate", auth)
		}
	}
	// The ops routes need no token.
	for _, path := range []string{"/healthz", "/openapi.yaml"} {
		if rec := a.do("GET", path, "", ""); rec.Code != 200 {
			t.Errorf("%s = %d", path, rec.Code)
		}
	}
}

func TestAuth_tokensNeverReachTheLogs_namesDo(t *testing.T) {
	a := sqliteApp(t)
	a.createVersion("support", 0, "one")
	a.do("GET", "/v1/agents", "wrong-secret-0123456789", "")
	out := a.logs.String()
	if strings.Contains(out, admin) || strings.Contains(out, "wrong-secret-0123456789") {
		t.Fatalf("a token reached the logs: %s", out)
	}
	if !strings.Contains(out, `"actor":"ops"`) {
		t.Errorf("the access log does not name the token: %s", out)
	}
}

func TestRequestID_isEchoedAndLogged(t *testing.T) {
	a := sqliteApp(t)
	rec := a.do("GET", "/v1/agents", runtime, "", "X-Request-Id", "req-42.a_b")
	if rec.Header().Get("X-Request-Id") != "req-42.a_b" {
		t.Fatalf("X-Request-Id = %q", rec.Header().Get("X-Request-Id"))
	}
	if !strings.Contains(a.logs.String(), `"request_id":"req-42.a_b"`) {
		t.Errorf("the access log lacks the request id: %s", a.logs)
	}
	for _, bad := range []string{"has space", "semi;colon", strings.Repeat("x", 129), "üñï"} {
		rec := a.do("GET", "/v1/agents", runtime, "", "X-Request-Id", bad)
		id := rec.Header().Get("X-Request-Id")
		if id == bad || len(id) != 32 {
			t.Errorf("%q: X-Request-Id = %q, want a generated one", bad, id)
		}
	}
	// Generated when absent, on every answer (errors and unknown routes too).
	for _, path := range []string{"/healthz", "/v1/nothing", "/v1/agents"} {
		rec := httptest.NewRecorder()
		a.h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if len(rec.Header().Get("X-Request-Id")) != 32 {
			t.Errorf("%s: X-Request-Id = %q", path, rec.Header().Get("X-Request-Id"))
		}
	}
}

func TestNew_withoutARuntime_panicsNamingIt(t *testing.T) {
	// A server has no half-wired mode to serve from: without its runtime it
	// does not start (it used to start and answer 500 on every /v1 route).
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "Config.Runtime") {
			t.Fatalf("recover() = %v, want a panic naming Config.Runtime", r)
		}
	}()
	api.New(api.Config{Tokens: testTokens})
}
