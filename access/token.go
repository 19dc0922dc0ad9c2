package access

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/promptd/promptd/problem"
)

// Roles (api/openapi.yaml, Conventions: Auth).
const (
	RoleAdmin   = "admin"
	RoleRuntime = "runtime"
)

// Limits (api/openapi.yaml, Tokens, scopes and approvals).
const (
	DefaultMaxTokens = 1000                 // live (not revoked, not expired) managed tokens
	DefaultCacheTTL  = time.Second          // a cached check of a managed token is trusted this long
	MaxLifetime      = 366 * 24 * time.Hour // expires_at at most a year ahead (a leap year's)
	lastUsedEvery    = time.Minute          // last_used_at is written at most this often per token
	secretPrefix     = "pd_"
	secretLen        = len(secretPrefix) + 43 // 32 bytes, base64url without padding
	idPrefix         = "tok_"
	busKind          = "token"
)

// Sentinel errors; test with errors.Is.
var (
	ErrNotFound = problem.New(problem.TokenNotFound, "access: no such token", "no such managed token")
	ErrExists   = problem.New(problem.TokenExists, "access: a token with this name exists or existed",
		"a token with this name exists or existed; names are never reused")
	ErrBootstrap = problem.New(problem.TokenBootstrap, "access: a bootstrap token (PROMPTD_TOKENS) cannot be revoked through the API",
		"a PROMPTD_TOKENS token is revoked by removing it from the configuration")
	ErrUnknown     = errors.New("access: unknown, revoked or expired token")
	ErrUnavailable = problem.Unavailable("access: the token store is unavailable", "sql",
		"the database cannot confirm this token; retry later")
)

// WiderError: a token would be wider than its creator in Scope ("role",
// "agents", "envs", "boards" or "expires_at").
type WiderError struct{ Scope string }

func (e *WiderError) Error() string {
	return fmt.Sprintf("access: the new token's %s would be wider than its creator's", e.Scope)
}

// Problem is 403 forbidden naming the scope.
func (e *WiderError) Problem() *problem.Problem {
	return problem.OutOfScope(e.Scope, "a token may not be wider than its creator: its "+e.Scope+" would be")
}

// Token is a bearer token without its secret: a managed one, or one of
// the bootstrap set (Bootstrap, which has no ID).
type Token struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Role      string     `json:"role"`
	Scopes    *Scopes    `json:"scopes"` // nil: unscoped
	Principal string     `json:"principal"`
	CreatedBy string     `json:"created_by"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
	RevokedAt *time.Time `json:"revoked_at"`
	LastUsed  *time.Time `json:"last_used_at"`
	Bootstrap bool       `json:"bootstrap"`
}

// Live reports whether t may be used at now.
func (t *Token) Live(now time.Time) bool {
	return t.RevokedAt == nil && (t.ExpiresAt == nil || now.Before(*t.ExpiresAt))
}

// WithSecret is a token just created: its secret is shown once.
type WithSecret struct {
	*Token
	Secret string
}

// hashOf is the stored form of a secret.
type hashOf [sha256.Size]byte

func hash(secret string) hashOf { return sha256.Sum256([]byte(secret)) }

func (h hashOf) hex() string { return hex.EncodeToString(h[:]) }

// NewSecret is "pd_" and 32 random bytes, base64url.
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails
	return secretPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

func newID() string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return idPrefix + hex.EncodeToString(b[:])
}

// plausible: only a secret of the managed form is looked up in SQL; any
// other is unknown at once.
func plausible(secret string) bool {
	return len(secret) == secretLen && secret[:len(secretPrefix)] == secretPrefix
}

func invalid(field, format string, args ...any) error {
	return &problem.InvalidError{Code: problem.InvalidField, Field: field, Detail: fmt.Sprintf(format, args...)}
}
