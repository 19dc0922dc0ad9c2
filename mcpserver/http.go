package mcpserver

import (
	"context"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptd/promptd/access"
)

// HandlerOptions configure Handler.
type HandlerOptions struct {
	// MaxBodyBytes bounds one request's body; zero means the SDK's
	// default (4 MiB).
	MaxBodyBytes int64
	// SessionTimeout closes a session that sends no request for that
	// long; zero means 10 minutes.
	SessionTimeout time.Duration
}

type principalKey struct{}

type principal struct {
	token *access.Token
	env   string
}

// Authenticated is ctx of a request whose bearer token the caller has
// authenticated as t, for env: Handler serves only such requests (and a
// session only to the token and env that opened it).
func Authenticated(ctx context.Context, t *access.Token, env string) context.Context {
	return context.WithValue(ctx, principalKey{}, principal{token: t, env: env})
}

// Handler serves MCP over streamable HTTP (the SDK's
// StreamableHTTPHandler) to requests made Authenticated: a new session
// gets a Server for the request's token and env. A request without the
// principal is 401.
func (s *Service) Handler(o HandlerOptions) http.Handler {
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 10 * time.Minute
	}
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		p, ok := r.Context().Value(principalKey{}).(principal)
		if !ok {
			return nil
		}
		srv, err := s.Server(r.Context(), p.token, p.env)
		if err != nil {
			s.log.Debug("mcp: no server for the request", "env", p.env, "err", err)
			return nil
		}
		return srv
	}, &mcp.StreamableHTTPOptions{MaxRequestBodyBytes: o.MaxBodyBytes, SessionTimeout: o.SessionTimeout,
		// The caller's authentication already bound the request to a
		// token; promptd listens on any address a proxy may name.
		DisableLocalhostProtection: true})
	// The SDK binds a session to the TokenInfo's UserID that opened it: a
	// session is used by that token on that env only.
	verify := func(ctx context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		p, ok := r.Context().Value(principalKey{}).(principal)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		exp := time.Now().Add(24 * time.Hour)
		if p.token.ExpiresAt != nil {
			exp = *p.token.ExpiresAt
		}
		return &auth.TokenInfo{UserID: p.token.Principal + "/" + p.token.Name + "@" + p.env, Expiration: exp}, nil
	}
	return auth.RequireBearerToken(verify, nil)(h)
}
