package api

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/promptstore"
)

// createVersionRequest is the body of POST /v1/agents/{agent}/versions.
type createVersionRequest struct {
	BaseVersion *int            `json:"base_version"`
	Config      json.RawMessage `json:"config"`
	Message     string          `json:"message"`
	Merge       *bool           `json:"merge"`
}

func (r *createVersionRequest) validate() error {
	if r.BaseVersion == nil {
		return invalidField("base_version", "base_version is required: the latest version you started from, 0 for a new agent")
	}
	if !isObject(r.Config) {
		return invalidField("config", "config is required and must be a JSON object")
	}
	return nil
}

// versionResponse is a prompt version.
type versionResponse struct {
	Agent       string          `json:"agent"`
	Version     int             `json:"version"`
	Config      json.RawMessage `json:"config"`
	ContentHash string          `json:"content_hash"`
	Message     string          `json:"message"`
	CreatedBy   string          `json:"created_by"`
	CreatedAt   timestamp       `json:"created_at"`
	// Merge: a merged version's parents (its author's base, and the
	// version it was merged over).
	Merge *promptstore.VersionMerge `json:"merge,omitempty"`
}

func versionBody(v *promptstore.Version) versionResponse {
	return versionResponse{Agent: v.Agent, Version: v.Version, Config: v.Config, ContentHash: v.ContentHash,
		Message: v.Message, CreatedBy: v.CreatedBy, CreatedAt: timestamp(v.CreatedAt), Merge: v.Merge}
}

func versionEntity(v *promptstore.Version) any { return versionBody(v) }

// immutable is the Cache-Control of what never changes: versions and
// their diffs.
const immutable = "public, max-age=31536000, immutable"

// handleCreateVersion: POST /v1/agents/{agent}/versions (admin,
// Idempotency-Key). 201 with the version. With ?dry_run=true it writes
// nothing: 200 with the version a create would make now, or the 4xx a
// create would answer (the same checks, promptstore.CheckVersion).
func (s *Server) handleCreateVersion(c echo.Context) error {
	agent, err := pathID(c, "agent")
	if err != nil {
		return err
	}
	dryRun, err := dryRunOf(c)
	if err != nil {
		return err
	}
	var req createVersionRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	in := promptstore.CreateVersionInput{Agent: agent, BaseVersion: *req.BaseVersion, Config: req.Config, Message: req.Message,
		Merge: req.Merge != nil && *req.Merge}
	if dryRun {
		v, err := s.rt.Prompts.CheckVersion(c.Request().Context(), in)
		if err != nil {
			return err
		}
		return s.send(c, http.StatusOK, dryRunVersion{Agent: v.Agent, Version: v.Version, Config: v.Config,
			ContentHash: v.ContentHash, Message: v.Message, DryRun: true, Merge: v.Merge})
	}
	v, err := s.rt.Prompts.CreateVersion(c.Request().Context(), in, recordAnswer(s, c, http.StatusCreated, versionEntity))
	if err != nil {
		return err
	}
	return s.send(c, http.StatusCreated, versionBody(v))
}

// dryRunVersion is the answer of a dry-run create: the version it would
// make.
type dryRunVersion struct {
	Agent       string                    `json:"agent"`
	Version     int                       `json:"version"`
	Config      json.RawMessage           `json:"config"`
	ContentHash string                    `json:"content_hash"`
	Message     string                    `json:"message"`
	DryRun      bool                      `json:"dry_run"`
	Merge       *promptstore.VersionMerge `json:"merge,omitempty"`
}

// dryRunOf reads ?dry_run=: true or false (the default).
func dryRunOf(c echo.Context) (bool, error) {
	switch v := c.QueryParam("dry_run"); {
	case v == "true":
		return true, nil
	case v == "false", v == "" && !c.QueryParams().Has("dry_run"):
		return false, nil
	}
	return false, invalidField("dry_run", "dry_run is true (check, write nothing) or false")
}

// handleListVersions: GET /v1/agents/{agent}/versions, newest first.
func (s *Server) handleListVersions(c echo.Context) error {
	agent, err := pathID(c, "agent")
	if err != nil {
		return err
	}
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	vs, next, err := s.rt.Prompts.ListVersions(c.Request().Context(), agent, page)
	if err != nil {
		return err
	}
	out := list[versionResponse]{Items: make([]versionResponse, len(vs)), Next: cursor(next)}
	for i, v := range vs {
		out.Items[i] = versionBody(v)
	}
	return s.send(c, http.StatusOK, out)
}

// handleGetVersion: GET /v1/agents/{agent}/versions/{version}. A version
// never changes: ETag is its content hash, cacheable for a year;
// If-None-Match gives 304.
func (s *Server) handleGetVersion(c echo.Context) error {
	agent, err := pathID(c, "agent")
	if err != nil {
		return err
	}
	n, err := pathVersion(c, "version")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	v, err := s.rt.Prompts.GetVersion(ctx, agent, n)
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
	return s.send(c, http.StatusOK, versionBody(v))
}

// handleDiff: GET /v1/agents/{agent}/versions/{a}/diff/{b}, a unified
// diff (text/x-diff) of the configs as sorted-key, 2-space-indented JSON;
// a is the old side. Empty when the configs are equal. Cached (versions
// are immutable). Over PROMPTD_DIFF_MAX_BYTES of pretty-printed configs
// together, or PROMPTD_DIFF_MAX_LINES lines: 422 limit_exceeded, field
// "diff_bytes" or "diff_lines".
func (s *Server) handleDiff(c echo.Context) error {
	agent, err := pathID(c, "agent")
	if err != nil {
		return err
	}
	a, err := pathVersion(c, "a")
	if err != nil {
		return err
	}
	b, err := pathVersion(c, "b")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	diff, err := s.rt.Prompts.Diff(ctx, agent, a, b)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderCacheControl, immutable)
	return c.Blob(http.StatusOK, "text/x-diff; charset=utf-8", []byte(diff))
}
