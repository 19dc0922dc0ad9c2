package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/promptstore"
)

// Fragments (docs/fragments.md): shared, versioned pieces of prompts. A
// fragment is not an agent, so no agent scope covers it: every fragment
// route needs an unscoped token (a scoped one is 403 forbidden); reads
// take any role, writes the admin role.

// createFragmentRequest is the body of POST /v1/fragments/{name}/versions.
type createFragmentRequest struct {
	BaseVersion *int             `json:"base_version"`
	Fragment    *fragmentContent `json:"fragment"`
	Variables   json.RawMessage  `json:"variables"`
	Fragments   json.RawMessage  `json:"fragments"`
	Message     string           `json:"message"`
	Propose     *bool            `json:"propose"`
}

// fragmentContent is the fragment's content: text or messages.
type fragmentContent struct {
	Text     *string            `json:"text"`
	Messages *[]fragmentMessage `json:"messages"`
}

// fragmentMessage is one message of a messages fragment.
type fragmentMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

func (r *createFragmentRequest) validate() error {
	if r.BaseVersion == nil {
		return invalidField("base_version", "base_version is required: the latest version you started from, 0 for a new fragment")
	}
	if r.Fragment == nil || (r.Fragment.Text == nil) == (r.Fragment.Messages == nil) {
		return invalidField("fragment", "fragment is required: {\"text\": ...} or {\"messages\": [...]}")
	}
	return nil
}

// body is the fragment's content as promptstore takes it.
func (r *createFragmentRequest) body() json.RawMessage {
	m := map[string]json.RawMessage{}
	if r.Fragment.Text != nil {
		m["text"], _ = json.Marshal(*r.Fragment.Text)
	} else {
		m["messages"], _ = json.Marshal(*r.Fragment.Messages)
	}
	if r.Variables != nil {
		m["variables"] = r.Variables
	}
	if r.Fragments != nil {
		m["fragments"] = r.Fragments
	}
	b, _ := json.Marshal(m)
	return b
}

// fragmentVersionResponse is a fragment version.
type fragmentVersionResponse struct {
	Name        string          `json:"name"`
	Version     int             `json:"version"`
	ContentHash string          `json:"content_hash"`
	Fragment    json.RawMessage `json:"fragment"`
	Variables   json.RawMessage `json:"variables"`
	Fragments   json.RawMessage `json:"fragments"`
	Message     string          `json:"message"`
	CreatedBy   string          `json:"created_by"`
	CreatedAt   *timestamp      `json:"created_at,omitempty"`
	DryRun      bool            `json:"dry_run,omitempty"`
	// Proposal: with propose, the agents whose next version would pick
	// this version up (their config names the fragment by an env).
	Proposal []proposalItem `json:"proposal,omitempty"`
}

type proposalItem struct {
	Agent   string `json:"agent"`
	Version int    `json:"version"`
	Alias   string `json:"alias"`
	Env     string `json:"env"`
}

func fragmentBody(v *promptstore.FragmentVersion) fragmentVersionResponse {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(v.Body, &m)
	out := fragmentVersionResponse{Name: v.Name, Version: v.Version, ContentHash: v.ContentHash, Message: v.Message, CreatedBy: v.CreatedBy,
		Variables: json.RawMessage(`{}`), Fragments: json.RawMessage(`{}`)}
	content := map[string]json.RawMessage{}
	for _, k := range []string{"text", "messages"} {
		if m[k] != nil {
			content[k] = m[k]
		}
	}
	out.Fragment, _ = json.Marshal(content)
	if m["variables"] != nil {
		out.Variables = m["variables"]
	}
	if m["fragments"] != nil {
		out.Fragments = m["fragments"]
	}
	if !v.CreatedAt.IsZero() {
		ts := timestamp(v.CreatedAt)
		out.CreatedAt = &ts
	}
	return out
}

func fragmentEntity(v *promptstore.FragmentVersion) any { return fragmentBody(v) }

