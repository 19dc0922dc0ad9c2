package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/promptd/promptd/wire"
)

// The env shapes are promptd's wire types (package wire): the server
// encodes the same types.
type (
	// Env is an env pointer with its move history, the versions revoked in
	// it and its active release (nil: none).
	Env = wire.Env
	// Move is one move of an env pointer.
	Move = wire.Move
	// EnvRollback is what an env rollback did.
	EnvRollback = wire.EnvRollback
)

func envPath(agent, env string) string { return "/v1/agents/" + seg(agent) + "/envs/" + seg(env) }

// GetEnv reads an env pointer. No pointer yet: ErrNotFound (or
// ErrAgentNotFound).
func (c *Client) GetEnv(ctx context.Context, agent, env string) (*Env, error) {
	var e Env
	_, err := c.do(ctx, call{method: http.MethodGet, path: envPath(agent, env)}, &e)
	return ret(&e, err)
}

// PutEnvRequest moves an env pointer. ExpectedRevision is the pointer's
// current revision (0 creates the pointer).
type PutEnvRequest struct {
	Version          int    `json:"version"`
	ExpectedRevision int64  `json:"expected_revision"`
	Reason           string `json:"reason,omitempty"`
}

// PutEnv moves (or creates) an env pointer (admin). A stale revision is
// ErrRevisionConflict with CurrentRevision; an active release
// ErrReleaseActive; a revoked version ErrVersionRevoked.
func (c *Client) PutEnv(ctx context.Context, agent, env string, req PutEnvRequest) (*Env, error) {
	var raw []byte
	resp, err := c.do(ctx, call{method: http.MethodPut, path: envPath(agent, env), body: req}, &raw)
	if err != nil {
		return nil, err
	}
	return decodeOrPending[Env](resp, raw)
}

// Revoke stops serving version in env (admin); the version the pointer
// names is ErrVersionCurrent.
func (c *Client) Revoke(ctx context.Context, agent, env string, version int, reason string) (*Env, error) {
	var e Env
	body := map[string]any{"version": version, "reason": reason}
	_, err := c.do(ctx, call{method: http.MethodPost, path: envPath(agent, env) + "/revocations", body: body}, &e)
	return ret(&e, err)
}

// Unrevoke serves version in env again (admin).
func (c *Client) Unrevoke(ctx context.Context, agent, env string, version int) (*Env, error) {
	var e Env
	_, err := c.do(ctx, call{method: http.MethodDelete, path: fmt.Sprintf("%s/revocations/%d", envPath(agent, env), version)}, &e)
	return ret(&e, err)
}

// RollbackEnvRequest rolls an env back. ExpectedRevision is the pointer's
// revision (required); ToVersion 0 picks the newest older, unrevoked
// version of the move history.
type RollbackEnvRequest struct {
	ExpectedRevision int64  `json:"expected_revision"`
	ToVersion        int    `json:"to_version,omitempty"`
	Reason           string `json:"reason,omitempty"`
}

// RollbackEnv rolls env back (admin): the active release if there is one,
// else the pointer to req.ToVersion, revoking the version left.
func (c *Client) RollbackEnv(ctx context.Context, agent, env string, req RollbackEnvRequest) (*EnvRollback, error) {
	var r EnvRollback
	_, err := c.do(ctx, call{method: http.MethodPost, path: envPath(agent, env) + "/rollback", body: req}, &r)
	return ret(&r, err)
}

// Trace says how a release resolved a caller.
type Trace struct {
	ID      string      `json:"id"`
	Arm     string      `json:"arm"` // "baseline" or "candidate"
	Bucket  *int        `json:"bucket"`
	Percent json.Number `json:"percent"`
	Reason  string      `json:"reason"` // "bucket", "override" or "pinned"
}

// Prompt is a resolved prompt: the version this caller gets, why, and its
// config. ETag is the answer's validator.
type Prompt struct {
	Agent        string          `json:"agent"`
	Env          string          `json:"env"`
	Version      int             `json:"version"`
	ContentHash  string          `json:"content_hash"`
	Config       json.RawMessage `json:"config"`
	Release      *Trace          `json:"release"`
	Pinned       bool            `json:"pinned"`
	RepinnedFrom *int            `json:"repinned_from"`
	ETag         string          `json:"-"`
}

