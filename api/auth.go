package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/access"
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

// Token roles (api/openapi.yaml, Conventions: Auth).
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
	ctxToken     = "promptd.token"
	ctxRequestID = "promptd.request_id"
)

// authenticate returns the token a request presents. The bootstrap set is
// compared first, with every configured token in constant time (no early
// exit, so the time does not tell which one matched; SHA-256 hashes, as
// tokenEqual does, the configured secrets hashed once in New). Anything
// else is looked up among the managed tokens (access.Service.Authenticate:
// by the secret's hash, the stored hash compared in constant time). A
// managed token SQL cannot confirm is 503 store_unavailable. A request
// without an Authorization header may present a console session cookie
// instead (consoleSession: its token re-checked by hash, and a CSRF token
// on unsafe methods).
func (s *Server) authenticate(r *http.Request) (*access.Token, error) {
	if s.viaCookie(r) {
		t, _, err := s.consoleSession(r)
		return t, err
	}
	presented := bearerToken(r)
	if presented == "" {
		return nil, errUnauthorized()
	}
	return s.tokenOfHash(r, sha256.Sum256([]byte(presented)), presented)
}

// hashSecrets hashes the configured secrets for authenticate.
func hashSecrets(tokens []Token) [][sha256.Size]byte {
	out := make([][sha256.Size]byte, len(tokens))
	for i, t := range tokens {
		out[i] = sha256.Sum256([]byte(t.Secret))
	}
	return out
}

// bootstrapTokens are the configured tokens as the access package shows
// them: unscoped, never expiring, each its own principal.
func bootstrapTokens(tokens []Token) []*access.Token {
	out := make([]*access.Token, len(tokens))
	for i, t := range tokens {
		out[i] = &access.Token{Name: t.Name, Role: t.Role, Principal: t.Name, Bootstrap: true}
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
			t, err := s.authenticate(c.Request())
			if err != nil {
				return err
			}
			c.Set(ctxActor, t.Name)
			c.Set(ctxRole, t.Role)
			c.Set(ctxToken, t)
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

// tokenOf is the request's token (nil before authentication).
func tokenOf(c echo.Context) *access.Token {
	t, _ := c.Get(ctxToken).(*access.Token)
	return t
}