// handleCreateFragmentVersion: POST /v1/fragments/{name}/versions (admin,
// Idempotency-Key). 201 with the version; 409 version_conflict on a stale
// base; 422 invalid_config naming the field for bad content or a
// reference that is missing, cyclic or too deep. ?dry_run=true checks
// and writes nothing (200); with "propose": true the answer (200, nothing
// written) also lists the agents whose next version would pick the new
// version up.
func (s *Server) handleCreateFragmentVersion(c echo.Context) error {
	name, err := pathIDAs(c, "name", "name")
	if err != nil {
		return err
	}
	dryRun, err := dryRunOf(c)
	if err != nil {
		return err
	}
	var req createFragmentRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	in := promptstore.CreateFragmentInput{Name: name, BaseVersion: *req.BaseVersion, Body: req.body(), Message: req.Message}
	ctx := c.Request().Context()
	if dryRun || req.Propose != nil && *req.Propose {
		v, err := s.rt.Prompts.CheckFragmentVersion(ctx, in)
		if err != nil {
			return err
		}
		out := fragmentBody(v)
		out.DryRun = true
		if req.Propose != nil && *req.Propose {
			ps, err := s.rt.Prompts.ProposeFragment(ctx, name)
			if err != nil {
				return err
			}
			out.Proposal = make([]proposalItem, len(ps))
			for i, p := range ps {
				out.Proposal[i] = proposalItem{Agent: p.Agent, Version: p.Version, Alias: p.Alias, Env: p.Env}
			}
		}
		return s.send(c, http.StatusOK, out)
	}
	v, err := s.rt.Prompts.CreateFragmentVersion(ctx, in, recordAnswer(s, c, http.StatusCreated, fragmentEntity))
	if err != nil {
		return err
	}
	return s.send(c, http.StatusCreated, fragmentBody(v))
}

// handleListFragments: GET /v1/fragments, by name, cursor-paged.
func (s *Server) handleListFragments(c echo.Context) error {
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	fs, next, err := s.rt.Prompts.ListFragments(c.Request().Context(), page)
	if err != nil {
		return err
	}
	out := list[*promptstore.FragmentSummary]{Items: fs, Next: cursor(next)}
	if out.Items == nil {
		out.Items = []*promptstore.FragmentSummary{}
	}
	return s.send(c, http.StatusOK, out)
}

// handleListFragmentVersions: GET /v1/fragments/{name}/versions, newest
// first, cursor-paged.
func (s *Server) handleListFragmentVersions(c echo.Context) error {
	name, err := pathIDAs(c, "name", "name")
	if err != nil {
		return err
	}
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	vs, next, err := s.rt.Prompts.ListFragmentVersions(c.Request().Context(), name, page)
	if err != nil {
		return err
	}
	out := list[fragmentVersionResponse]{Items: make([]fragmentVersionResponse, len(vs)), Next: cursor(next)}
	for i, v := range vs {
		out.Items[i] = fragmentBody(v)
	}
	return s.send(c, http.StatusOK, out)
}

// fragmentVersionPath reads the name and version path parameters.
func fragmentVersionPath(c echo.Context) (string, int, error) {
	name, err := pathIDAs(c, "name", "name")
	if err != nil {
		return "", 0, err
	}
	n, err := pathVersion(c, "version")
	return name, n, err
}

// handleGetFragmentVersion: GET /v1/fragments/{name}/versions/{version};
// immutable, ETag its content hash.
func (s *Server) handleGetFragmentVersion(c echo.Context) error {
	name, n, err := fragmentVersionPath(c)
	if err != nil {
		return err
	}
	v, err := s.rt.Prompts.GetFragmentVersion(c.Request().Context(), name, n)
	if err != nil {
		return err
	}
	etag := `"` + v.ContentHash + `"`
	h := c.Response().Header()
	h.Set(echo.HeaderCacheControl, immutable)
	h.Set("ETag", etag)
	if etagMatches(c.Request().Header.Get("If-None-Match"), etag) {
		return notModified(c)
	}
	return s.send(c, http.StatusOK, fragmentBody(v))
}

