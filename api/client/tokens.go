package client

import (
	"context"
	"encoding/json"
	"fmt"
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

// TokenPage is a page of managed tokens, and the bootstrap set
// (PROMPTD_TOKENS), the same on every page.
type TokenPage struct {
	Items     []Token          `json:"items"`
	Next      string           `json:"next"`
	Bootstrap []BootstrapToken `json:"bootstrap"`
}

// BootstrapToken is a token of PROMPTD_TOKENS: unscoped, never expiring,
// its own principal; Source is "PROMPTD_TOKENS".
type BootstrapToken struct {
	Name      string `json:"name"`
	Role      string `json:"role"`
	Principal string `json:"principal"`
	Source    string `json:"source"`
}

// ListTokens lists managed tokens, newest first, revoked ones included,
// and the bootstrap tokens.
func (c *Client) ListTokens(ctx context.Context, o ListOptions) (*TokenPage, error) {
	var p TokenPage
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/tokens", query: o.query()}, &p)
	return ret(&p, err)
}

// RevokeToken revokes the managed token name on every instance.
func (c *Client) RevokeToken(ctx context.Context, name string) error {
	_, err := c.do(ctx, call{method: http.MethodDelete, path: "/v1/tokens/" + url.PathEscape(name)}, nil)
	return err
}

// The codes of change requests.
const (
	ErrChangeRequestNotFound Code = "change_request_not_found"
	ErrChangeRequestClosed   Code = "change_request_closed" // Fields["state"]
	ErrSelfApproval          Code = "self_approval"
)

// ChangeRequest is a gated write in a protected env, waiting for
// approvals.
type ChangeRequest struct {
	ID              string          `json:"id"`
	State           string          `json:"state"` // pending, applied, failed, rejected, expired, cancelled
	Action          string          `json:"action"`
	Agent           string          `json:"agent"`
	Env             string          `json:"env"`
	Request         json.RawMessage `json:"request"`
	TargetRevision  int64           `json:"target_revision"`
	RequestedBy     string          `json:"requested_by"`
	RequestedToken  string          `json:"requested_token"`
	Approvals       []string        `json:"approvals"`
	ApprovalsNeeded int             `json:"approvals_needed"`
	Problem         json.RawMessage `json:"problem"`
	Revision        int64           `json:"revision"`
	CreatedAt       time.Time       `json:"created_at"`
	ExpiresAt       time.Time       `json:"expires_at"`
}

// PendingError: the write was gated (a protected env) and is now the
// pending change request ChangeRequest; it applies when approved.
type PendingError struct{ ChangeRequest *ChangeRequest }

func (e *PendingError) Error() string {
	return "promptd: the env is protected: change request " + e.ChangeRequest.ID + " waits for approval"
}

// decodeOrPending decodes a write's answer, or a 202 into *PendingError.
func decodeOrPending[T any](resp *http.Response, raw []byte) (*T, error) {
	if resp.StatusCode == http.StatusAccepted {
		var body struct {
			ChangeRequest ChangeRequest `json:"change_request"`
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			return nil, fmt.Errorf("promptd: decoding the change request: %w", err)
		}
		return nil, &PendingError{ChangeRequest: &body.ChangeRequest}
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("promptd: decoding the answer: %w", err)
	}
	return &v, nil
}

// ChangeRequests lists change requests (state, agent, env may be "").
func (c *Client) ChangeRequests(ctx context.Context, state, agent, env string, o ListOptions) (*Page[ChangeRequest], error) {
	q := o.query()
	for k, v := range map[string]string{"state": state, "agent": agent, "env": env} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var p Page[ChangeRequest]
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/change-requests", query: q}, &p)
	return ret(&p, err)
}

// GetChangeRequest returns one change request.
func (c *Client) GetChangeRequest(ctx context.Context, id string) (*ChangeRequest, error) {
	var cr ChangeRequest
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/change-requests/" + url.PathEscape(id)}, &cr)
	return ret(&cr, err)
}

// DecideChangeRequest approves, rejects or cancels (verb) a change request.
func (c *Client) DecideChangeRequest(ctx context.Context, id, verb string) (*ChangeRequest, error) {
	var cr ChangeRequest
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/v1/change-requests/" + url.PathEscape(id) + "/" + verb}, &cr)
	return ret(&cr, err)
}

// Protection gates writes in an env (PUT /v1/protections/{env}).
type Protection struct {
	Env              string   `json:"env,omitempty"`
	Approvals        int      `json:"approvals"`
	Agents           []string `json:"agents,omitempty"`
	Approvers        []string `json:"approvers,omitempty"`
	ExpectedRevision *int64   `json:"expected_revision,omitempty"`
	Revision         int64    `json:"revision,omitempty"`
}

// SetProtection protects env (approvals 0 lifts it; admin, unscoped).
func (c *Client) SetProtection(ctx context.Context, env string, p Protection) (*Protection, error) {
	p.Env, p.Revision = "", 0
	var out Protection
	_, err := c.do(ctx, call{method: http.MethodPut, path: "/v1/protections/" + url.PathEscape(env), body: p}, &out)
	return ret(&out, err)
}
