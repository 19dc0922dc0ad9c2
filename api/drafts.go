package api

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/promptstore"
)

// Drafts (docs/authoring.md): a principal's work in progress on an
// agent's config. A draft is not a version: never in a bundle, never
// resolvable; only the principal that created it sees it (another one
// gets 404 not_found). Every route is admin-only and scoped to the agent.

// createDraftRequest is the body of POST /v1/agents/{agent}/drafts.
type createDraftRequest struct {
	BaseVersion *int            `json:"base_version"`
	Config      json.RawMessage `json:"config"`
}

func (r *createDraftRequest) validate() error {
	if r.BaseVersion == nil {
		return invalidField("base_version", "base_version is required: the version the draft starts from")
	}
	if r.Config != nil && string(r.Config) != "null" && !isObject(r.Config) {
		return invalidField("config", "config must be a JSON object")
	}
	return nil
}

// updateDraftRequest is the body of PUT /v1/agents/{agent}/drafts/{id}:
// an autosave.
type updateDraftRequest struct {
	Config           json.RawMessage `json:"config"`
	ExpectedRevision *int64          `json:"expected_revision"`
}

func (r *updateDraftRequest) validate() error {
	if !isObject(r.Config) {
		return invalidField("config", "config is required and must be a JSON object")
	}
	if r.ExpectedRevision == nil {
		return invalidField("expected_revision", "expected_revision is required: the revision the editor last read")
	}
	return nil
}

// publishDraftRequest is the body of POST .../drafts/{id}/publish.
type publishDraftRequest struct {
	Message string `json:"message"`
	Merge   *bool  `json:"merge"`
}

// draftResponse is a draft; Problems is set on a PUT's answer (the
// config's validation, as .../validate answers it).
type draftResponse struct {
	ID          string                     `json:"id"`
	Agent       string                     `json:"agent"`
	BaseVersion int                        `json:"base_version"`
	Config      json.RawMessage            `json:"config"`
	Revision    int64                      `json:"revision"`
	CreatedAt   timestamp                  `json:"created_at"`
	UpdatedAt   timestamp                  `json:"updated_at"`
	Problems    []promptstore.DraftProblem `json:"problems,omitempty"`
}

func draftBody(d *promptstore.Draft) draftResponse {
	return draftResponse{ID: d.ID, Agent: d.Agent, BaseVersion: d.BaseVersion, Config: d.Config, Revision: d.Revision,
		CreatedAt: timestamp(d.CreatedAt), UpdatedAt: timestamp(d.UpdatedAt)}
}

// validationResponse is the answer of .../validate: every problem a
// version create would find (empty: valid).
type validationResponse struct {
	Valid    bool                       `json:"valid"`
	Problems []promptstore.DraftProblem `json:"problems"`
}

// principalOf is the request's principal: who owns the drafts it writes.
func principalOf(c echo.Context) string {
	if t := tokenOf(c); t != nil && t.Principal != "" {
		return t.Principal
	}
	return actorOf(c)
}

// draftPath reads {agent} and {id}.
func draftPath(c echo.Context) (agent, id string, err error) {
	if agent, err = pathID(c, "agent"); err != nil {
		return "", "", err
	}
	id, err = param(c, "id")
	return agent, id, err
}

// handleCreateDraft: POST /v1/agents/{agent}/drafts: 201 with the draft,
// its config the base version's unless given.
func (s *Server) handleCreateDraft(c echo.Context) error {
	agent, err := pathID(c, "agent")
	if err != nil {
		return err
	}
	var req createDraftRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	d, err := s.rt.Prompts.CreateDraft(c.Request().Context(), agent, principalOf(c), *req.BaseVersion, req.Config)
	if err != nil {
		return err
	}
	return s.send(c, http.StatusCreated, draftBody(d))
}