// handleFragmentUsedBy: GET /v1/fragments/{name}/versions/{version}/used-by:
// the agent versions that pin it, by agent and version, with the envs
// that point at each; cursor-paged.
func (s *Server) handleFragmentUsedBy(c echo.Context) error {
	name, n, err := fragmentVersionPath(c)
	if err != nil {
		return err
	}
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	us, next, err := s.rt.Prompts.UsedBy(c.Request().Context(), name, n, page)
	if err != nil {
		return err
	}
	out := list[*promptstore.FragmentUse]{Items: us, Next: cursor(next)}
	if out.Items == nil {
		out.Items = []*promptstore.FragmentUse{}
	}
	return s.send(c, http.StatusOK, out)
}

// putFragmentEnvRequest is the body of PUT /v1/fragments/{name}/envs/{env}.
type putFragmentEnvRequest struct {
	Version          *int   `json:"version"`
	ExpectedRevision *int64 `json:"expected_revision"`
}

func (r *putFragmentEnvRequest) validate() error {
	if r.Version == nil {
		return invalidField("version", "version is required")
	}
	if r.ExpectedRevision == nil {
		return invalidField("expected_revision", "expected_revision is required: 0 creates the pointer, else its current revision")
	}
	return nil
}

type fragmentEnvResponse struct {
	Name      string    `json:"name"`
	Env       string    `json:"env"`
	Version   int       `json:"version"`
	Revision  int64     `json:"revision"`
	UpdatedAt timestamp `json:"updated_at"`
	UpdatedBy string    `json:"updated_by"`
}

func fragmentEnvBody(e *promptstore.FragmentEnv) fragmentEnvResponse {
	return fragmentEnvResponse{Name: e.Name, Env: e.Env, Version: e.Version, Revision: e.Revision, UpdatedAt: timestamp(e.UpdatedAt),
		UpdatedBy: e.UpdatedBy}
}

func fragmentEnvPath(c echo.Context) (string, string, error) {
	name, err := pathIDAs(c, "name", "name")
	if err != nil {
		return "", "", err
	}
	env, err := pathID(c, "env")
	return name, env, err
}

// handlePutFragmentEnv: PUT /v1/fragments/{name}/envs/{env} (admin): 201
// when created (expected_revision 0), 200 when moved; 409
// revision_conflict on a stale revision. Published agent versions keep
// what they pinned.
func (s *Server) handlePutFragmentEnv(c echo.Context) error {
	name, env, err := fragmentEnvPath(c)
	if err != nil {
		return err
	}
	var req putFragmentEnvRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	e, err := s.rt.Prompts.SetFragmentEnv(c.Request().Context(), promptstore.SetFragmentEnvInput{Name: name, Env: env, Version: *req.Version,
		ExpectedRevision: *req.ExpectedRevision})
	if err != nil {
		if errors.Is(err, promptstore.ErrFragmentNotFound) {
			return invalidField("version", "fragment %s has no version %d", name, *req.Version)
		}
		return err
	}
	status := http.StatusOK
	if *req.ExpectedRevision == 0 {
		status = http.StatusCreated
	}
	c.Response().Header().Set("ETag", `"`+strconv.FormatInt(e.Revision, 10)+`"`)
	return s.send(c, status, fragmentEnvBody(e))
}

// handleGetFragmentEnv: GET /v1/fragments/{name}/envs/{env}.
func (s *Server) handleGetFragmentEnv(c echo.Context) error {
	name, env, err := fragmentEnvPath(c)
	if err != nil {
		return err
	}
	e, err := s.rt.Prompts.GetFragmentEnv(c.Request().Context(), name, env)
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set("ETag", `"`+strconv.FormatInt(e.Revision, 10)+`"`)
	h.Set(echo.HeaderCacheControl, "no-cache")
	return s.send(c, http.StatusOK, fragmentEnvBody(e))
}
