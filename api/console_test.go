package api_test

import (
	"bufio"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/api"
	"github.com/promptd/promptd/console"
	"github.com/promptd/promptd/internal/harness/testenv"
)

// withConsole serves the real embedded console.
func withConsole(cfg *api.Config) { cfg.Console = console.Assets() }

// consoleApp is an app with the console on, over a fresh SQLite file.
func consoleApp(t *testing.T, mod ...func(*api.Config)) *app {
	t.Helper()
	return sqliteApp(t, append([]func(*api.Config){withConsole}, mod...)...)
}

// forEachConsoleDialect runs f with a console app on SQLite and MariaDB.
func forEachConsoleDialect(t *testing.T, f func(t *testing.T, a *app)) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) { f(t, newApp(t, db, withConsole)) })
}

// browser is a console login: its session cookie and CSRF token.
type browser struct {
	a      *app
	cookie *http.Cookie
	csrf   string
}

// login logs into the console with token and reads the session's CSRF
// token.
func (a *app) login(token string) *browser {
	a.t.Helper()
	rec := a.do("POST", "/ui/login", "", `{"token": "`+token+`"}`)
	if rec.Code != http.StatusNoContent {
		a.t.Fatalf("login = %d %s", rec.Code, rec.Body)
	}
	b := &browser{a: a, cookie: sessionCookieOf(a.t, rec)}
	s := a.ok(b.do("GET", "/ui/session", "", false), 200)
	b.csrf, _ = s["csrf_token"].(string)
	if len(b.csrf) < 40 {
		a.t.Fatalf("session = %v", s)
	}
	return b
}

func sessionCookieOf(t *testing.T, rec *httptest.ResponseRecorder) *http.Cookie {
	t.Helper()
	for _, c := range rec.Result().Cookies() {
		if c.Name == "promptd_session" {
			return c
		}
	}
	t.Fatalf("no promptd_session cookie in %v", rec.Header().Values("Set-Cookie"))
	return nil
}

// do sends a request with the session cookie (no Authorization), and
// X-CSRF-Token when csrf.
func (b *browser) do(method, path, body string, csrf bool, headers ...string) *httptest.ResponseRecorder {
	b.a.t.Helper()
	if csrf {
		headers = append(headers, "X-CSRF-Token", b.csrf)
	}
	rq := req(method, path, "", body, headers...)
	rq.AddCookie(&http.Cookie{Name: b.cookie.Name, Value: b.cookie.Value})
	return do(b.a.t, b.a.h, rq)
}

func TestConsole_cookieChange_needsTheSessionsCSRFToken(t *testing.T) {
	forEachConsoleDialect(t, func(t *testing.T, a *app) {
		b := a.login(admin)
		body := `{"base_version": 0, "config": {"system": "hi"}, "message": "m"}`
		problem(t, b.do("POST", "/v1/agents/bot/versions", body, false), 403, "csrf_failed")
		problem(t, b.do("POST", "/v1/agents/bot/versions", body, false, "X-CSRF-Token", b.csrf+"x"), 403, "csrf_failed")
		problem(t, b.do("POST", "/v1/agents/bot/versions", body, false, "X-CSRF-Token", a.login(admin).csrf), 403, "csrf_failed") // another session's
		problem(t, a.do("GET", "/v1/agents/bot/versions", admin, ""), 404, "agent_not_found")                                     // nothing was written
		// Control: the right token passes, and a safe method needs none.
		m := a.ok(b.do("POST", "/v1/agents/bot/versions", body, true), 201)
		if m["created_by"] != "ops" {
			t.Errorf("created_by = %v, want the session's token", m["created_by"])
		}
		a.ok(b.do("GET", "/v1/agents/bot/versions", "", false), 200)
	})
}

