package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// PromptConfig is a prompt config (api/openapi.yaml, Prompt versions), for callers
// that build one in Go. Configs travel as JSON (json.RawMessage) so that
// what was written is what is hashed; any value encoding/json can marshal
// is accepted where a request takes a config.
type PromptConfig struct {
	System    string              `json:"system"`
	Tools     []json.RawMessage   `json:"tools,omitempty"`
	Skills    []Skill             `json:"skills,omitempty"`
	Memory    []string            `json:"memory,omitempty"`
	Model     json.RawMessage     `json:"model,omitempty"`
	Variables map[string]Variable `json:"variables,omitempty"`
}

// Skill is one skill of a config.
type Skill struct {
	Name         string `json:"name"`
	Instructions string `json:"instructions"`
}

// Variable declares a template variable.
type Variable struct {
	Required bool    `json:"required,omitempty"`
	Default  *string `json:"default,omitempty"`
}

// Page is one page of a list; Next is the cursor of the next page ("" at
// the end).
type Page[T any] struct {
	Items []T    `json:"items"`
	Next  string `json:"next"`
}

// ListOptions pages a list: Limit (default 50, max 500) and the Cursor of
// the previous page's Next.
type ListOptions struct {
	Limit  int
	Cursor string
}

func (o ListOptions) query() url.Values {
	q := url.Values{}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	return q
}

// Version is an immutable prompt version.
type Version struct {
	Agent       string          `json:"agent"`
	Version     int             `json:"version"`
	Config      json.RawMessage `json:"config"`
	ContentHash string          `json:"content_hash"`
	Message     string          `json:"message"`
	CreatedBy   string          `json:"created_by"`
	CreatedAt   time.Time       `json:"created_at"`
	// Merge names a merged version's parents (nil for others).
	Merge *VersionMerge `json:"merge,omitempty"`
}

// VersionMerge is a merged version's parents: the version its author
// started from, and the latest it was merged over.
type VersionMerge struct {
	BaseVersion   int `json:"base_version"`
	TheirsVersion int `json:"theirs_version"`
}

// PromptConfig decodes the version's config.
func (v *Version) PromptConfig() (*PromptConfig, error) {
	var pc PromptConfig
	return &pc, json.Unmarshal(v.Config, &pc)
}

// CreateVersionRequest publishes a version. BaseVersion is the latest
// version the author started from (0 for a new agent); Config is any JSON
// object (json.RawMessage, PromptConfig, a map).
type CreateVersionRequest struct {
	BaseVersion int    `json:"base_version"`
	Config      any    `json:"config"`
	Message     string `json:"message,omitempty"`
	// Merge: a BaseVersion that is not the latest is merged (three-way)
	// over the latest instead of a version conflict; an overlap is
	// ErrMergeConflict, whose MergeConflicts list the paths.
	Merge bool `json:"merge,omitempty"`
}

// CreateVersion publishes version BaseVersion+1 of agent (admin,
// idempotent). A stale BaseVersion is ErrVersionConflict, whose
// LatestVersion names the latest.
func (c *Client) CreateVersion(ctx context.Context, agent string, req CreateVersionRequest) (*Version, error) {
	var v Version
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/v1/agents/" + seg(agent) + "/versions", body: req, idempotent: true}, &v)
	return ret(&v, err)
}

// CheckedVersion is what a version create would make (CheckVersion).
type CheckedVersion struct {
	Agent       string          `json:"agent"`
	Version     int             `json:"version"`
	Config      json.RawMessage `json:"config"`
	ContentHash string          `json:"content_hash"`
	Message     string          `json:"message"`
	// Merge: the merge a create with Merge would make (nil: none).
	Merge *VersionMerge `json:"merge,omitempty"`
}

// CheckVersion asks promptd whether CreateVersion with req would succeed
// now, writing nothing (admin; ?dry_run=true): the version it would make,
// or the *Error a create would give (ErrVersionConflict,
// ErrUndeclaredVariable, ErrInvalidConfig, ...).
func (c *Client) CheckVersion(ctx context.Context, agent string, req CreateVersionRequest) (*CheckedVersion, error) {
	var v CheckedVersion
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/v1/agents/" + seg(agent) + "/versions",
		query: url.Values{"dry_run": {"true"}}, body: req}, &v)
	return ret(&v, err)
}

// ListVersions lists agent's versions, newest first.
func (c *Client) ListVersions(ctx context.Context, agent string, o ListOptions) (*Page[Version], error) {
	var p Page[Version]
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/agents/" + seg(agent) + "/versions", query: o.query()}, &p)
	return ret(&p, err)
}

// GetVersion reads one version.
func (c *Client) GetVersion(ctx context.Context, agent string, version int) (*Version, error) {
	var v Version
	_, err := c.do(ctx, call{method: http.MethodGet, path: fmt.Sprintf("/v1/agents/%s/versions/%d", seg(agent), version)}, &v)
	return ret(&v, err)
}

