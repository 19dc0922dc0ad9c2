package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
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
