package hostile

import (
	"net/http"
	"testing"
)

// The harness itself: what it reports as refused is refused, and what a
// token may do goes through, so a case that passes is not passing because
// nothing reached the server.
func TestHarness_refusesAndAllowsAsTheRolesSay(t *testing.T) {
	eachStore(t, nil, func(t *testing.T, s *Server) {
		Refused(t, s.Do(t, "GET", "/v1/agents", "", nil), http.StatusUnauthorized, "unauthorized")
		Refused(t, s.Do(t, "POST", "/v1/agents/a1/versions", RuntimeToken,
			map[string]any{"base_version": 0, "config": map[string]any{"system": "x"}}), http.StatusForbidden, "forbidden")
		s.Publish(t, "a1", 0, "hello")
		if r := s.Point(t, "a1", "prod", 1, 0); r.Status != http.StatusCreated {
			t.Fatalf("pointer create: %d %s", r.Status, r.Body)
		}
		r := s.Must(t, http.StatusOK, "GET", "/v1/agents/a1/envs/prod/prompt?user_id=u1", RuntimeToken, nil)
		if r.JSON["version"] != float64(1) {
			t.Fatalf("resolve: %s", r.Body)
		}
	})
}
