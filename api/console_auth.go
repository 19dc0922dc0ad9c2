package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/audit"
)

// Console login: POST /ui/login trades a token for a session cookie; the
// /v1 routes accept the cookie when a request has no Authorization header
// (authenticate). The cookie is HttpOnly and SameSite=Strict, so scripts
// cannot read it and other sites' requests do not carry it; unsafe methods
// also need the session's CSRF token in X-CSRF-Token, which only the
// console's own pages can read (GET /ui/session). SQL holds the session
// (package access), so every instance serves it and logout ends it
// everywhere.

// sessionCookie is the console session cookie's name.
const sessionCookie = "promptd_session"

// headerCSRF carries a console session's CSRF token on unsafe requests.
const headerCSRF = "X-CSRF-Token"

// CodeCSRFFailed: a cookie-authenticated unsafe request without the
// session's CSRF token, or a login from another origin.
const CodeCSRFFailed = "csrf_failed"

func errCSRF(detail string) *Error { return Errorf(CodeCSRFFailed, "%s", detail) }

// unsafeMethod reports whether a request with method may change state.
func unsafeMethod(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// tokenOfHash is the token whose secret hashes to sum: a bootstrap one
// (each compared in constant time), else a managed one. secret, when
// known, lets the managed lookup refuse malformed secrets without SQL.
func (s *Server) tokenOfHash(r *http.Request, sum [sha256.Size]byte, secret string) (*access.Token, error) {
	found := -1
	for i := range s.bootstrap {
		if subtle.ConstantTimeCompare(sum[:], s.secretHashes[i][:]) == 1 {
			found = i
		}
	}
	if found >= 0 {
		return s.bootstrap[found], nil
	}
	// A managed token this instance knows passes without the limiter's
	// work (the hot path); over its budget of failures, an address gets
	// no more: any other token is refused without a SQL lookup.
	if t := s.rt.Access.CachedHash(sum); t != nil {
		return t, nil
	}
	if wait := s.authLimit.retryAfter(r); wait > 0 {
		return nil, s.authLimit.errLimited(wait)
	}
	var (
		t   *access.Token
		err error
	)
	if secret != "" {
		t, err = s.rt.Access.Authenticate(r.Context(), secret)
	} else {
		t, err = s.rt.Access.AuthenticateHash(r.Context(), sum)
	}
	switch {
	case errors.Is(err, access.ErrUnknown):
		s.authLimit.failed(r)
		return nil, errUnauthorized()
	case err != nil:
		return nil, err
	}
	return t, nil
}

// consoleSession is the request's console session and its token: 401 when
// it has no live session or the session's token no longer holds, and, for
// an unsafe method, 403 csrf_failed without the session's CSRF token.
func (s *Server) consoleSession(r *http.Request) (*access.Token, *access.ConsoleSession, error) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil || s.console == nil {
		return nil, nil, errUnauthorized()
	}
	// As for tokens: a session this instance knows passes first; a
	// failing address's other cookies are not looked up in SQL.
	cs := s.rt.Access.CachedSession(ck.Value)
	if cs == nil {
		if wait := s.authLimit.retryAfter(r); wait > 0 {
			return nil, nil, s.authLimit.errLimited(wait)
		}
		cs, err = s.rt.Access.Session(r.Context(), ck.Value)
	}
	switch {
	case errors.Is(err, access.ErrNoSession):
		s.authLimit.failed(r)
		return nil, nil, errUnauthorized()
	case err != nil:
		return nil, nil, err
	}
	t, err := s.tokenOfHash(r, cs.TokenHash, "")
	if err != nil {
		return nil, nil, err
	}
	if unsafeMethod(r.Method) && !tokenEqual(r.Header.Get(headerCSRF), cs.CSRF) {
		return nil, nil, errCSRF("a change made with the console's session cookie needs the session's " + headerCSRF + " header (GET /ui/session)")
	}
	return t, cs, nil
}

// viaCookie reports whether authenticate takes r's token from its console
// session cookie: a stream it opens must end at logout, even a bootstrap
// token's (watchToken).
func (s *Server) viaCookie(r *http.Request) bool {
	if s.console == nil || r.Header.Get("Authorization") != "" {
		return false
	}
	_, err := r.Cookie(sessionCookie)
	return err == nil
}

// crossOrigin reports whether a browser says the request comes from
// another site. Sec-Fetch-Site, which pages cannot forge, decides when the
// browser sends it; otherwise an Origin other than the request's host (or
// the X-Forwarded-Host of a proxy that rewrites Host: a page cannot add
// that header to a cross-site request without a CORS preflight, which
// promptd never grants). A request with neither (curl) is not a
// browser's cross-origin request.
func crossOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin", "none":
		return false
	case "":
	default: // same-site, cross-site
		return true
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return true
	}
	fwd := strings.TrimSpace(strings.Split(r.Header.Get("X-Forwarded-Host"), ",")[0])
	return !strings.EqualFold(u.Host, r.Host) && (fwd == "" || !strings.EqualFold(u.Host, fwd))
}