func TestConsole_bearerRequest_isUnaffectedByCookieAndCSRF(t *testing.T) {
	a := consoleApp(t)
	b := a.login(runtime)
	// A bearer request beside a (runtime) session cookie is the bearer's:
	// no CSRF token needed, and the admin token's role.
	rq := req("POST", "/v1/agents/bot/versions", admin, `{"base_version": 0, "config": {"system": "hi"}, "message": "m"}`)
	rq.AddCookie(&http.Cookie{Name: "promptd_session", Value: b.cookie.Value})
	a.ok(do(t, a.h, rq), 201)
	a.ok(a.do("GET", "/v1/agents", admin, "", "Cookie", "promptd_session=garbage"), 200)
	// Control: the cookie alone is the runtime's, refused the admin write.
	problem(t, b.do("POST", "/v1/agents/bot/versions", `{"base_version": 1, "config": {"system": "x"}}`, true), 403, "forbidden")
	// A bad bearer token is 401 even with a good cookie.
	rq = req("GET", "/v1/agents", "wrong", "")
	rq.AddCookie(&http.Cookie{Name: "promptd_session", Value: b.cookie.Value})
	problem(t, do(t, a.h, rq), 401, "unauthorized")
}

func TestConsole_revokedManagedToken_endsItsSessionsAtOnce(t *testing.T) {
	forEachConsoleDialect(t, func(t *testing.T, a *app) {
		secret := a.createToken(`{"name": "viewer", "role": "runtime"}`)
		b := a.login(secret)
		a.ok(b.do("GET", "/v1/agents", "", false), 200) // control: it works until revoked
		if rec := a.do("DELETE", "/v1/tokens/viewer", admin, ""); rec.Code != http.StatusNoContent {
			t.Fatalf("revoke = %d %s", rec.Code, rec.Body)
		}
		problem(t, b.do("GET", "/v1/agents", "", false), 401, "unauthorized")
		problem(t, b.do("GET", "/ui/session", "", false), 401, "unauthorized")
	})
}

func TestConsole_runtimeCookie_isForbiddenOnAdminRoutes(t *testing.T) {
	a := consoleApp(t)
	rt := a.login(runtime)
	problem(t, rt.do("GET", "/v1/audit", "", false), 403, "forbidden")
	problem(t, rt.do("GET", "/v1/tokens", "", false), 403, "forbidden")
	a.ok(rt.do("GET", "/v1/agents", "", false), 200)
	s := a.ok(rt.do("GET", "/ui/session", "", false), 200)
	if s["actor"] != "agent" || s["role"] != "runtime" || s["scopes"] != nil {
		t.Errorf("session = %v", s)
	}
	// Control: an admin's cookie reads them.
	ad := a.login(admin)
	a.ok(ad.do("GET", "/v1/audit", "", false), 200)
	a.ok(ad.do("GET", "/v1/tokens", "", false), 200)
}

func TestConsole_scopedCookie_seesExactlyWhatItsBearerSees(t *testing.T) {
	a := consoleApp(t)
	for _, agent := range []string{"team-a-bot", "team-a-helper", "team-b-bot"} {
		a.createVersion(agent, 0, "v1")
		a.publish(agent, "prod", 1, 0)
	}
	tok := a.createToken(`{"name": "team-a", "role": "runtime", "scopes": {"agents": ["team-a-*"], "envs": ["prod"]}}`)
	b := a.login(tok)
	for _, path := range []string{"/v1/agents", "/v1/agents?limit=1", "/v1/agents/team-a-bot/versions", "/v1/agents/team-a-bot/envs/prod",
		"/v1/agents/team-b-bot/versions", "/v1/agents/team-a-bot/envs/staging", "/v1/change-requests", "/v1/audit"} {
		bearer, cookie := a.do("GET", path, tok, ""), b.do("GET", path, "", false)
		if bearer.Code != cookie.Code || stripVolatile(t, bearer.Body.String()) != stripVolatile(t, cookie.Body.String()) {
			t.Errorf("GET %s: bearer %d %s, cookie %d %s", path, bearer.Code, bearer.Body, cookie.Code, cookie.Body)
		}
	}
	list := b.do("GET", "/v1/agents", "", false).Body.String()
	if !strings.Contains(list, "team-a-bot") || strings.Contains(list, "team-b-bot") {
		t.Errorf("scoped list = %s", list)
	}
	// Control: the comparison sees a difference where there is one.
	if all := a.do("GET", "/v1/agents", admin, "").Body.String(); stripVolatile(t, all) == stripVolatile(t, list) {
		t.Error("an admin's list equals the scoped one: the comparison cannot fail")
	}
	s := a.ok(b.do("GET", "/ui/session", "", false), 200)
	if sc, _ := s["scopes"].(map[string]any); sc == nil || sc["agents"].([]any)[0] != "team-a-*" {
		t.Errorf("session scopes = %v", s["scopes"])
	}
}

