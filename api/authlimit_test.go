package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/api"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/sqlstore"
)

// countedApp is a SQLite app whose SQL lookups of one managed token by its
// secret (not the cache's background refresh of the tokens it holds) are
// counted. The counter is registered before the app runs: GORM's callbacks
// may not change while queries run.
func countedApp(t *testing.T, mod func(*api.Config)) (*app, *atomic.Int64) {
	db := testenv.OpenDB(t, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "promptd.db")}, migrations())
	t.Helper()
	var n atomic.Int64
	count := func(tx *gorm.DB) {
		if strings.Contains(tx.Statement.SQL.String(), "FROM access_tokens WHERE secret_hash = ?") {
			n.Add(1)
		}
	}
	// Raw(...).Scan runs the row callbacks; register on query too, so
	// the count does not depend on which one GORM picks.
	if err := db.Callback().Row().After("gorm:row").Register("test:count_token_lookups", count); err != nil {
		t.Fatal(err)
	}
	if err := db.Callback().Query().After("gorm:query").Register("test:count_token_lookups", count); err != nil {
		t.Fatal(err)
	}
	return newApp(t, db, mod), &n
}

// from is a request from a client address.
func (a *app) from(addr, method, path, token string, headers ...string) *httptest.ResponseRecorder {
	a.t.Helper()
	r := req(method, path, token, "", headers...)
	r.RemoteAddr = addr
	return do(a.t, a.h, r)
}

// A client spraying made-up managed secrets gets 401 for its first 10
// (the budget here), then 429 with Retry-After, and those cost no SQL
// lookup. Over budget, the address's bootstrap token and a managed token
// the instance has just checked still pass, and another address is
// untouched. Control: with the limit off,
// every made-up secret is a 401 and a lookup.
func TestAuthFailures_overBudget_are429WithoutSQL_knownTokensStillPass(t *testing.T) {
	a, lookups := countedApp(t, func(c *api.Config) { c.AuthFailuresPerMinute = 10 })
	good := a.createToken(`{"name": "worker", "role": "runtime"}`)
	const attacker, friend = "198.51.100.7:4000", "203.0.113.9:4000"
	if rec := a.from(attacker, "GET", "/v1/agents", good); rec.Code != 200 { // now in the cache
		t.Fatalf("the managed token: %d %s", rec.Code, rec.Body)
	}
	lookups.Store(0)                                                 // count from here: the managed token's own lookup is not a made-up one
	made := func(i int) string { return fmt.Sprintf("pd_%043d", i) } // the managed form: looked up in SQL
	var statuses []int
	for i := range 25 {
		statuses = append(statuses, a.from(attacker, "GET", "/v1/agents", made(i)).Code)
	}
	want := "[" + strings.Repeat("401 ", 10) + strings.TrimSpace(strings.Repeat("429 ", 15)) + "]"
	if got := fmt.Sprint(statuses); got != want {
		t.Fatalf("statuses = %s\nwant     %s", got, want)
	}
	metrics := a.do("GET", "/metrics", "", "").Body.String()
	for _, line := range []string{`promptd_auth_failures_total{outcome="refused"} 10`, `promptd_auth_failures_total{outcome="limited"} 15`} {
		if !strings.Contains(metrics, line+"\n") {
			t.Errorf("metrics lack %q", line)
		}
	}
	t.Logf("SQL lookups of made-up secrets: %d", lookups.Load())
	if n := lookups.Load(); n > 10 {
		t.Errorf("%d SQL lookups for 25 made-up secrets, want at most the 10 within budget", n)
	}
	p := problem(t, a.from(attacker, "GET", "/v1/agents", made(99)), 429, "quota_exceeded")
	if p["limit"] != float64(10) {
		t.Errorf("limit = %v, want 10", p["limit"])
	}
	rec := a.from(attacker, "GET", "/v1/agents", made(98))
	if ra := rec.Header().Get("Retry-After"); ra == "" || ra == "0" {
		t.Errorf("Retry-After = %q, want whole seconds until the next failure is allowed", ra)
	}
	if rec := a.from(attacker, "GET", "/v1/agents", admin); rec.Code != 200 {
		t.Errorf("a bootstrap token from the address over budget: %d, want 200 (an operator is never locked out)", rec.Code)
	}
	if rec := a.from(attacker, "GET", "/v1/agents", good); rec.Code != 200 {
		t.Errorf("a cached managed token from the address over budget: %d %s, want 200", rec.Code, rec.Body)
	}
	if rec := a.from(friend, "GET", "/v1/agents", made(1)); rec.Code != 401 {
		t.Errorf("a made-up secret from another address: %d, want 401", rec.Code)
	}
	if rec := a.from(friend, "GET", "/v1/agents", admin); rec.Code != 200 {
		t.Errorf("the bootstrap token from another address: %d, want 200", rec.Code)
	}

	off, offLookups := countedApp(t, func(c *api.Config) { c.AuthFailuresPerMinute = -1 })
	for i := range 25 {
		if rec := off.from(attacker, "GET", "/v1/agents", made(i)); rec.Code != 401 {
			t.Fatalf("limit off: made-up secret %d answered %d, want 401", i, rec.Code)
		}
	}
	if n := offLookups.Load(); n != 25 {
		t.Errorf("limit off: %d SQL lookups for 25 made-up secrets, want 25 (the count the limit saves)", n)
	}
}