// Caller names who a prompt is resolved for; both are optional.
type Caller struct {
	UserID    string
	SessionID string
}

// Resolve fetches the prompt for a caller (GET .../prompt).
func (c *Client) Resolve(ctx context.Context, agent, env string, who Caller) (*Prompt, error) {
	p, _, err := c.Revalidate(ctx, agent, env, who, "")
	return p, err
}

// Revalidate is Resolve with If-None-Match: etag. When the answer for the
// caller did not change it returns (nil, false, nil).
func (c *Client) Revalidate(ctx context.Context, agent, env string, who Caller, etag string) (*Prompt, bool, error) {
	q := url.Values{}
	if who.UserID != "" {
		q.Set("user_id", who.UserID)
	}
	if who.SessionID != "" {
		q.Set("session_id", who.SessionID)
	}
	k := call{method: http.MethodGet, path: envPath(agent, env) + "/prompt", query: q}
	if etag != "" {
		k.header = map[string]string{"If-None-Match": etag}
	}
	var p Prompt
	resp, err := c.do(ctx, k, &p)
	if err != nil {
		return nil, false, err
	}
	if resp.StatusCode == http.StatusNotModified {
		return nil, false, nil
	}
	p.ETag = resp.Header.Get("ETag")
	return &p, true, nil
}

// AssembleRequest asks for the final messages of a runtime call.
type AssembleRequest struct {
	UserID          string            `json:"user_id,omitempty"`
	SessionID       string            `json:"session_id,omitempty"`
	Variables       map[string]string `json:"variables"`
	History         bool              `json:"history,omitempty"`
	MaxHistoryTurns int               `json:"max_history_turns,omitempty"`
	// Format is "plain" (also "") or "openai"; Assemble takes plain,
	// AssembleOpenAI sets openai.
	Format string `json:"format,omitempty"`
}

// Message is one chat message.
type Message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	ToolCalls  json.RawMessage `json:"tool_calls,omitempty"`
}

// Text is the content when it is a JSON string ("" otherwise).
func (m Message) Text() string {
	var s string
	_ = json.Unmarshal(m.Content, &s)
	return s
}

// Assembled is an assembled prompt.
type Assembled struct {
	Version      int               `json:"version"`
	ContentHash  string            `json:"content_hash"`
	Messages     []Message         `json:"messages"`
	Tools        []json.RawMessage `json:"tools"`
	Model        json.RawMessage   `json:"model"`
	Release      *Trace            `json:"release"`
	Pinned       bool              `json:"pinned"`
	RepinnedFrom *int              `json:"repinned_from,omitempty"`
}

// Assemble renders the prompt for a caller: ErrMissingVariable (with
// Variable) when a required variable is not given.
func (c *Client) Assemble(ctx context.Context, agent, env string, req AssembleRequest) (*Assembled, error) {
	if req.Variables == nil {
		req.Variables = map[string]string{}
	}
	req.Format = ""
	var a Assembled
	_, err := c.do(ctx, call{method: http.MethodPost, path: envPath(agent, env) + "/assemble", body: req}, &a)
	return ret(&a, err)
}

// OpenAIRequest is an assembled prompt in the openai format: Body is the
// OpenAI Chat Completions request body to send as it is (unmarshal it
// into the SDK's request type); Served and Release are the
// Promptd-Version ("<agent>/<env>/<version>") and Promptd-Release
// headers (Release "" when no release had a part).
type OpenAIRequest struct {
	Body    json.RawMessage
	Served  string
	Release string
}

// AssembleOpenAI renders the prompt for a caller as an OpenAI Chat
// Completions request body (format=openai): ErrMissingVariable as
// Assemble, and a 422 invalid_config when the config has no model.name.
func (c *Client) AssembleOpenAI(ctx context.Context, agent, env string, req AssembleRequest) (*OpenAIRequest, error) {
	if req.Variables == nil {
		req.Variables = map[string]string{}
	}
	req.Format = "openai"
	var body json.RawMessage
	resp, err := c.do(ctx, call{method: http.MethodPost, path: envPath(agent, env) + "/assemble", body: req}, &body)
	if err != nil {
		return nil, err
	}
	return &OpenAIRequest{Body: body, Served: resp.Header.Get("Promptd-Version"), Release: resp.Header.Get("Promptd-Release")}, nil
}