// stripVolatile drops the members that differ between two identical
// requests (request ids).
func stripVolatile(t *testing.T, body string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return body
	}
	delete(m, "request_id")
	delete(m, "instance")
	b, _ := json.Marshal(m)
	return string(b)
}

// consoleHeadersMissing names the console's security headers rec lacks.
func consoleHeadersMissing(rec *httptest.ResponseRecorder) []string {
	want := map[string]string{
		"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
			"font-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
		"X-Content-Type-Options": "nosniff",
		"Referrer-Policy":        "no-referrer",
		"X-Frame-Options":        "DENY",
	}
	var missing []string
	for k, v := range want {
		if rec.Header().Get(k) != v {
			missing = append(missing, k)
		}
	}
	return missing
}

func TestConsole_everyUIResponse_carriesTheCSPAndSecurityHeaders(t *testing.T) {
	a := consoleApp(t)
	b := a.login(admin)
	recs := map[string]*httptest.ResponseRecorder{
		"GET /ui":                    a.do("GET", "/ui", "", ""),
		"GET /ui/":                   a.do("GET", "/ui/", "", ""),
		"GET /ui/login":              a.do("GET", "/ui/login", "", ""),
		"GET /ui/agents/support.v2":  a.do("GET", "/ui/agents/support.v2", "", ""),
		"GET /ui/index.html":         a.do("GET", "/ui/index.html", "", ""),
		"GET /ui/missing.js":         a.do("GET", "/ui/missing.js", "", ""),
		"POST /ui/login bad":         a.do("POST", "/ui/login", "", `{"token": "nope"}`),
		"POST /ui/login cross":       a.do("POST", "/ui/login", "", `{"token": "nope"}`, "Origin", "https://evil.example"),
		"POST /ui/login ok":          a.do("POST", "/ui/login", "", `{"token": "`+admin+`"}`),
		"GET /ui/session none":       a.do("GET", "/ui/session", "", ""),
		"GET /ui/session":            b.do("GET", "/ui/session", "", false),
		"POST /ui/logout no csrf":    b.do("POST", "/ui/logout", "", false),
		"POST /ui/logout":            b.do("POST", "/ui/logout", "", true),
		"GET /ui/ If-None-Match 304": a.do("GET", "/ui/", "", "", "If-None-Match", a.do("GET", "/ui/", "", "").Header().Get("ETag")),
	}
	for name, rec := range recs {
		if missing := consoleHeadersMissing(rec); len(missing) > 0 {
			t.Errorf("%s (%d) lacks %v", name, rec.Code, missing)
		}
	}
	if recs["GET /ui/ If-None-Match 304"].Code != http.StatusNotModified {
		t.Errorf("If-None-Match = %d, want 304", recs["GET /ui/ If-None-Match 304"].Code)
	}
	// Control: the check sees an answer without them.
	if len(consoleHeadersMissing(a.do("GET", "/v1/agents", admin, ""))) == 0 {
		t.Error("a /v1 answer passes the header check: it cannot fail")
	}
}

func TestConsole_spa_servesIndexForRoutesAndAssetsOr404(t *testing.T) {
	a := sqliteApp(t, func(cfg *api.Config) {
		cfg.Console = fstest.MapFS{
			"index.html":      {Data: []byte(`<!doctype html><title>promptd</title><script type="module" src="/ui/app.js"></script>`)},
			"app.js":          {Data: []byte(`export const x = 1;`)},
			"pages/agents.js": {Data: []byte(`export function page() {}`)},
			"style.css":       {Data: []byte(`body{}`)},
		}
	})
	rec := a.do("GET", "/ui", "", "")
	if rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "/ui/" {
		t.Fatalf("/ui = %d %v", rec.Code, rec.Header())
	}
	for path, want := range map[string]string{
		"/ui/": "<!doctype", "/ui/login": "<!doctype", "/ui/agents/support.v2": "<!doctype", "/ui/agents/bot/diff?a=1&b=2": "<!doctype",
		"/ui/releases/rel_1": "<!doctype", "/ui/app.js": "export const", "/ui/pages/agents.js": "export function",
	} {
		rec := a.do("GET", path, "", "")
		if rec.Code != 200 || !strings.HasPrefix(rec.Body.String(), want) {
			t.Errorf("GET %s = %d %.40s, want %q", path, rec.Code, rec.Body, want)
		}
		if rec.Header().Get("Cache-Control") != "no-cache" || !strings.HasPrefix(rec.Header().Get("ETag"), `"`) {
			t.Errorf("GET %s headers %v", path, rec.Header())
		}
	}
	for path, ctype := range map[string]string{"/ui/": "text/html; charset=utf-8", "/ui/app.js": "text/javascript; charset=utf-8",
		"/ui/style.css": "text/css; charset=utf-8"} {
		if got := a.do("GET", path, "", "").Header().Get("Content-Type"); got != ctype {
			t.Errorf("GET %s Content-Type = %q, want %q", path, got, ctype)
		}
	}
	for _, path := range []string{"/ui/missing.js", "/ui/pages/missing.js", "/ui/x/index.html", "/ui/../promptd.db", "/ui/%2e%2e/go.mod"} {
		if rec := a.do("GET", path, "", ""); rec.Code != http.StatusNotFound && !strings.HasPrefix(rec.Body.String(), "<!doctype") {
			t.Errorf("GET %s = %d %.80s, want 404 or index.html", path, rec.Code, rec.Body)
		}
	}
	problem(t, a.do("GET", "/ui/missing.js", "", ""), 404, "not_found")
}

