package api

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/promptstore"
)

// importRequest is the body of POST /v1/import.
type importRequest struct {
	Mode  string            `json:"mode"`
	Items []json.RawMessage `json:"items"`

	items []promptstore.ImportItem
}

// importItem is one item of an import, checked like a version create's
// body: base_version is required and config must be an object. What is
// inside the config is checked per item (status "invalid").
type importItem struct {
	Agent       string          `json:"agent"`
	BaseVersion *int            `json:"base_version"`
	Config      json.RawMessage `json:"config"`
	Message     string          `json:"message"`
}

func (r *importRequest) validate() error {
	if r.Mode == "" {
		return invalidField("mode", `mode is required: "partial" or "all_or_nothing"`)
	}
	if r.Items == nil {
		return invalidField("items", "items is required")
	}
	if len(r.Items) > promptstore.MaxImportItems {
		return invalidField("items", "at most %d items", promptstore.MaxImportItems)
	}
	r.items = make([]promptstore.ImportItem, len(r.Items))
	for i, raw := range r.Items {
		prefix := fmt.Sprintf("items[%d].", i)
		var it importItem
		if err := decodeObject(raw, prefix, &it); err != nil {
			return err
		}
		if it.BaseVersion == nil {
			return invalidField(prefix+"base_version", "base_version is required")
		}
		if !isObject(it.Config) {
			return invalidField(prefix+"config", "config is required and must be a JSON object")
		}
		r.items[i] = promptstore.ImportItem{Agent: it.Agent, BaseVersion: *it.BaseVersion, Config: it.Config, Message: it.Message}
	}
	return nil
}

func importEntity(r *promptstore.ImportResult) any { return r }

// handleImport: POST /v1/import (admin, Idempotency-Key, its own body
// limit). 200 with the per-item results; an all_or_nothing batch with a
// conflict or an invalid item writes nothing: 409 import_rejected with the
// same results and summary.
func (s *Server) handleImport(c echo.Context) error {
	var req importRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	ctx := onCommit(s, c, http.StatusOK, importEntity)
	res, err := s.cfg.Prompts.Import(ctx, promptstore.ImportInput{Mode: req.Mode, Items: req.items})
	if err != nil {
		return err
	}
	return s.send(c, http.StatusOK, res)
}
