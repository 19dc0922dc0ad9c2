package browsertest

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
)

func TestLogin_badTokenShowsTheError_goodTokenReachesTheAgents(t *testing.T) {
	srv := startServer(t)
	tb := newTab(t, srv)

	// A page of the console without a session sends the user to login.
	tb.open("/ui/")
	tb.wait("the login page", `location.pathname === '/ui/login' && document.querySelector('[data-testid=login-form]')`)

	tb.fill(sel("login-token"), "not-a-token-0123456789")
	tb.click(sel("login-submit"))
	tb.wait("the error shown", `(e => e && !e.hidden && e.innerText.trim() !== '')(document.querySelector('[data-testid=login-form] [data-testid=form-error]'))`)
	msg := tb.text(sel("form-error"))
	if !strings.Contains(msg, "not valid") {
		t.Errorf("bad token: the form error says %q, want it to say the token is not valid", msg)
	}
	t.Logf("bad token: the form says %q (data-code %q)", msg, tb.attr(sel("form-error"), "data-code"))
	if role := tb.attr(sel("form-error"), "role"); role != "alert" {
		t.Errorf("bad token: form-error role %q, want alert (announced)", role)
	}
	// The error is tied to the form for screen readers.
	described := tb.attr(sel("login-form"), "aria-describedby")
	errID := tb.attr(sel("form-error"), "id")
	if errID == "" || !strings.Contains(" "+described+" ", " "+errID+" ") {
		t.Errorf("bad token: login-form aria-describedby %q does not name the error (id %q)", described, errID)
	}
	if c := tb.sessionCookie(); c != nil {
		t.Errorf("bad token: a session cookie was set: %+v", c)
	}
	if p := eval[string](tb, "location.pathname"); p != "/ui/login" {
		t.Errorf("bad token: at %s, want /ui/login", p)
	}
	tb.screenshot("bad-token")

	// The control: the right token gets in.
	tb.fill(sel("login-token"), adminToken)
	tb.click(sel("login-submit"))
	tb.wait("the agents page", `location.pathname === '/ui/' && document.querySelector('[data-testid=agents]')`)
	if actor := tb.text(sel("session-actor")); !strings.HasPrefix(actor, "ops") {
		t.Errorf("session-actor %q, want the token's name ops", actor)
	}
	if role := tb.attr(sel("session-actor"), "data-role"); role != "admin" {
		t.Errorf("session-actor data-role %q, want admin", role)
	}
	c := tb.sessionCookie()
	if c == nil {
		t.Fatal("no promptd_session cookie after login")
	}
	if !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict || c.Path != "/" {
		t.Errorf("session cookie: HttpOnly %v, SameSite %q, Path %q; want true, Strict, /", c.HTTPOnly, c.SameSite, c.Path)
	}
	if strings.Contains(c.Value, adminToken) {
		t.Error("the session cookie holds the token")
	}
	// HttpOnly: the page's scripts cannot read it.
	if dc := eval[string](tb, "document.cookie"); strings.Contains(dc, "promptd_session") {
		t.Errorf("document.cookie shows the session: %q", dc)
	}
}

func TestLogout_endsTheSession_andTheOldCookieIsRefused(t *testing.T) {
	srv := startServer(t)
	tb := newTab(t, srv)
	tb.login(adminToken)
	c := tb.sessionCookie()
	if c == nil {
		t.Fatal("no session cookie after login")
	}
	cookieGet := func() int {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/agents", nil)
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	// The control: before logout the cookie works outside the browser too.
	if st := cookieGet(); st != 200 {
		t.Fatalf("GET /v1/agents with the session cookie before logout: %d, want 200", st)
	}

	tb.click(sel("logout"))
	tb.wait("the login page after logout", `location.pathname === '/ui/login' && document.querySelector('[data-testid=login-form]')`)
	if st := eval[int](tb, `fetch('/ui/session').then(r => r.status)`); st != 401 {
		t.Errorf("GET /ui/session from the page after logout: %d, want 401", st)
	}
	if st := cookieGet(); st != 401 {
		t.Errorf("GET /v1/agents with the old cookie after logout: %d, want 401", st)
	}
	// Back to a console page: login again, not the page.
	tb.open("/ui/releases")
	tb.wait("the login page", `location.pathname === '/ui/login'`)
}
