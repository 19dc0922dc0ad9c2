package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/promptstore"
)

// importRequest is the body of POST /v1/import.
type importRequest struct {
	Mode  string
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

// decodeImport reads an import body item by item: the count is checked as
// the items stream past, so a body with too many items is refused at the
// first one over the limit, before the rest is decoded, and each item is
// decoded and checked on its own (its errors name "items[i].field").
// readBody has checked the whole body's syntax, depth and UTF-8 first.
func decodeImport(c echo.Context) (*importRequest, error) {
	body, err := readBody(c)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, Errorf(CodeInvalidJSON, "the request body is empty; a JSON object is required")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, _ := dec.Token(); tok != json.Delim('{') {
		return nil, Errorf(CodeInvalidJSON, "the request body is not a JSON object")
	}
	req := &importRequest{}
	var sawMode, sawItems bool
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, Errorf(CodeInvalidJSON, "the request body does not decode: %v", err)
		}
		switch key := kt.(string); key {
		case "mode":
			sawMode = true
			if err := dec.Decode(&req.Mode); err != nil {
				return nil, invalidField("mode", `mode must be "partial" or "all_or_nothing"`)
			}
		case "items":
			sawItems = true
			if req.items, err = decodeImportItems(dec); err != nil {
				return nil, err
			}
		default:
			return nil, invalidField(key, "unknown field %q", key)
		}
	}
	switch {
	case !sawMode || req.Mode == "":
		return nil, invalidField("mode", `mode is required: "partial" or "all_or_nothing"`)
	case !sawItems || req.items == nil:
		return nil, invalidField("items", "items is required")
	}
	return req, nil
}

// decodeImportItems decodes the items array, one element at a time.
func decodeImportItems(dec *json.Decoder) ([]promptstore.ImportItem, error) {
	tok, err := dec.Token()
	if tok == nil && err == nil {
		return nil, nil // "items": null
	}
	if err != nil || tok != json.Delim('[') {
		return nil, invalidField("items", "items must be an array of at most %d items", promptstore.MaxImportItems)
	}
	items := []promptstore.ImportItem{}
	for i := 0; dec.More(); i++ {
		if i == promptstore.MaxImportItems {
			return nil, invalidField("items", "at most %d items", promptstore.MaxImportItems)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, Errorf(CodeInvalidJSON, "the request body does not decode: %v", err)
		}
		prefix := fmt.Sprintf("items[%d].", i)
		var it importItem
		if err := decodeObject(raw, prefix, &it); err != nil {
			return nil, err
		}
		if it.BaseVersion == nil {
			return nil, invalidField(prefix+"base_version", "base_version is required")
		}
		if !isObject(it.Config) {
			return nil, invalidField(prefix+"config", "config is required and must be a JSON object")
		}
		items = append(items, promptstore.ImportItem{Agent: it.Agent, BaseVersion: *it.BaseVersion, Config: it.Config, Message: it.Message})
	}
	if _, err := dec.Token(); err != nil { // ']'
		return nil, Errorf(CodeInvalidJSON, "the request body does not decode: %v", err)
	}
	return items, nil
}

func importEntity(r *promptstore.ImportResult) any { return r }

// handleImport: POST /v1/import (admin, Idempotency-Key, its own body
// limit). 200 with the per-item results; an all_or_nothing batch with a
// conflict or an invalid item writes nothing: 409 import_rejected with the
// same results and summary.
func (s *Server) handleImport(c echo.Context) error {
	req, err := decodeImport(c)
	if err != nil {
		return err
	}
	for _, it := range req.items { // an import needs every item in scope
		if err := s.allow(c, it.Agent, "", ""); err != nil {
			return err
		}
	}
	res, err := s.rt.Prompts.Import(c.Request().Context(), promptstore.ImportInput{Mode: req.Mode, Items: req.items},
		recordAnswer(s, c, http.StatusOK, importEntity))
	if err != nil {
		return err
	}
	return s.send(c, http.StatusOK, res)
}
