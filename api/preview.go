package api

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/prompt"
	"github.com/promptd/promptd/promptstore"
)

// previewRequest is the body of POST /v1/agents/{agent}/preview: exactly
// one of config, version and draft_id.
type previewRequest struct {
	Config    json.RawMessage `json:"config"`
	Version   *int            `json:"version"`
	DraftID   *string         `json:"draft_id"`
	Variables json.RawMessage `json:"variables"`
	History   []previewTurn   `json:"history"`
	Format    *string         `json:"format"`
}

// previewTurn is one given turn of a preview's history.
type previewTurn struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
}

// maxPreviewTurns bounds a preview's given history.
const maxPreviewTurns = 1000

func (r *previewRequest) validate() error {
	n := 0
	if r.Config != nil && string(r.Config) != "null" {
		if !isObject(r.Config) {
			return invalidField("config", "config must be a JSON object")
		}
		n++
	}
	if r.Version != nil {
		if *r.Version < 1 {
			return invalidField("version", "version must be a version number (1 or more)")
		}
		n++
	}
	if r.DraftID != nil {
		n++
	}
	if n != 1 {
		return invalidField("config", "give exactly one of config, version and draft_id")
	}
	if r.Variables != nil && string(r.Variables) != "null" && !isObject(r.Variables) {
		return invalidField("variables", "variables must be an object")
	}
	if len(r.History) > maxPreviewTurns {
		return invalidField("history", "at most %d turns", maxPreviewTurns)
	}
	for i, t := range r.History {
		switch t.Role {
		case "user", "assistant", "system", "tool":
		default:
			return invalidField("history["+strconv.Itoa(i)+"].role", "role is user, assistant, system or tool")
		}
		if len(t.Content) == 0 {
			return invalidField("history["+strconv.Itoa(i)+"].content", "content is required")
		}
	}
	return nil
}

// handlePreview: POST /v1/agents/{agent}/preview (admin): a dry-run
// assemble of a config, a version or one of the caller's drafts, the
// answer exactly as .../envs/{env}/assemble gives it (format plain or
// openai), with no env, no release and nothing written. A wrong or
// missing variable is the 422 of assemble; an invalid config the 422 of
// a version create.
func (s *Server) handlePreview(c echo.Context) error {
	agent, err := pathID(c, "agent")
	if err != nil {
		return err
	}
	var body previewRequest
	if err := decode(c, &body); err != nil {
		return err
	}
	format, err := assembleFormat(c, body.Format)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	in := promptstore.PreviewInput{Agent: agent}
	switch {
	case body.DraftID != nil:
		d, err := s.rt.Prompts.GetDraft(ctx, agent, principalOf(c), *body.DraftID)
		if err != nil {
			return err
		}
		in.Config = d.Config
	case body.Version != nil:
		in.Version = *body.Version
	default:
		in.Config = body.Config
	}
	if isObject(body.Variables) {
		if err := json.Unmarshal(body.Variables, &in.Variables); err != nil {
			return invalidField("variables", "variables must be an object")
		}
	}
	for _, t := range body.History {
		in.History = append(in.History, prompt.Message{Role: t.Role, Content: t.Content, Name: t.Name, ToolCallID: t.ToolCallID,
			ToolCalls: t.ToolCalls})
	}
	a, err := s.rt.Prompts.Preview(ctx, in)
	if err != nil {
		return err
	}
	out, err := a.Body(format)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, out)
}
