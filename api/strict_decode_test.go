package api_test

import (
	"testing"
)

// refusedAt asserts a 400 invalid_field naming field.
func (a *app) refusedAt(method, path, body, field string) {
	a.t.Helper()
	p := problem(a.t, a.do(method, path, admin, body), 400, "invalid_field")
	if p["field"] != field {
		a.t.Fatalf("%s %s %s: field = %v, want %q", method, path, body, p["field"], field)
	}
}

// A typo inside scopes used to be dropped (or matched case-insensitively,
// the last one winning), leaving scopes null: a token of full access.
func TestTokens_scopesTypo_isRefusedNamingThePath_andCreatesNoToken(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		for _, c := range []struct{ body, field string }{
			{`{"name": "typo-1", "role": "runtime", "scopes": {"agent": ["team-a-*"]}}`, "scopes.agent"},
			{`{"name": "typo-2", "role": "runtime", "scopes": {"agents": ["team-a-*"], "AGENTS": null}}`, "scopes.AGENTS"},
			{`{"name": "typo-3", "role": "runtime", "scopes": {"Agents": ["team-a-*"]}}`, "scopes.Agents"},
			{`{"name": "typo-4", "role": "admin", "scopes": {"agents": ["team-a-*"], "boards ": []}}`, "scopes.boards "},
		} {
			a.refusedAt("POST", "/v1/tokens", c.body, c.field)
		}
		list := a.ok(a.do("GET", "/v1/tokens", admin, ""), 200)
		if items := list["items"].([]any); len(items) != 0 {
			t.Fatalf("tokens after refused creates = %v", items)
		}
		// Still accepted: exact members.
		a.createToken(`{"name": "exact", "role": "runtime", "scopes": {"agents": ["team-a-*"], "envs": null, "boards": []}}`)
	})
}

// Board definitions: claim and quota are decoded strictly too.
func TestBoards_definitionMemberTypo_isRefusedNamingThePath(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		head := `{"states": ["todo", "doing", "done"], "initial": "todo",
			"transitions": {"todo": ["doing"], "doing": ["done", "todo"]}, "terminal": ["done"], "expected_revision": 0, `
		claim := `"claim": {"from": "todo", "to": "doing", "ttl_ms": 5000, "exhausted": "done"}`
		for _, c := range []struct{ body, field string }{
			{head + `"claim": {"from": "todo", "to": "doing", "TTL_MS": 5000, "exhausted": "done"}}`, "claim.TTL_MS"},
			{head + `"claim": {"from": "todo", "to": "doing", "ttl": 5000, "exhausted": "done"}}`, "claim.ttl"},
			{head + claim + `, "quota": {"claims_per_min": 2}}`, "quota.claims_per_min"},
			{head + claim + `, "quota": {"Claims_Per_Minute": 2}}`, "quota.Claims_Per_Minute"},
		} {
			a.refusedAt("PUT", "/v1/boards/q", c.body, c.field)
		}
		problem(t, a.do("GET", "/v1/boards/q", admin, ""), 404, "board_not_found")
		a.ok(a.do("PUT", "/v1/boards/q", admin, head+claim+`, "quota": {"claims_per_minute": 2}}`), 201)
	})
}

// Release overrides: a misspelt list used to be dropped silently, so the
// listed users were not forced onto the arm the admin meant.
func TestReleaseOverrides_memberTypo_isRefusedNamingThePath(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.withVersions(2)
		for _, c := range []struct{ body, field string }{
			{`{"candidate_version": 2, "percent": 5, "overrides": {"Candidate": ["u1"]}}`, "overrides.Candidate"},
			{`{"candidate_version": 2, "percent": 5, "overrides": {"candidates": ["u1"]}}`, "overrides.candidates"},
			{`{"candidate_version": 2, "percent": 5, "steps": [{"percent": 10, "After": "1h"}]}`, "steps[0].After"},
			{`{"candidate_version": 2, "percent": 5, "guard": {"metric": "failure_rate", "Min_Samples": 10}}`, "guard.Min_Samples"},
		} {
			a.refusedAt("POST", releasesPath, c.body, c.field)
		}
		list := a.ok(a.do("GET", releasesPath, admin, ""), 200)
		if items := list["items"].([]any); len(items) != 0 {
			t.Fatalf("releases after refused creates = %v", items)
		}
		rel := a.createRelease(`{"candidate_version": 2, "percent": 5, "overrides": {"candidate": ["u1"]}}`)
		id := rel["id"].(string)
		a.refusedAt("PATCH", "/v1/releases/"+id, `{"overrides": {"BASELINE": ["u2"]}, "expected_revision": 1}`, "overrides.BASELINE")
		if arm, reason, _ := a.resolveArm("u1"); arm != "candidate" || reason != "override" {
			t.Fatalf("u1 after a refused patch: %s (%s)", arm, reason)
		}
	})
}
