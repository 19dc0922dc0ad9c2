package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/access"
)

// tokenResponse is a managed token as the API shows it: never its secret
// or hash.
type tokenResponse struct {
	ID         string         `json:"id"`
	Name       string         `json:"name"`
	Role       string         `json:"role"`
	Scopes     *access.Scopes `json:"scopes"`
	Principal  string         `json:"principal"`
	CreatedBy  string         `json:"created_by"`
	CreatedAt  timestamp      `json:"created_at"`
	ExpiresAt  *timestamp     `json:"expires_at"`
	RevokedAt  *timestamp     `json:"revoked_at"`
	LastUsedAt *timestamp     `json:"last_used_at"`
}

// tokenWithSecret is the answer of a create: "secret" is always present
// (null in a stored Idempotency-Key outcome).
type tokenWithSecret struct {
	tokenResponse
	Secret         *string `json:"secret"`
	SecretRedacted bool    `json:"secret_redacted"`
}

func optTime(t *time.Time) *timestamp {
	if t == nil {
		return nil
	}
	ts := timestamp(*t)
	return &ts
}

func tokenBody(t *access.Token) tokenResponse {
	return tokenResponse{ID: t.ID, Name: t.Name, Role: t.Role, Scopes: t.Scopes, Principal: t.Principal, CreatedBy: t.CreatedBy,
		CreatedAt: timestamp(t.CreatedAt), ExpiresAt: optTime(t.ExpiresAt), RevokedAt: optTime(t.RevokedAt), LastUsedAt: optTime(t.LastUsed)}
}

func redactedToken(t *access.WithSecret) any {
	return tokenWithSecret{tokenResponse: tokenBody(t.Token), SecretRedacted: true}
}

// createTokenRequest is the body of POST /v1/tokens.
type createTokenRequest struct {
	Name      *string        `json:"name"`
	Role      *string        `json:"role"`
	Scopes    *access.Scopes `json:"scopes"`
	ExpiresAt *string        `json:"expires_at"`
}

// handleCreateToken: POST /v1/tokens.
func (s *Server) handleCreateToken(c echo.Context) error {
	ts := s.rt.Access
	var req createTokenRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Name == nil {
		return invalidField("name", "name is required")
	}
	if req.Role == nil {
		return invalidField("role", "role is required: admin or runtime")
	}
	in := access.CreateInput{Name: *req.Name, Role: *req.Role, Scopes: req.Scopes}
	if req.ExpiresAt != nil {
		at, err := time.Parse(time.RFC3339Nano, *req.ExpiresAt)
		if err != nil {
			return invalidField("expires_at", "expires_at is an RFC 3339 time")
		}
		in.ExpiresAt = &at
	}
	t, err := ts.Create(c.Request().Context(), tokenOf(c), in, recordAnswer(s, c, http.StatusCreated, redactedToken))
	if err != nil {
		return err
	}
	// The answer holds the secret, also when the write recorded its
	// (redacted) outcome for an Idempotency-Key: not s.send, which would
	// answer that outcome.
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	b, err := encodeJSON(tokenWithSecret{tokenResponse: tokenBody(t.Token), Secret: &t.Secret})
	if err != nil {
		return err
	}
	return c.Blob(http.StatusCreated, echo.MIMEApplicationJSON, b)
}

// handleListTokens: GET /v1/tokens, newest first.
func (s *Server) handleListTokens(c echo.Context) error {
	ts := s.rt.Access
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	var after int64
	if page.Cursor != "" {
		n, ok := positive(page.Cursor, 1<<62)
		if !ok || n == 0 {
			return invalidField("cursor", "cursor must be the next value of a previous page")
		}
		after = int64(n)
	}
	toks, next, err := ts.List(c.Request().Context(), after, page.Limit)
	if err != nil {
		return err
	}
	out := tokenList{Items: make([]tokenResponse, len(toks)), Bootstrap: make([]bootstrapToken, len(s.bootstrap))}
	for i, t := range toks {
		out.Items[i] = tokenBody(t)
	}
	if next > 0 {
		out.Next = cursor(strconv.FormatInt(next, 10))
	}
	for i, t := range s.bootstrap {
		out.Bootstrap[i] = bootstrapToken{Name: t.Name, Role: t.Role, Principal: t.Principal, Source: "PROMPTD_TOKENS"}
	}
	return s.send(c, http.StatusOK, out)
}

// tokenList is the answer of GET /v1/tokens: a page of managed tokens,
// and (the same on every page) the bootstrap set, which lives in
// promptd's configuration, not in SQL, so an admin reading the list sees
// every token that can act, never a secret.
type tokenList struct {
	Items     []tokenResponse  `json:"items"`
	Next      *string          `json:"next"`
	Bootstrap []bootstrapToken `json:"bootstrap"`
}

// bootstrapToken is one token of PROMPTD_TOKENS: unscoped, never
// expiring, its own principal, revoked only by a restart without it.
type bootstrapToken struct {
	Name      string `json:"name"`
	Role      string `json:"role"`
	Principal string `json:"principal"`
	Source    string `json:"source"`
}

// handleRevokeToken: DELETE /v1/tokens/{name}.
func (s *Server) handleRevokeToken(c echo.Context) error {
	ts := s.rt.Access
	name, err := param(c, "name")
	if err != nil {
		return err
	}
	if _, err := ts.Revoke(c.Request().Context(), name); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
