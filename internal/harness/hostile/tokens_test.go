package hostile

import (
	"net/http"
	"testing"
)

// A typo inside scopes (an unknown member, or the right one in another
// case, the last one winning) used to be dropped by the decoder, leaving
// scopes null: a token of full access minted by an admin who meant to
// scope it. Now 400 invalid_field naming the member, and no token.
func TestHostile_tokens_scopeTypoMintsNoFullAccessToken(t *testing.T) {
	eachStore(t, nil, func(t *testing.T, s *Server) {
		for _, c := range []struct {
			body  string
			field string
		}{
			{`{"name": "typo-a", "role": "runtime", "scopes": {"agent": ["team-a-*"]}}`, "scopes.agent"},
			{`{"name": "typo-b", "role": "runtime", "scopes": {"agents": ["team-a-*"], "AGENTS": null}}`, "scopes.AGENTS"},
		} {
			r := s.Do(t, "POST", "/v1/tokens", AdminToken, c.body)
			Refused(t, r, http.StatusBadRequest, "invalid_field")
			if r.JSON["field"] != c.field {
				t.Fatalf("field = %v, want %s", r.JSON["field"], c.field)
			}
		}
		list := s.Must(t, http.StatusOK, "GET", "/v1/tokens", AdminToken, nil)
		if items, _ := list.JSON["items"].([]any); len(items) != 0 {
			t.Fatalf("a refused create left tokens: %s", list.Body)
		}
	})
}

// A managed admin token's children used to stay live after it was
// revoked. Now a token is refused as soon as its creator is.
func TestHostile_tokens_childOfRevokedTokenIsRefused(t *testing.T) {
	eachStore(t, nil, func(t *testing.T, s *Server) {
		parent := s.Must(t, http.StatusCreated, "POST", "/v1/tokens", AdminToken,
			map[string]any{"name": "parent", "role": "admin"}).JSON["secret"].(string)
		child := s.Must(t, http.StatusCreated, "POST", "/v1/tokens", parent,
			map[string]any{"name": "child", "role": "admin"}).JSON["secret"].(string)
		s.Must(t, http.StatusOK, "GET", "/v1/tokens", child, nil)
		s.Must(t, http.StatusNoContent, "DELETE", "/v1/tokens/parent", AdminToken, nil)
		Refused(t, s.Do(t, "GET", "/v1/tokens", child, nil), http.StatusUnauthorized, "unauthorized")
		// Nor can the child's own children outlive it.
		Refused(t, s.Do(t, "POST", "/v1/tokens", child, map[string]any{"name": "grandchild", "role": "runtime"}),
			http.StatusUnauthorized, "unauthorized")
	})
}
