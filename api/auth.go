package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/audit"
)

// bearerToken returns the token of an "Authorization: Bearer <token>"
// header, or "".
func bearerToken(r *http.Request) string {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// tokenEqual compares a presented token with a configured one in constant
// time. Hashing first makes the time independent of the lengths too. An
// empty presented token never matches.
func tokenEqual(got, want string) bool {
	if got == "" {
		return false
	}
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// errUnauthorized is the answer to a missing or unknown token. It never
// says which of the two it was.
func errUnauthorized() *Error {
	return Errorf(CodeUnauthorized, "a valid bearer token is required").
		WithHeader("WWW-Authenticate", `Bearer realm="promptd"`)
}

// Token roles (API.md, Conventions: Auth).
const (
	// RoleAdmin may do everything.
	RoleAdmin = "admin"
	// RoleRuntime may read, resolve and assemble, and use sessions and
	// leases; writes to versions, env pointers, releases, revocations,
	// import and reading audit are admin-only.
	RoleRuntime = "runtime"
)

// Token is one accepted bearer token. Name is what logs and audit show.
type Token struct {
	Name   string
	Role   string
	Secret string
}

// Echo context keys set by the middleware.
const (
	ctxActor     = "promptd.actor"
	ctxRole      = "promptd.role"
	ctxRequestID = "promptd.request_id"
)

// authenticate returns the token a request presents, comparing it with
// every configured token in constant time (no early exit, so the time does
// not tell which one matched). It compares SHA-256 hashes, as tokenEqual
// does; the configured secrets were hashed once, in New.
func (s *Server) authenticate(r *http.Request) (Token, bool) {
	presented := bearerToken(r)
	if presented == "" {
		return Token{}, false
	}
	h := sha256.Sum256([]byte(presented))
	var found Token
	ok := false
	for i, t := range s.cfg.Tokens {
		if subtle.ConstantTimeCompare(h[:], s.secretHashes[i][:]) == 1 {
			found, ok = t, true
		}
	}
	return found, ok
}

// hashSecrets hashes the configured secrets for authenticate.
func hashSecrets(tokens []Token) [][sha256.Size]byte {
	out := make([][sha256.Size]byte, len(tokens))
	for i, t := range tokens {
		out[i] = sha256.Sum256([]byte(t.Secret))
	}
	return out
}

// require admits requests whose token has role (an admin token has every
// role): no or unknown token is 401 unauthorized, a runtime token on an
// admin route 403 forbidden. The token's name becomes the actor of the
// request's context, which domain audit events record.
func (s *Server) require(role string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			t, ok := s.authenticate(c.Request())
			if !ok {
				return errUnauthorized()
			}
			c.Set(ctxActor, t.Name)
			c.Set(ctxRole, t.Role)
			if role == RoleAdmin && t.Role != RoleAdmin {
				return Errorf(CodeForbidden, "token %q (role %s) may not use this route; it needs an admin token", t.Name, t.Role)
			}
			r := c.Request()
			c.SetRequest(r.WithContext(audit.WithActor(r.Context(), t.Name)))
			return next(c)
		}
	}
}

// actorOf is the name of the request's token ("" before authentication).
func actorOf(c echo.Context) string {
	name, _ := c.Get(ctxActor).(string)
	return name
}

// roleOf is the role of the request's token ("" before authentication).
func roleOf(c echo.Context) string {
	role, _ := c.Get(ctxRole).(string)
	return role
}