// secureCookie: Secure is set over TLS, when a proxy says the client used
// https (X-Forwarded-Proto can only make the cookie stricter, so it needs
// no trust), and always with Config.ConsoleSecureCookie.
func (s *Server) secureCookie(r *http.Request) bool {
	return s.cfg.ConsoleSecureCookie || r.TLS != nil ||
		strings.EqualFold(strings.TrimSpace(strings.Split(r.Header.Get("X-Forwarded-Proto"), ",")[0]), "https")
}

// loginRequest is POST /ui/login's body.
type loginRequest struct {
	Token string `json:"token"`
}

func (q *loginRequest) validate() error {
	if strings.TrimSpace(q.Token) == "" {
		return invalidField("token", "token is required: a bearer token's secret")
	}
	return nil
}

// handleConsoleLogin authenticates a token exactly as a bearer token and
// starts a console session for it.
func (s *Server) handleConsoleLogin(c echo.Context) error {
	if s.console == nil {
		return errConsoleNotFound()
	}
	r := c.Request()
	if crossOrigin(r) {
		return errCSRF("a console login must come from the console's own origin")
	}
	var in loginRequest
	if err := decode(c, &in); err != nil {
		return err
	}
	secret := strings.TrimSpace(in.Token)
	sum := sha256.Sum256([]byte(secret))
	t, err := s.tokenOfHash(r, sum, secret)
	if err != nil {
		return err
	}
	var until time.Time
	if t.ExpiresAt != nil {
		until = *t.ExpiresAt
	}
	ctx := audit.WithActor(r.Context(), t.Name) // console.login's actor
	id, _, err := s.rt.Access.CreateSession(ctx, sum, s.consoleTTL(), until)
	if err != nil {
		return err
	}
	if old, err := r.Cookie(sessionCookie); err == nil {
		// The browser's previous session is replaced: it ends, so its id
		// is worth nothing to whoever else may hold it.
		if err := s.rt.Access.EndSession(ctx, old.Value); err != nil {
			s.log.WarnContext(r.Context(), "ending the replaced console session failed; it expires by itself", "err", err)
		}
	}
	c.SetCookie(&http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: s.secureCookie(r)})
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.NoContent(http.StatusNoContent)
}

// consoleTTL is how long a console session lasts.
func (s *Server) consoleTTL() time.Duration {
	if s.cfg.ConsoleSessionTTL > 0 {
		return s.cfg.ConsoleSessionTTL
	}
	return access.DefaultSessionTTL
}

// consoleSessionResponse is GET /ui/session's answer.
type consoleSessionResponse struct {
	Actor     string         `json:"actor"`
	Role      string         `json:"role"`
	Scopes    *access.Scopes `json:"scopes"` // null: unscoped
	CSRFToken string         `json:"csrf_token"`
	ExpiresAt timestamp      `json:"expires_at"`
}

// handleConsoleSession describes the request's console session: who is
// logged in, with what role and scopes, and the CSRF token its changes
// carry.
func (s *Server) handleConsoleSession(c echo.Context) error {
	if s.console == nil {
		return errConsoleNotFound()
	}
	t, cs, err := s.consoleSession(c.Request())
	if err != nil {
		return err
	}
	scopes := t.Scopes
	if scopes.Unscoped() {
		scopes = nil
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return s.send(c, http.StatusOK, consoleSessionResponse{Actor: t.Name, Role: t.Role, Scopes: scopes, CSRFToken: cs.CSRF, ExpiresAt: timestamp(cs.ExpiresAt)})
}

// handleConsoleLogout ends the request's console session (its CSRF token
// required) and clears the cookie. Without a live session there is
// nothing to end: the cookie is cleared all the same.
func (s *Server) handleConsoleLogout(c echo.Context) error {
	if s.console == nil {
		return errConsoleNotFound()
	}
	r := c.Request()
	ck, err := r.Cookie(sessionCookie)
	if err == nil {
		cs, err := s.rt.Access.Session(r.Context(), ck.Value)
		switch {
		case err == nil:
			if !tokenEqual(r.Header.Get(headerCSRF), cs.CSRF) {
				return errCSRF("logout needs the session's " + headerCSRF + " header (GET /ui/session)")
			}
			actor := "unknown" // the session's token, when it still holds, is console.logout's actor
			if t, err := s.tokenOfHash(r, cs.TokenHash, ""); err == nil {
				actor = t.Name
			}
			if err := s.rt.Access.EndSession(audit.WithActor(r.Context(), actor), ck.Value); err != nil {
				return err
			}
		case !errors.Is(err, access.ErrNoSession):
			return err
		}
	}
	c.SetCookie(&http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: s.secureCookie(r)})
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.NoContent(http.StatusNoContent)
}