// handleListDrafts: GET /v1/agents/{agent}/drafts: the caller's drafts,
// oldest first, cursor-paged.
func (s *Server) handleListDrafts(c echo.Context) error {
	agent, err := pathID(c, "agent")
	if err != nil {
		return err
	}
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	ds, next, err := s.rt.Prompts.ListDrafts(c.Request().Context(), agent, principalOf(c), page)
	if err != nil {
		return err
	}
	out := list[draftResponse]{Items: make([]draftResponse, len(ds)), Next: cursor(next)}
	for i, d := range ds {
		out.Items[i] = draftBody(d)
	}
	return s.send(c, http.StatusOK, out)
}

// handleGetDraft: GET /v1/agents/{agent}/drafts/{id}.
func (s *Server) handleGetDraft(c echo.Context) error {
	agent, id, err := draftPath(c)
	if err != nil {
		return err
	}
	d, err := s.rt.Prompts.GetDraft(c.Request().Context(), agent, principalOf(c), id)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return s.send(c, http.StatusOK, draftBody(d))
}

// handlePutDraft: PUT /v1/agents/{agent}/drafts/{id}: an autosave, 200
// with the draft and its config's problems; another revision than
// expected_revision is 409 revision_conflict (two tabs raced).
func (s *Server) handlePutDraft(c echo.Context) error {
	agent, id, err := draftPath(c)
	if err != nil {
		return err
	}
	var req updateDraftRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	ctx := c.Request().Context()
	d, err := s.rt.Prompts.UpdateDraft(ctx, agent, principalOf(c), id, req.Config, *req.ExpectedRevision)
	if err != nil {
		return err
	}
	problems, err := s.rt.Prompts.ValidateConfig(ctx, agent, d.Config)
	if err != nil {
		return err
	}
	out := draftBody(d)
	out.Problems = problems
	return s.send(c, http.StatusOK, out)
}

// handleDeleteDraft: DELETE /v1/agents/{agent}/drafts/{id}: 204.
func (s *Server) handleDeleteDraft(c echo.Context) error {
	agent, id, err := draftPath(c)
	if err != nil {
		return err
	}
	if err := s.rt.Prompts.DeleteDraft(c.Request().Context(), agent, principalOf(c), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// handleValidateDraft: POST /v1/agents/{agent}/drafts/{id}/validate:
// every problem of the draft's config (code, field, detail), as a version
// create would find them (prompt.ParseConfig, fragments pinned).
func (s *Server) handleValidateDraft(c echo.Context) error {
	agent, id, err := draftPath(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	d, err := s.rt.Prompts.GetDraft(ctx, agent, principalOf(c), id)
	if err != nil {
		return err
	}
	problems, err := s.rt.Prompts.ValidateConfig(ctx, agent, d.Config)
	if err != nil {
		return err
	}
	return s.send(c, http.StatusOK, validationResponse{Valid: len(problems) == 0, Problems: problems})
}

// handlePublishDraft: POST /v1/agents/{agent}/drafts/{id}/publish: 201
// with the version created from the draft (base_version the draft's: a
// stale base is 409 version_conflict, or with merge the three-way merge
// of POST .../versions), the draft deleted.
func (s *Server) handlePublishDraft(c echo.Context) error {
	agent, id, err := draftPath(c)
	if err != nil {
		return err
	}
	var req publishDraftRequest
	if err := decodeOptional(c, &req); err != nil {
		return err
	}
	v, err := s.rt.Prompts.PublishDraft(c.Request().Context(), agent, principalOf(c), id, req.Message, req.Merge != nil && *req.Merge)
	if err != nil {
		return err
	}
	return s.send(c, http.StatusCreated, versionBody(v))
}

// handleDraftDiff: GET /v1/agents/{agent}/drafts/{id}/diff: the unified
// diff (text/x-diff) of the draft's config against its base version, as
// .../versions/{a}/diff/{b} renders two versions; not cached.
func (s *Server) handleDraftDiff(c echo.Context) error {
	agent, id, err := draftPath(c)
	if err != nil {
		return err
	}
	diff, err := s.rt.Prompts.DraftDiff(c.Request().Context(), agent, principalOf(c), id)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.Blob(http.StatusOK, "text/x-diff; charset=utf-8", []byte(diff))
}
