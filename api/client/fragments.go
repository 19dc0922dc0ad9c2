package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// FragmentContent is a fragment version's content: exactly one of Text (a
// template included as {{> alias}}) or Messages (inserted by a message
// {"fragment": alias}).
type FragmentContent struct {
	Text     *string           `json:"text,omitempty"`
	Messages []FragmentMessage `json:"messages,omitempty"`
}

// FragmentMessage is one message of a messages fragment.
type FragmentMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// FragmentVersion is an immutable fragment version. Fragments holds its
// own references, pinned as a config's are.
type FragmentVersion struct {
	Name        string          `json:"name"`
	Version     int             `json:"version"`
	ContentHash string          `json:"content_hash"`
	Fragment    json.RawMessage `json:"fragment"`
	Variables   json.RawMessage `json:"variables"`
	Fragments   json.RawMessage `json:"fragments"`
	Message     string          `json:"message"`
	CreatedBy   string          `json:"created_by"`
	CreatedAt   time.Time       `json:"created_at"`
	// DryRun: the answer of a check or a proposal (nothing was written).
	DryRun bool `json:"dry_run,omitempty"`
	// Proposal: the agents whose latest version names this fragment by an
	// env (CreateFragmentVersionRequest.Propose).
	Proposal []FragmentProposal `json:"proposal,omitempty"`
}

// Content decodes the version's content.
func (v *FragmentVersion) Content() (*FragmentContent, error) {
	var fc FragmentContent
	return &fc, json.Unmarshal(v.Fragment, &fc)
}

// FragmentProposal is one agent whose next publish would take what an env
// of the fragment then points at.
type FragmentProposal struct {
	Agent   string `json:"agent"`
	Version int    `json:"version"`
	Alias   string `json:"alias"`
	Env     string `json:"env"`
}

// CreateFragmentVersionRequest publishes a fragment version. BaseVersion is
// the latest version the author started from (0 for a new fragment);
// Fragment is FragmentContent or any JSON object {text} or {messages};
// Variables and Fragments are JSON objects (nil: none).
type CreateFragmentVersionRequest struct {
	BaseVersion int    `json:"base_version"`
	Fragment    any    `json:"fragment"`
	Variables   any    `json:"variables,omitempty"`
	Fragments   any    `json:"fragments,omitempty"`
	Message     string `json:"message,omitempty"`
	// Propose: answer, writing nothing, the version a create would make
	// and the agents it would reach at their next publish.
	Propose bool `json:"propose,omitempty"`
}

func fragmentPath(name string) string { return "/v1/fragments/" + seg(name) }

// CreateFragmentVersion publishes version BaseVersion+1 of fragment name
// (admin, unscoped token, idempotent). A stale BaseVersion is
// ErrVersionConflict, whose LatestVersion names the latest; a reference
// promptd refuses ErrInvalidConfig with its Field. With Propose nothing is
// written (the answer's DryRun is true).
func (c *Client) CreateFragmentVersion(ctx context.Context, name string, req CreateFragmentVersionRequest) (*FragmentVersion, error) {
	var v FragmentVersion
	_, err := c.do(ctx, call{method: http.MethodPost, path: fragmentPath(name) + "/versions", body: req, idempotent: !req.Propose}, &v)
	return ret(&v, err)
}

// CheckFragmentVersion answers what CreateFragmentVersion with req would
// make now, writing nothing (?dry_run=true): the version with its pinned
// content and content hash, or the *Error a create would give.
func (c *Client) CheckFragmentVersion(ctx context.Context, name string, req CreateFragmentVersionRequest) (*FragmentVersion, error) {
	var v FragmentVersion
	_, err := c.do(ctx, call{method: http.MethodPost, path: fragmentPath(name) + "/versions",
		query: url.Values{"dry_run": {"true"}}, body: req}, &v)
	return ret(&v, err)
}

