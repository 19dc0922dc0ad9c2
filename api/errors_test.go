package api_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/api"
	"github.com/promptd/promptd/api/idempotency"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/session"
	"github.com/promptd/promptd/sqlstore"
)

func TestDomainErrors_mapToTheirCodes(t *testing.T) {
	s, _, logs := newServer(t, api.Config{})
	rejected := &promptstore.ImportRejected{Result: &promptstore.ImportResult{BatchFingerprint: "sha256:x",
		Results: []promptstore.ImportItemResult{{Agent: "a", Status: "conflict"}}, Summary: promptstore.ImportSummary{Conflict: 1}}}
	for i, tc := range []struct {
		err    error
		status int
		code   string
		fields map[string]any
	}{
		{&promptstore.VersionConflict{Agent: "a", Base: 1, Latest: 3}, 409, "version_conflict", map[string]any{"latest_version": 3.0}},
		{fmt.Errorf("wrapped: %w", &promptstore.RevisionConflict{Expected: 1, Current: 4}), 409, "revision_conflict", map[string]any{"current_revision": 4.0}},
		{&promptstore.ReleaseActive{ReleaseID: "rel_1"}, 409, "release_active", map[string]any{"release_id": "rel_1"}},
		{&promptstore.InvalidError{Code: "invalid_config", Field: "config.tools", Detail: "x"}, 422, "invalid_config", map[string]any{"field": "config.tools"}},
		{&promptstore.InvalidError{Code: "missing_variable", Field: "variables.who", Variable: "who"}, 422, "missing_variable", map[string]any{"variable": "who"}},
		{&promptstore.InvalidError{Code: "invalid_id", Field: "agent"}, 400, "invalid_id", map[string]any{"field": "agent"}},
		{rejected, 409, "import_rejected", map[string]any{"batch_fingerprint": "sha256:x"}},
		{promptstore.ErrAgentNotFound, 404, "agent_not_found", nil},
		{promptstore.ErrVersionNotFound, 404, "version_not_found", nil},
		{errors.Join(promptstore.ErrAgentNotFound, promptstore.ErrNoPointer), 404, "agent_not_found", nil},
		{promptstore.ErrNoPointer, 409, "no_pointer", nil},
		{promptstore.ErrVersionRevoked, 409, "version_revoked", nil},
		{promptstore.ErrVersionCurrent, 409, "version_current", nil},
		{promptstore.ErrPreconditionRequired, 428, "precondition_required", nil},
		{errors.Join(promptstore.ErrUnavailable, errors.New("dial tcp: refused")), 503, "store_unavailable", map[string]any{"store": "sql"}},
		{fmt.Errorf("x: %w", sqlstore.ErrUnavailable), 503, "store_unavailable", map[string]any{"store": "sql"}},
		{idempotency.ErrKeyReused, 422, "idempotency_key_reused", map[string]any{"field": "Idempotency-Key"}},
		{idempotency.ErrInProgress, 409, "idempotency_in_progress", nil},
		{&release.InvalidError{Code: "invalid_percent", Field: "percent"}, 422, "invalid_percent", map[string]any{"field": "percent"}},
		{&release.InvalidError{Code: "invalid_steps", Field: "steps[1].percent"}, 422, "invalid_steps", map[string]any{"field": "steps[1].percent"}},
		{&release.InvalidError{Code: "invalid_field", Field: "candidate_version"}, 400, "invalid_field", map[string]any{"field": "candidate_version"}},
		{&release.InvalidTransition{State: release.Promoted, Action: release.ActPause}, 409, "invalid_transition", map[string]any{"state": "promoted"}},
		{release.ErrNotFound, 404, "release_not_found", nil},
		{session.ErrNotFound, 404, "session_not_found", nil},
		{session.ErrClosed, 409, "session_closed", map[string]any{"state": "closed"}},
		{session.ErrExists, 409, "session_exists", nil},
		{session.ErrMismatch, 409, "session_mismatch", nil},
		{session.ErrLeaseLost, 409, "lease_lost", nil},
		{&session.RevisionConflict{Current: 7}, 409, "revision_conflict", map[string]any{"current_revision": 7.0}},
		{&session.StaleFence{Fence: 3, Current: 9}, 409, "stale_fence", map[string]any{"current_fence": 9.0}},
		{&session.LeaseHeld{Holder: "w-1", ExpiresAt: time.Date(2026, 11, 29, 19, 51, 35, 123456789, time.UTC)}, 423, "lease_held",
			map[string]any{"holder": "w-1", "expires_at": "2026-11-29T19:51:35.123Z"}},
		{&session.InvalidError{Code: "invalid_field", Field: "turns[0].role"}, 400, "invalid_field", map[string]any{"field": "turns[0].role"}},
		{&locks.HeldError{Conflicts: []locks.Conflict{{Key: "k", Holder: "w-2", ExpiresAt: time.Unix(0, 0)}}}, 423, "lease_held", map[string]any{"holder": "w-2"}},
		{fmt.Errorf("renew: %w", locks.ErrUnavailable), 503, "store_unavailable", map[string]any{"store": "redis"}},
	} {
		path := fmt.Sprintf("/test/err/%d", i)
		s.Echo().GET(path, func(echo.Context) error { return tc.err })
		rec := get(t, s.Handler(), path)
		p := problem(t, rec, tc.status, tc.code)
		for k, v := range tc.fields {
			if p[k] != v {
				t.Errorf("%s: %s = %v, want %v", tc.code, k, p[k], v)
			}
		}
		if tc.status == 503 && (rec.Header().Get("Retry-After") == "" || strings.Contains(rec.Body.String(), "refused")) {
			t.Errorf("%s: Retry-After %q, body %s", tc.code, rec.Header().Get("Retry-After"), rec.Body)
		}
		if tc.code == "import_rejected" && (p["results"] == nil || p["summary"] == nil) {
			t.Errorf("import_rejected lacks results or summary: %v", p)
		}
	}
	if !strings.Contains(logs.String(), "dial tcp: refused") {
		t.Errorf("a 503's cause was not logged: %s", logs)
	}
}
