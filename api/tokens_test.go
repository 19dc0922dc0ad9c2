package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// createToken creates a managed token over HTTP and returns its secret.
func (a *app) createToken(body string) string {
	a.t.Helper()
	m := a.ok(a.do("POST", "/v1/tokens", admin, body), 201)
	secret, _ := m["secret"].(string)
	if !strings.HasPrefix(secret, "pd_") {
		a.t.Fatalf("secret = %v", m["secret"])
	}
	return secret
}

func TestTokens_managedToken_worksUntilRevoked(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		secret := a.createToken(`{"name": "ci-runner", "role": "runtime"}`)
		a.ok(a.do("GET", "/v1/agents", secret, ""), 200)
		problem(t, a.do("POST", "/v1/import", secret, `{"mode":"partial","items":[]}`), 403, "forbidden") // runtime role

		list := a.ok(a.do("GET", "/v1/tokens", admin, ""), 200)
		items := list["items"].([]any)
		if len(items) != 1 || items[0].(map[string]any)["name"] != "ci-runner" || items[0].(map[string]any)["principal"] != "ops" {
			t.Fatalf("list = %v", list)
		}
		if strings.Contains(fmt.Sprint(list), secret) {
			t.Fatal("the list shows the secret")
		}
		// The bootstrap set is listed beside the managed tokens (not their
		// secrets): every token that can act is on the list.
		boot, _ := list["bootstrap"].([]any)
		if len(boot) == 0 || boot[0].(map[string]any)["name"] != "ops" || boot[0].(map[string]any)["role"] != "admin" ||
			boot[0].(map[string]any)["source"] != "PROMPTD_TOKENS" {
			t.Fatalf("bootstrap = %v", list["bootstrap"])
		}
		if strings.Contains(fmt.Sprint(list), admin) {
			t.Fatal("the list shows a bootstrap secret")
		}

		if rec := a.do("DELETE", "/v1/tokens/ci-runner", admin, ""); rec.Code != http.StatusNoContent {
			t.Fatalf("revoke = %d %s", rec.Code, rec.Body)
		}
		problem(t, a.do("GET", "/v1/agents", secret, ""), 401, "unauthorized")
		var n int64
		a.db.Raw(`SELECT COUNT(*) FROM audit_events WHERE action IN ('token.created', 'token.revoked')`).Scan(&n)
		if n != 2 {
			t.Fatalf("token audit events = %d, want 2", n)
		}
	})
}

func TestTokens_names_areUniqueNeverReusedAndBootstrapIsKept(t *testing.T) {
	a := sqliteApp(t)
	a.createToken(`{"name": "deployer", "role": "admin"}`)
	problem(t, a.do("POST", "/v1/tokens", admin, `{"name": "deployer", "role": "admin"}`), 409, "token_exists")
	problem(t, a.do("POST", "/v1/tokens", admin, `{"name": "ops", "role": "runtime"}`), 409, "token_exists")
	a.do("DELETE", "/v1/tokens/deployer", admin, "")
	problem(t, a.do("POST", "/v1/tokens", admin, `{"name": "deployer", "role": "admin"}`), 409, "token_exists")
	problem(t, a.do("DELETE", "/v1/tokens/ops", admin, ""), 409, "token_bootstrap")
	problem(t, a.do("DELETE", "/v1/tokens/nobody", admin, ""), 404, "token_not_found")
}

func TestTokens_badInput_isA4xx(t *testing.T) {
	a := sqliteApp(t)
	for _, c := range []struct {
		body, code string
		status     int
	}{
		{`{"role": "admin"}`, "invalid_field", 400},
		{`{"name": "x"}`, "invalid_field", 400},
		{`{"name": "x", "role": "root"}`, "invalid_field", 400},
		{`{"name": "{x}", "role": "admin"}`, "invalid_id", 400},
		{`{"name": "x", "role": "admin", "expires_at": "tomorrow"}`, "invalid_field", 400},
		{`{"name": "x", "role": "admin", "expires_at": "2001-01-01T00:00:00Z"}`, "invalid_field", 400},
		{`{"name": "x", "role": "admin", "expires_at": "` + time.Now().Add(400*24*time.Hour).UTC().Format(time.RFC3339) + `"}`, "invalid_field", 400},
		{`{"name": "x", "role": "admin", "scopes": {"agents": ["a*b*"]}}`, "invalid_field", 400},
		{`{"name": "x", "role": "admin", "scopes": {"agents": ["{a}"]}}`, "invalid_id", 400},
	} {
		problem(t, a.do("POST", "/v1/tokens", admin, c.body), c.status, c.code)
	}
}

func TestTokens_widerThanCreator_isForbidden(t *testing.T) {
	a := sqliteApp(t)
	at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	creator := a.createToken(`{"name": "temp-admin", "role": "admin", "expires_at": "` + at + `"}`)
	p := problem(t, a.do("POST", "/v1/tokens", creator, `{"name": "forever", "role": "admin"}`), 403, "forbidden")
	if p["scope"] != "expires_at" {
		t.Fatalf("scope = %v", p["scope"])
	}
	a.ok(a.do("POST", "/v1/tokens", creator, `{"name": "shorter", "role": "runtime", "expires_at": "`+at+`"}`), 201)
	// A scoped token is not unscoped enough for the token routes at all.
	scoped := a.createToken(`{"name": "team-a", "role": "admin", "scopes": {"agents": ["team-a-*"]}}`)
	p = problem(t, a.do("POST", "/v1/tokens", scoped, `{"name": "wider", "role": "admin"}`), 403, "forbidden")
	if p["scope"] != "unscoped" {
		t.Fatalf("scope = %v", p["scope"])
	}
}

func TestTokens_replayOfCreate_neverHoldsTheSecret(t *testing.T) {
	a := sqliteApp(t)
	body := `{"name": "replayed", "role": "runtime"}`
	first := a.ok(a.do("POST", "/v1/tokens", admin, body, "Idempotency-Key", "k1"), 201)
	if s, _ := first["secret"].(string); !strings.HasPrefix(s, "pd_") || first["secret_redacted"] != false {
		t.Fatalf("first answer = %v, want the secret", first)
	}
	rec := a.do("POST", "/v1/tokens", admin, body, "Idempotency-Key", "k1")
	again := a.ok(rec, 201)
	if rec.Header().Get("Idempotent-Replayed") != "true" || again["secret"] != nil || again["secret_redacted"] != true || again["id"] != first["id"] {
		t.Fatalf("replay = %v", again)
	}
}

func TestTokens_expired_isUnauthorized(t *testing.T) {
	a := sqliteApp(t)
	at := time.Now().Add(1500 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	secret := a.createToken(`{"name": "short", "role": "runtime", "expires_at": "` + at + `"}`)
	a.ok(a.do("GET", "/v1/agents", secret, ""), 200)
	time.Sleep(1600 * time.Millisecond)
	problem(t, a.do("GET", "/v1/agents", secret, ""), 401, "unauthorized")
}