func TestConsole_off_answers404AndAcceptsNoCookie(t *testing.T) {
	on := consoleApp(t)
	b := on.login(admin)
	off := newApp(t, on.db) // same database, console off
	for _, path := range []string{"/ui", "/ui/", "/ui/app.js", "/ui/session"} {
		problem(t, off.do("GET", path, "", ""), 404, "not_found")
	}
	problem(t, off.do("POST", "/ui/login", "", `{"token": "`+admin+`"}`), 404, "not_found")
	rq := req("GET", "/v1/agents", "", "")
	rq.AddCookie(&http.Cookie{Name: "promptd_session", Value: b.cookie.Value})
	problem(t, do(t, off.h, rq), 401, "unauthorized")
	on.ok(b.do("GET", "/v1/agents", "", false), 200) // control: the cookie is good where the console is on
}

// walkFiles lists every file of fsys.
func walkFiles(t *testing.T, fsys fs.FS) []string {
	t.Helper()
	var files []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestConsole_servedFiles_holdNoSecret(t *testing.T) {
	a := consoleApp(t)
	managed := a.createToken(`{"name": "viewer", "role": "admin"}`)
	b := a.login(managed)
	secrets := []string{admin, runtime, managed, b.cookie.Value}
	paths := []string{"/ui/", "/ui/login", "/ui/agents/bot", "/ui/tokens"}
	for _, f := range walkFiles(t, console.Assets()) {
		paths = append(paths, "/ui/"+f)
	}
	leaks := func(rec *httptest.ResponseRecorder) string {
		for _, s := range secrets {
			if strings.Contains(rec.Body.String(), s) || strings.Contains(strings.Join(rec.Header().Values("Set-Cookie"), " "), s) {
				return s[:min(6, len(s))] + "..."
			}
		}
		return ""
	}
	for _, p := range paths {
		rec := b.do("GET", p, "", false)
		if rec.Code != 200 {
			t.Errorf("GET %s = %d", p, rec.Code)
		}
		if s := leaks(rec); s != "" {
			t.Errorf("GET %s serves the secret %s", p, s)
		}
	}
	if len(paths) < 5 {
		t.Errorf("only %d console paths checked", len(paths))
	}
	// The session answer holds the CSRF token, never the token or the id.
	if s := leaks(b.do("GET", "/ui/session", "", false)); s != "" {
		t.Errorf("GET /ui/session serves the secret %s", s)
	}
	// Control: the check finds a secret where one is served.
	if leaks(a.do("POST", "/v1/tokens", admin, `{"name": "other", "role": "runtime"}`)) != "" {
		t.Error("a token's creation (which shows its new secret only) matched an old secret")
	}
	secrets = append(secrets, "pd_")
	if leaks(a.do("POST", "/v1/tokens", admin, `{"name": "third", "role": "runtime"}`)) == "" {
		t.Error("the leak check does not see a served secret: it cannot fail")
	}
}

func TestConsole_logout_endsTheSession(t *testing.T) {
	forEachConsoleDialect(t, func(t *testing.T, a *app) {
		b := a.login(admin)
		other := a.login(admin)
		problem(t, b.do("POST", "/ui/logout", "", false), 403, "csrf_failed")
		a.ok(b.do("GET", "/ui/session", "", false), 200) // control: a refused logout ends nothing
		rec := b.do("POST", "/ui/logout", "", true)
		if rec.Code != http.StatusNoContent {
			t.Fatalf("logout = %d %s", rec.Code, rec.Body)
		}
		if c := sessionCookieOf(t, rec); c.Value != "" || c.MaxAge >= 0 {
			t.Errorf("logout's cookie = %+v, want it cleared", c)
		}
		problem(t, b.do("GET", "/ui/session", "", false), 401, "unauthorized")
		problem(t, b.do("GET", "/v1/agents", "", false), 401, "unauthorized")
		if rec := b.do("POST", "/ui/logout", "", true); rec.Code != http.StatusNoContent {
			t.Errorf("a second logout = %d", rec.Code)
		}
		a.ok(other.do("GET", "/v1/agents", "", false), 200) // the other session lives on
	})
}

func TestConsole_login_refusesOtherOriginsAndUnknownTokens(t *testing.T) {
	a := consoleApp(t)
	body := `{"token": "` + admin + `"}`
	for _, h := range [][]string{
		{"Origin", "https://evil.example"},
		{"Origin", "null"},
		{"Origin", "http://example.com.evil.example"},
		{"Origin", "https://evil.example", "X-Forwarded-Host", "console.example.org"},
		{"Sec-Fetch-Site", "cross-site"},
		{"Sec-Fetch-Site", "same-site"},
	} {
		rec := a.do("POST", "/ui/login", "", body, h...)
		problem(t, rec, 403, "csrf_failed")
		if len(rec.Result().Cookies()) != 0 {
			t.Errorf("%v: refused login set %v", h, rec.Header().Values("Set-Cookie"))
		}
	}
	problem(t, a.do("POST", "/ui/login", "", `{"token": "not-a-token"}`), 401, "unauthorized")
	problem(t, a.do("POST", "/ui/login", "", `{"token": "pd_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`), 401, "unauthorized")
	problem(t, a.do("POST", "/ui/login", "", `{"token": ""}`), 400, "invalid_field")
	problem(t, a.do("POST", "/ui/login", "", `{"secret": "x"}`), 400, "invalid_field")
	// Control: the console's own origin (httptest's host), and no Origin
	// at all (curl), log in.
	for _, h := range [][]string{
		{"Origin", "http://example.com", "Sec-Fetch-Site", "same-origin"},
		nil,
		// Behind a proxy that sends promptd its own host: the browser's
		// Sec-Fetch-Site, or the proxy's X-Forwarded-Host, says the
		// console's origin is the page's.
		{"Origin", "https://console.example.org", "Sec-Fetch-Site", "same-origin"},
		{"Origin", "https://console.example.org", "X-Forwarded-Host", "console.example.org"},
	} {
		if rec := a.do("POST", "/ui/login", "", body, h...); rec.Code != http.StatusNoContent {
			t.Errorf("%v: login = %d %s", h, rec.Code, rec.Body)
		}
	}
}

func TestConsole_sessionCookie_isHttpOnlyStrictAndSecureOverTLS(t *testing.T) {
	a := consoleApp(t)
	login := func(url string, headers ...string) *http.Cookie {
		t.Helper()
		rec := do(t, a.h, req("POST", url, "", `{"token": "`+admin+`"}`, headers...))
		if rec.Code != http.StatusNoContent {
			t.Fatalf("login = %d %s", rec.Code, rec.Body)
		}
		return sessionCookieOf(t, rec)
	}
	plain := login("/ui/login")
	if !plain.HttpOnly || plain.SameSite != http.SameSiteStrictMode || plain.Path != "/" || len(plain.Value) < 40 {
		t.Errorf("cookie = %+v", plain)
	}
	if plain.Secure {
		t.Error("Secure over plain http: a browser would never send it back") // the control of the two below
	}
	if c := login("https://example.com/ui/login"); !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
		t.Errorf("over TLS: cookie = %+v, want Secure", c)
	}
	if c := login("/ui/login", "X-Forwarded-Proto", "https"); !c.Secure {
		t.Errorf("behind a TLS proxy: cookie = %+v, want Secure", c)
	}
	always := consoleApp(t, func(cfg *api.Config) { cfg.ConsoleSecureCookie = true })
	rec := always.do("POST", "/ui/login", "", `{"token": "`+admin+`"}`)
	if c := sessionCookieOf(t, rec); !c.Secure {
		t.Errorf("with ConsoleSecureCookie: cookie = %+v, want Secure", c)
	}
}

