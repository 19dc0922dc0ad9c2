package promptstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/prompt"
)

// Request asks which version a caller gets.
type Request struct {
	Agent, Env string
	UserID     string // opaque; hashed for bucketing, never put into keys
	SessionID  string
}

// Resolution is the version a caller gets and why.
type Resolution struct {
	Agent        string        `json:"agent"`
	Env          string        `json:"env"`
	Version      int           `json:"version"`
	Release      *prompt.Trace `json:"release"`
	Pinned       bool          `json:"pinned"`
	RepinnedFrom *int          `json:"repinned_from"`

	// What the env pointer says besides its version, for the resolvers
	// that decorate it (a release arm, a session pin); never serialised.
	// Revoked is the pointer's own set: read it, never change it.
	ActiveReleaseID string       `json:"-"`
	Revoked         map[int]bool `json:"-"`
	// ActiveRelease is the release that decided (set by the release
	// resolver), so a session pin can name its arm; never serialised.
	ActiveRelease *prompt.Release `json:"-"`
}

// Resolver decides who gets which version. The prompt store's own resolver
// is the env pointer; releases and session pins wrap it (cmd composes:
// session pin -> release arm -> env pointer).
type Resolver interface {
	Resolve(ctx context.Context, req Request) (Resolution, error)
}

// ResolverFunc adapts a function to Resolver.
type ResolverFunc func(ctx context.Context, req Request) (Resolution, error)

// Resolve implements Resolver.
func (f ResolverFunc) Resolve(ctx context.Context, req Request) (Resolution, error) {
	return f(ctx, req)
}

// ValidateRequest checks the identifiers of a request.
func ValidateRequest(req Request) error {
	if err := validateEnv(req.Agent, req.Env); err != nil {
		return err
	}
	if req.UserID != "" {
		if err := ValidateOpaque("user_id", req.UserID); err != nil {
			return err
		}
	}
	if req.SessionID != "" {
		if err := ident.Validate("session_id", req.SessionID); err != nil {
			return invalidID(err)
		}
	}
	return nil
}

// ValidateOpaque checks an opaque identifier (user_id, holder): 1..256
// bytes of printable UTF-8 (ident.CheckOpaque).
func ValidateOpaque(field, s string) error { return ident.CheckOpaque(field, s) }

// Resolve is the env pointer resolver: the pointer's version.
func (s *Store) Resolve(ctx context.Context, req Request) (Resolution, error) {
	st, err := s.Pointer(ctx, req.Agent, req.Env)
	if err != nil {
		return Resolution{}, err
	}
	return Resolution{Agent: req.Agent, Env: req.Env, Version: st.Version, ActiveReleaseID: st.ActiveReleaseID, Revoked: st.Revoked}, nil
}

// Prompt is a resolved version with its snapshot.
type Prompt struct {
	Resolution
	Snapshot *Snapshot
}

// ResolvePrompt resolves req through r and loads the snapshot. With warm
// caches it makes no network call.
func (s *Store) ResolvePrompt(ctx context.Context, r Resolver, req Request) (*Prompt, error) {
	start := time.Now()
	if err := ValidateRequest(req); err != nil {
		return nil, err
	}
	res, err := r.Resolve(ctx, req)
	if err != nil {
		return nil, err
	}
	snap, err := s.Snapshot(ctx, req.Agent, res.Version)
	if err != nil {
		return nil, err
	}
	s.o.Metrics.resolved(time.Since(start).Seconds())
	return &Prompt{Resolution: res, Snapshot: snap}, nil
}

// History supplies a session's turns for assembly (package session).
type History interface {
	// Turns returns the session's turns, oldest first; with max > 0 the
	// newest max, with maxBytes > 0 the newest that fit in maxBytes of
	// content, never separating an assistant turn with tool_calls from
	// the tool turns answering it.
	Turns(ctx context.Context, sessionID string, max int, maxBytes int64) ([]prompt.Message, error)
}

// AssembleInput asks for the final messages of a runtime call.
type AssembleInput struct {
	Request
	Variables       map[string]json.RawMessage
	History         bool
	MaxHistoryTurns int
}

// Assemble resolves the version for the caller, binds the variables,
// renders the system message and appends the session history (h may be nil
// when there are no sessions). The answer is sized before it is rendered:
// over Limits.AssembleMaxBytes it is a *LimitError (assembled_bytes) and
// nothing large was allocated; the history gets what the rest leaves of
// that budget, newest turns first, and at most Limits.MaxHistoryTurns.
func (s *Store) Assemble(ctx context.Context, r Resolver, h History, in AssembleInput) (*prompt.Assembled, error) {
	if in.MaxHistoryTurns < 0 || in.MaxHistoryTurns > MaxHistoryTurnsRequest {
		return nil, invalid(CodeInvalidField, "max_history_turns", "max_history_turns must be 0..%d", MaxHistoryTurnsRequest)
	}
	p, err := s.ResolvePrompt(ctx, r, in.Request)
	if err != nil {
		return nil, err
	}
	cfg := p.Snapshot.Parsed
	vars, err := cfg.Bind(in.Variables)
	if err != nil {
		return nil, err
	}
	size := cfg.FixedSize(vars)
	limit := s.o.Limits.AssembleMaxBytes
	if size > limit {
		return nil, limitError(LimitAssembledBytes, limit)
	}
	var turns []prompt.Message
	if in.History && in.SessionID != "" && h != nil && size < limit {
		turns, err = h.Turns(ctx, in.SessionID, s.o.Limits.historyTurns(in.MaxHistoryTurns), limit-size)
		if err != nil {
			return nil, err
		}
	}
	out := prompt.Assemble(cfg, p.Version, p.Snapshot.ContentHash, vars, turns)
	out.Release, out.Pinned, out.RepinnedFrom = p.Release, p.Pinned, p.RepinnedFrom
	return out, nil
}