// Diff is the unified diff of versions a (old) and b of agent's configs,
// as sorted-key, 2-space-indented JSON; "" when they are equal.
func (c *Client) Diff(ctx context.Context, agent string, a, b int) (string, error) {
	var raw []byte
	_, err := c.do(ctx, call{method: http.MethodGet, path: fmt.Sprintf("/v1/agents/%s/versions/%d/diff/%d", seg(agent), a, b)}, &raw)
	return string(raw), err
}

// Agent summarizes an agent.
type Agent struct {
	Agent             string         `json:"agent"`
	LatestVersion     int            `json:"latest_version"`
	LatestContentHash string         `json:"latest_content_hash"`
	Envs              map[string]int `json:"envs"`
}

// ListAgents lists agents by name.
func (c *Client) ListAgents(ctx context.Context, o ListOptions) (*Page[Agent], error) {
	var p Page[Agent]
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/agents", query: o.query()}, &p)
	return ret(&p, err)
}

// AllAgents lists every agent, following the pages.
func (c *Client) AllAgents(ctx context.Context) ([]Agent, error) {
	var all []Agent
	o := ListOptions{Limit: 500}
	for {
		p, err := c.ListAgents(ctx, o)
		if err != nil {
			return nil, err
		}
		all = append(all, p.Items...)
		if p.Next == "" {
			return all, nil
		}
		o.Cursor = p.Next
	}
}

// ImportItem is one version of a batch import.
type ImportItem struct {
	Agent       string `json:"agent"`
	BaseVersion int    `json:"base_version"`
	Config      any    `json:"config"`
	Message     string `json:"message,omitempty"`
}

// Import modes.
const (
	ImportPartial      = "partial"
	ImportAllOrNothing = "all_or_nothing"
)

// ImportResult is the answer to an import.
type ImportResult struct {
	BatchFingerprint string             `json:"batch_fingerprint"`
	Results          []ImportItemResult `json:"results"`
	Summary          ImportSummary      `json:"summary"`
}

// ImportItemResult is the outcome of one item: "created", "conflict",
// "invalid", or (in a rejected all_or_nothing batch) "not_applied" for an
// item that was fine but was not written.
type ImportItemResult struct {
	Agent         string     `json:"agent"`
	Status        string     `json:"status"`
	Version       int        `json:"version,omitempty"`
	LatestVersion int        `json:"latest_version,omitempty"`
	Error         *ItemError `json:"error,omitempty"`
}

// ItemError says why an import item is invalid.
type ItemError struct {
	Code     string `json:"code"`
	Field    string `json:"field,omitempty"`
	Variable string `json:"variable,omitempty"`
	Detail   string `json:"detail"`
}

// ImportSummary counts the outcomes.
type ImportSummary struct {
	Created  int `json:"created"`
	Conflict int `json:"conflict"`
	Invalid  int `json:"invalid"`
}

// Import publishes many versions (admin, idempotent). In mode
// ImportAllOrNothing any conflict or invalid item writes nothing: the
// error is ErrImportRejected and its ImportResult holds the outcomes.
func (c *Client) Import(ctx context.Context, mode string, items []ImportItem) (*ImportResult, error) {
	var r ImportResult
	body := struct {
		Mode  string       `json:"mode"`
		Items []ImportItem `json:"items"`
	}{mode, items}
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/v1/import", body: body, idempotent: true}, &r)
	return ret(&r, err)
}

// AuditEvent is one audit record.
type AuditEvent struct {
	ID       int64           `json:"id"`
	At       time.Time       `json:"at"`
	Actor    string          `json:"actor"`
	Instance string          `json:"instance"`
	Action   string          `json:"action"`
	Resource string          `json:"resource"`
	Details  json.RawMessage `json:"details"`
}

// AuditQuery filters the audit log; Since is the id of the last event
// already seen (the previous page's Next).
type AuditQuery struct {
	Agent, Env, SessionID, Action string
	Actor                         string // exact: a token's name, or "system"
	Since                         int64
	Limit                         int
	NewestFirst                   bool // order=desc: newest first, before Since
}

// Audit reads the audit log (admin), oldest first after q.Since (newest
// first before it with q.NewestFirst).
func (c *Client) Audit(ctx context.Context, q AuditQuery) (*Page[AuditEvent], error) {
	v := url.Values{}
	for k, s := range map[string]string{"agent": q.Agent, "env": q.Env, "session_id": q.SessionID, "action": q.Action, "actor": q.Actor} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.Since > 0 {
		v.Set("since", strconv.FormatInt(q.Since, 10))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.NewestFirst {
		v.Set("order", "desc")
	}
	var p Page[AuditEvent]
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/audit", query: v}, &p)
	return ret(&p, err)
}

// ret returns v, or nil with err.
func ret[T any](v *T, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	return v, nil
}