// The console's live updates are an EventSource on /v1/events with the
// cookie: logging out (or revoking the token) must end the open stream,
// whatever the token (a bootstrap token's stream has no revocation to
// watch).
func TestConsole_logout_endsTheSessionsOpenEventStream(t *testing.T) {
	for _, c := range []struct{ name, token string }{{"bootstrap", admin}, {"managed", ""}} {
		t.Run(c.name, func(t *testing.T) {
			a := consoleApp(t)
			tok := c.token
			if tok == "" {
				tok = a.createToken(`{"name": "watcher", "role": "admin"}`)
			}
			b := a.login(tok)
			srv := httptest.NewServer(a.h)
			defer srv.Close()
			r, _ := http.NewRequest("GET", srv.URL+"/v1/events", nil)
			r.Header.Set("Accept", "text/event-stream")
			r.AddCookie(&http.Cookie{Name: "promptd_session", Value: b.cookie.Value})
			res, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			if res.StatusCode != 200 {
				t.Fatalf("stream with the cookie: %d", res.StatusCode)
			}
			ended := make(chan time.Time, 1)
			go func() {
				sc := bufio.NewScanner(res.Body)
				for sc.Scan() {
				}
				ended <- time.Now()
			}()
			select {
			case <-ended:
				t.Fatal("the stream ended before the logout") // control: it stays open while logged in
			case <-time.After(300 * time.Millisecond):
			}
			out := time.Now()
			if rec := b.do("POST", "/ui/logout", "", true); rec.Code != http.StatusNoContent {
				t.Fatalf("logout = %d", rec.Code)
			}
			select {
			case at := <-ended:
				t.Logf("stream closed %v after the logout", at.Sub(out))
			case <-time.After(2 * time.Second):
				t.Fatal("the stream outlived its console session's logout by 2 s")
			}
		})
	}
}