// Fragment summarizes a fragment: its latest version and env pointers.
type Fragment struct {
	Name              string         `json:"name"`
	LatestVersion     int            `json:"latest_version"`
	LatestContentHash string         `json:"latest_content_hash"`
	Envs              map[string]int `json:"envs"`
}

// ListFragments lists fragments by name.
func (c *Client) ListFragments(ctx context.Context, o ListOptions) (*Page[Fragment], error) {
	var p Page[Fragment]
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/fragments", query: o.query()}, &p)
	return ret(&p, err)
}

// AllFragments lists every fragment, following the pages.
func (c *Client) AllFragments(ctx context.Context) ([]Fragment, error) {
	var all []Fragment
	o := ListOptions{Limit: 500}
	for {
		p, err := c.ListFragments(ctx, o)
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

// ListFragmentVersions lists a fragment's versions, newest first.
func (c *Client) ListFragmentVersions(ctx context.Context, name string, o ListOptions) (*Page[FragmentVersion], error) {
	var p Page[FragmentVersion]
	_, err := c.do(ctx, call{method: http.MethodGet, path: fragmentPath(name) + "/versions", query: o.query()}, &p)
	return ret(&p, err)
}

// GetFragmentVersion reads one fragment version; none is ErrNotFound.
func (c *Client) GetFragmentVersion(ctx context.Context, name string, version int) (*FragmentVersion, error) {
	var v FragmentVersion
	_, err := c.do(ctx, call{method: http.MethodGet, path: fmt.Sprintf("%s/versions/%d", fragmentPath(name), version)}, &v)
	return ret(&v, err)
}

// FragmentUse is an agent version that pins a fragment version, with the
// envs whose pointers name that agent version.
type FragmentUse struct {
	Agent   string   `json:"agent"`
	Version int      `json:"version"`
	Envs    []string `json:"envs"`
}

// FragmentUsedBy lists the agent versions that pin version of fragment
// name (directly or through another fragment); the cursor is
// "<agent>/<version>".
func (c *Client) FragmentUsedBy(ctx context.Context, name string, version int, o ListOptions) (*Page[FragmentUse], error) {
	var p Page[FragmentUse]
	_, err := c.do(ctx, call{method: http.MethodGet, path: fmt.Sprintf("%s/versions/%d/used-by", fragmentPath(name), version),
		query: o.query()}, &p)
	return ret(&p, err)
}

// FragmentEnv is a fragment's env pointer.
type FragmentEnv struct {
	Name      string    `json:"name"`
	Env       string    `json:"env"`
	Version   int       `json:"version"`
	Revision  int64     `json:"revision"`
	UpdatedAt time.Time `json:"updated_at"`
	UpdatedBy string    `json:"updated_by"`
}

// PutFragmentEnvRequest moves a fragment env pointer. ExpectedRevision is
// the pointer's current revision (0 creates the pointer).
type PutFragmentEnvRequest struct {
	Version          int   `json:"version"`
	ExpectedRevision int64 `json:"expected_revision"`
}

// PutFragmentEnv moves (or creates) a fragment env pointer (admin,
// unscoped token). A stale revision is ErrRevisionConflict with
// CurrentRevision; a version that does not exist ErrInvalidField with
// Field "version".
func (c *Client) PutFragmentEnv(ctx context.Context, name, env string, req PutFragmentEnvRequest) (*FragmentEnv, error) {
	var e FragmentEnv
	_, err := c.do(ctx, call{method: http.MethodPut, path: fragmentPath(name) + "/envs/" + seg(env), body: req}, &e)
	return ret(&e, err)
}

// GetFragmentEnv reads a fragment env pointer; none is ErrNotFound.
func (c *Client) GetFragmentEnv(ctx context.Context, name, env string) (*FragmentEnv, error) {
	var e FragmentEnv
	_, err := c.do(ctx, call{method: http.MethodGet, path: fragmentPath(name) + "/envs/" + seg(env)}, &e)
	return ret(&e, err)
}
