package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// The codes of the token routes.
const (
	ErrTokenNotFound  Code = "token_not_found"
	ErrTokenExists    Code = "token_exists"
	ErrTokenBootstrap Code = "token_bootstrap"
)

// Scopes limit a token: names or prefixes ending in one '*'; a nil list
// means every name, an empty one none.
type Scopes struct {
	Agents []string `json:"agents"`
	Envs   []string `json:"envs"`
	Boards []string `json:"boards"`
}

// Token is a managed token. Secret is set only in CreateToken's answer
// (null, with SecretRedacted, when that answer is an Idempotency-Key
// replay).
type Token struct {
	ID             string     `json:"id"`
	Name           string     `json:"name"`
	Role           string     `json:"role"`
	Scopes         *Scopes    `json:"scopes"`
	Principal      string     `json:"principal"`
	CreatedBy      string     `json:"created_by"`
	CreatedAt      time.Time  `json:"created_at"`
	ExpiresAt      *time.Time `json:"expires_at"`
	RevokedAt      *time.Time `json:"revoked_at"`
	LastUsedAt     *time.Time `json:"last_used_at"`
	Secret         *string    `json:"secret"`
	SecretRedacted bool       `json:"secret_redacted"`
}

// CreateTokenRequest creates a token; Scopes nil means unscoped.
type CreateTokenRequest struct {
	Name      string     `json:"name"`
	Role      string     `json:"role"`
	Scopes    *Scopes    `json:"scopes,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// CreateToken creates a managed token (admin, unscoped, idempotent); the
// answer holds its secret, shown this once.
func (c *Client) CreateToken(ctx context.Context, req CreateTokenRequest) (*Token, error) {
	var t Token
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/v1/tokens", body: req, idempotent: true}, &t)
	return ret(&t, err)
}

// ListTokens lists managed tokens, newest first, revoked ones included.
func (c *Client) ListTokens(ctx context.Context, o ListOptions) (*Page[Token], error) {
	var p Page[Token]
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/tokens", query: o.query()}, &p)
	return ret(&p, err)
}

// RevokeToken revokes the managed token name on every instance.
func (c *Client) RevokeToken(ctx context.Context, name string) error {
	_, err := c.do(ctx, call{method: http.MethodDelete, path: "/v1/tokens/" + url.PathEscape(name)}, nil)
	return err
}
