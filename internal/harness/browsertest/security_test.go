package browsertest

import (
	"fmt"
	"strings"
	"testing"
)

// The contract's policy, word for word.
const wantCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

func header(h map[string]any, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return fmt.Sprint(v)
		}
	}
	return ""
}

func TestConsole_inTheBrowser_carriesTheCSP_reportsNoViolation_andRefusesAFetchWithoutCSRFToken(t *testing.T) {
	srv := startServer(t)
	srv.publish("support", 0, "support v1")
	tb := newTab(t, srv)

	for _, path := range []string{"/ui/login", "/ui/", "/ui/agents/support"} {
		res := tb.navigate(path)
		if res.Status != 200 {
			t.Errorf("%s: status %d", path, res.Status)
		}
		if got := header(res.Headers, "Content-Security-Policy"); got != wantCSP {
			t.Errorf("%s: Content-Security-Policy %q, want %q", path, got, wantCSP)
		}
		for name, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"} {
			if got := header(res.Headers, name); got != want {
				t.Errorf("%s: %s %q, want %q", path, name, got, want)
			}
		}
	}

	tb.login(adminToken)
	tb.open("/ui/agents/support")
	tb.waitSel(sel("version-row"))
	if v := tb.cspViolations(); len(v) != 0 {
		t.Errorf("CSP violations on the agent page: %v", v)
	}
	if p := tb.consoleProblems(); len(p) != 0 {
		t.Errorf("console errors on the agent page: %v", p)
	}
	// No secret in what the page holds: not in the DOM, not in storage.
	held := eval[string](tb, `document.documentElement.outerHTML + JSON.stringify(localStorage) + JSON.stringify(sessionStorage)`)
	if strings.Contains(held, adminToken) {
		t.Error("the page holds the token (DOM or web storage)")
	}

	// The control for the violation check: an inline script, which the
	// policy forbids, is blocked and reported.
	eval[bool](tb, `(() => { const s = document.createElement('script'); s.textContent = 'window.__inlineRan = true';
		document.body.append(s); return true; })()`)
	tb.wait("the inline script's violation", `window.__cspViolations.length > 0`)
	if eval[bool](tb, "window.__inlineRan === true") {
		t.Error("an inline script ran: the CSP does not apply")
	}
	t.Logf("an injected inline script is reported: %v", tb.cspViolations())
	if policy := eval[string](tb, "window.__cspPolicy"); policy != wantCSP {
		t.Errorf("the policy the browser enforces: %q, want %q", policy, wantCSP)
	}

	// CSRF: the page's own cookie without X-CSRF-Token is refused; with the
	// session's token the same request goes through.
	post := func(withToken bool) map[string]any {
		return eval[map[string]any](tb, fmt.Sprintf(`(async () => {
			const headers = {'Content-Type': 'application/json'};
			if (%v) headers['X-CSRF-Token'] = (await (await fetch('/ui/session')).json()).csrf_token;
			const r = await fetch('/v1/agents/support/versions', {method: 'POST', headers, credentials: 'same-origin',
				body: JSON.stringify({base_version: 1, config: {system: 'from the page'}})});
			const body = await r.json().catch(() => ({}));
			return {status: r.status, code: body.code || ''};
		})()`, withToken))
	}
	if r := post(false); r["status"] != float64(403) || r["code"] != "csrf_failed" {
		t.Errorf("POST from the page without X-CSRF-Token: %v, want 403 csrf_failed", r)
	}
	if r := post(true); r["status"] != float64(201) {
		t.Errorf("POST from the page with the session's X-CSRF-Token: %v, want 201", r)
	}
	versions := srv.must(200, "GET", "/v1/agents/support/versions", nil)["items"].([]any)
	if len(versions) != 2 {
		t.Errorf("versions after one refused and one accepted POST: %d, want 2", len(versions))
	}
}

func TestConsole_aRuntimeOrScopedToken_seesOnlyWhatTheAPIShowsIt(t *testing.T) {
	srv := startServer(t)
	srv.publish("support", 0, "support v1")
	srv.publish("billing", 0, "billing v1")
	scoped := srv.must(201, "POST", "/v1/tokens", map[string]any{"name": "support-only", "role": "admin", "scopes": map[string]any{"agents": []string{"support"}}})
	secret := scoped["secret"].(string)

	// A scoped token's agents page lists what GET /v1/agents gives it.
	tb := newTab(t, srv)
	tb.login(secret)
	tb.waitSel(sel("agents", "data-loaded", "true"))
	shown := eval[[]string](tb, `[...document.querySelectorAll('[data-testid=agent-row]')].map(e => e.dataset.agent).sort()`)
	var api []string
	for _, it := range srv.mustAs(secret, 200, "GET", "/v1/agents", nil)["items"].([]any) {
		api = append(api, it.(map[string]any)["agent"].(string))
	}
	if fmt.Sprint(shown) != fmt.Sprint(api) || fmt.Sprint(shown) != "[support]" {
		t.Errorf("a token scoped to support: the page lists %v, the API %v; want [support] in both", shown, api)
	}
	// The control: the admin sees both.
	admin := newTab(t, srv)
	admin.login(adminToken)
	admin.waitSel(sel("agents", "data-loaded", "true"))
	if n := admin.count(sel("agent-row")); n != 2 {
		t.Errorf("the unscoped admin's agents page lists %d agents, want 2", n)
	}

	// A runtime token reads agents but gets the API's 403 on admin pages.
	rt := newTab(t, srv)
	rt.login(runtimeToken)
	if role := rt.attr(sel("session-actor"), "data-role"); role != "runtime" {
		t.Errorf("session-actor data-role %q, want runtime", role)
	}
	rt.open("/ui/tokens")
	rt.wait("the forbidden error", `document.querySelector('[data-testid=page-error]')`)
	if code := rt.attr(sel("page-error"), "data-code"); code != "forbidden" {
		t.Errorf("runtime token on /ui/tokens: page-error code %q, want forbidden", code)
	}
	if n := rt.count(sel("token-row")); n != 0 {
		t.Errorf("runtime token on /ui/tokens: %d token rows shown", n)
	}
}