// The console's login and its cookie count as authentications: failed
// logins and made-up cookies spend the address's budget, then 429.
func TestAuthFailures_consoleLoginAndCookies_shareTheBudget(t *testing.T) {
	a := consoleApp(t, func(c *api.Config) { c.AuthFailuresPerMinute = 4 })
	const addr = "198.51.100.8:5000"
	login := func(token string) int {
		r := req("POST", "/ui/login", "", `{"token": "`+token+`"}`)
		r.RemoteAddr = addr
		return do(t, a.h, r).Code
	}
	cookie := func(v string) int {
		return a.from(addr, "GET", "/v1/agents", "", "Cookie", "promptd_session="+v).Code
	}
	managed := fmt.Sprintf("pd_%043d", 1)
	got := []int{login(managed), login("nope"), cookie(strings.Repeat("x", 43)), cookie(strings.Repeat("y", 43)),
		login(managed), cookie(strings.Repeat("z", 43)), login(admin)}
	if s := fmt.Sprint(got); s != "[401 401 401 401 429 429 204]" {
		t.Fatalf("login, login, cookie, cookie, then over budget (a bootstrap login still passes): %s, want [401 401 401 401 429 429 204]", s)
	}
}

// An open long-poll re-checks its token every 200 ms (a console cookie's:
// its session too); those re-checks are not refused when its address goes
// over budget, or one failing client at an address would end every
// console stream open from it. Control: a request from that address with
// the cookie of another session, whose cached check is older than 1 s, is
// refused.
func TestAuthFailures_overBudget_doNotEndOpenWaits(t *testing.T) {
	a := consoleApp(t, func(c *api.Config) { c.AuthFailuresPerMinute = 3 })
	const addr = "198.51.100.9:6000"
	b, idle := a.login(admin), a.login(admin) // idle: a session with no open stream
	withCookie := func(r *http.Request) *http.Request {
		r.RemoteAddr = addr
		r.AddCookie(&http.Cookie{Name: b.cookie.Name, Value: b.cookie.Value})
		return r
	}
	type answer struct {
		code int
		body string
	}
	done := make(chan answer, 1)
	go func() {
		rec := httptest.NewRecorder()
		a.h.ServeHTTP(rec, withCookie(req("GET", "/v1/events?since=0&wait_ms=5000&actions=version.created", "", "")))
		done <- answer{rec.Code, rec.Body.String()}
	}()
	time.Sleep(300 * time.Millisecond) // the wait is open and has re-checked once
	for i := range 5 {
		a.from(addr, "GET", "/v1/agents", fmt.Sprintf("pd_%043d", i))
	}
	time.Sleep(1200 * time.Millisecond) // past the session cache's 1 s: a check of idle needs SQL
	r := req("GET", "/v1/agents", "", "")
	r.RemoteAddr = addr
	r.AddCookie(&http.Cookie{Name: idle.cookie.Name, Value: idle.cookie.Value})
	if rec := do(t, a.h, r); rec.Code != 429 {
		t.Fatalf("control: a request with another session's cookie from the address over budget answered %d, want 429", rec.Code)
	}
	a.createVersion("late", 0, "arrives after the failures")
	got := <-done
	if got.code != 200 || !strings.Contains(got.body, `"late"`) {
		t.Fatalf("the open wait answered %d %s; want 200 with the version created after its address went over budget", got.code, got.body)
	}
}

// Behind a trusted proxy, failures count against the address it forwarded
// for (the rightmost X-Forwarded-For entry that is not a trusted proxy),
// so two clients behind it have budgets of their own; from a connection
// that is not a trusted proxy, X-Forwarded-For is ignored (a client
// cannot dodge its budget by naming another address). Control: without
// TrustedProxies, everything behind the proxy shares its budget.
func TestAuthFailures_behindATrustedProxy_countPerForwardedClient(t *testing.T) {
	run := func(trusted bool) (behindProxy, spoofer []int) {
		a := sqliteApp(t, func(c *api.Config) {
			c.AuthFailuresPerMinute = 3
			if trusted {
				c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.9.0.0/16")}
			}
		})
		const proxy, direct = "10.9.0.2:7000", "198.51.100.20:7000"
		for i := range 4 {
			a.from(proxy, "GET", "/v1/agents", fmt.Sprintf("pd_%043d", i), "X-Forwarded-For", "203.0.113.1, 10.9.0.3")
		}
		behindProxy = append(behindProxy,
			a.from(proxy, "GET", "/v1/agents", fmt.Sprintf("pd_%043d", 9), "X-Forwarded-For", "203.0.113.1").Code,
			a.from(proxy, "GET", "/v1/agents", fmt.Sprintf("pd_%043d", 9), "X-Forwarded-For", "203.0.113.2").Code)
		for i := range 4 {
			a.from(direct, "GET", "/v1/agents", fmt.Sprintf("pd_%043d", i), "X-Forwarded-For", fmt.Sprintf("203.0.113.%d", 50+i))
		}
		spoofer = append(spoofer, a.from(direct, "GET", "/v1/agents", fmt.Sprintf("pd_%043d", 9), "X-Forwarded-For", "203.0.113.99").Code)
		return behindProxy, spoofer
	}
	proxied, spoofed := run(true)
	if fmt.Sprint(proxied) != "[429 401]" {
		t.Errorf("trusted proxy: the failing client then another behind it = %v, want [429 401]", proxied)
	}
	if fmt.Sprint(spoofed) != "[429]" {
		t.Errorf("an untrusted client naming new addresses in X-Forwarded-For = %v, want [429] (its own address's budget)", spoofed)
	}
	if proxied, _ := run(false); fmt.Sprint(proxied) != "[429 429]" {
		t.Errorf("control, no trusted proxy: %v, want [429 429] (one budget for the proxy's address)", proxied)
	}
}