func TestConsole_loginAgain_endsTheBrowsersPreviousSession(t *testing.T) {
	a := consoleApp(t)
	first := a.login(admin)
	rq := req("POST", "/ui/login", "", `{"token": "`+runtime+`"}`)
	rq.AddCookie(&http.Cookie{Name: "promptd_session", Value: first.cookie.Value})
	rec := do(t, a.h, rq)
	if rec.Code != http.StatusNoContent {
		t.Fatalf("second login = %d %s", rec.Code, rec.Body)
	}
	second := &browser{a: a, cookie: sessionCookieOf(t, rec)}
	problem(t, first.do("GET", "/ui/session", "", false), 401, "unauthorized")
	if s := a.ok(second.do("GET", "/ui/session", "", false), 200); s["actor"] != "agent" {
		t.Errorf("second session = %v", s)
	}
	a.ok(a.login(admin).do("GET", "/ui/session", "", false), 200) // control: another browser's login ends nothing
	a.ok(second.do("GET", "/ui/session", "", false), 200)
}

func TestConsole_loginAndLogout_areAuditedWithoutSecrets(t *testing.T) {
	forEachConsoleDialect(t, func(t *testing.T, a *app) {
		b := a.login(admin)
		if rec := b.do("POST", "/ui/logout", "", true); rec.Code != http.StatusNoContent {
			t.Fatalf("logout = %d", rec.Code)
		}
		var rows []struct{ Actor, Action, Resource, Details string }
		a.db.Raw(`SELECT actor, action, resource, details FROM audit_events WHERE action LIKE 'console.%' ORDER BY id`).Scan(&rows)
		if len(rows) != 2 || rows[0].Action != "console.login" || rows[1].Action != "console.logout" ||
			rows[0].Actor != "ops" || rows[1].Actor != "ops" {
			t.Fatalf("console audit events = %+v", rows)
		}
		for _, r := range rows {
			if strings.Contains(r.Details, b.cookie.Value) || strings.Contains(r.Details, b.csrf) || strings.Contains(r.Details, admin) {
				t.Errorf("an audit event holds a secret: %+v", r)
			}
		}
	})
}
