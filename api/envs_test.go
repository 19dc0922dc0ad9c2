package api_test

import (
	"testing"
)

func TestEnv_putGet_revisionETag(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.createVersion("support", 0, "one")
		a.createVersion("support", 1, "two")
		problem(t, a.do("GET", "/v1/agents/support/envs/prod", runtime, ""), 404, "not_found")
		problem(t, a.do("GET", "/v1/agents/nobody/envs/prod", runtime, ""), 404, "agent_not_found")

		// Created: 201 at revision 1.
		rec := a.do("PUT", "/v1/agents/support/envs/prod", admin, `{"version": 1, "expected_revision": 0, "reason": "launch"}`)
		env := a.ok(rec, 201)
		conforms(t, "Env", rec.Body.Bytes())
		if env["revision"] != float64(1) || env["version"] != float64(1) || env["updated_by"] != "ops" || rec.Header().Get("ETag") != `"1"` {
			t.Fatalf("created = %v, ETag %s", env, rec.Header().Get("ETag"))
		}
		// Moved with If-Match: 200 at revision 2.
		rec = a.do("PUT", "/v1/agents/support/envs/prod", admin, `{"version": 2}`, "If-Match", `"1"`)
		env = a.ok(rec, 200)
		if env["revision"] != float64(2) || env["version"] != float64(2) || rec.Header().Get("ETag") != `"2"` {
			t.Fatalf("moved = %v", env)
		}

		rec = a.do("GET", "/v1/agents/support/envs/prod", runtime, "")
		env = a.ok(rec, 200)
		conforms(t, "Env", rec.Body.Bytes())
		if rec.Header().Get("ETag") != `"2"` || env["release"] != nil || len(env["revoked"].([]any)) != 0 {
			t.Fatalf("GET env = %v, ETag %s", env, rec.Header().Get("ETag"))
		}
		history := env["history"].([]any)
		last := history[0].(map[string]any)
		if len(history) != 2 || last["from_version"] != float64(1) || last["to_version"] != float64(2) || last["actor"] != "ops" ||
			!millis.MatchString(last["at"].(string)) || history[1].(map[string]any)["reason"] != "launch" {
			t.Errorf("history = %v", history)
		}
		if rec := a.do("GET", "/v1/agents/support/envs/prod", runtime, "", "If-None-Match", `"2"`); rec.Code != 304 {
			t.Errorf("If-None-Match current: %d", rec.Code)
		}

		// Unknown and revoked versions.
		problem(t, a.do("PUT", "/v1/agents/support/envs/prod", admin, `{"version": 9, "expected_revision": 2}`), 404, "version_not_found")
		problem(t, a.do("PUT", "/v1/agents/nobody/envs/prod", admin, `{"version": 1, "expected_revision": 0}`), 404, "agent_not_found")
	})
}

func TestEnv_put_preconditions(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.createVersion("support", 0, "one")
		a.createVersion("support", 1, "two")
		const path = "/v1/agents/support/envs/prod"

		// None: 428.
		problem(t, a.do("PUT", path, admin, `{"version": 1}`), 428, "precondition_required")
		// If-None-Match: * creates.
		if env := a.ok(a.do("PUT", path, admin, `{"version": 1}`, "If-None-Match", "*"), 201); env["revision"] != float64(1) {
			t.Fatalf("If-None-Match create = %v", env)
		}
		// ... and fails once the pointer exists: 412 (a header).
		p := problem(t, a.do("PUT", path, admin, `{"version": 2}`, "If-None-Match", "*"), 412, "precondition_failed")
		if p["current_revision"] != float64(1) {
			t.Errorf("current_revision = %v", p["current_revision"])
		}
		// A stale If-Match: 412 with current_revision.
		p = problem(t, a.do("PUT", path, admin, `{"version": 2}`, "If-Match", `"7"`), 412, "precondition_failed")
		if p["current_revision"] != float64(1) {
			t.Errorf("current_revision = %v", p["current_revision"])
		}
		// A stale body: 409 revision_conflict with current_revision.
		p = problem(t, a.do("PUT", path, admin, `{"version": 2, "expected_revision": 7}`), 409, "revision_conflict")
		if p["current_revision"] != float64(1) {
			t.Errorf("current_revision = %v", p["current_revision"])
		}
		// Body and header disagree: 400.
		p = problem(t, a.do("PUT", path, admin, `{"version": 2, "expected_revision": 1}`, "If-Match", `"2"`), 400, "invalid_field")
		if p["field"] != "expected_revision" {
			t.Errorf("field = %v", p["field"])
		}
		// Malformed headers: 400 naming them.
		for _, h := range [][2]string{{"If-Match", "1"}, {"If-Match", `W/"1"`}, {"If-Match", `"x"`}, {"If-Match", "*"}, {"If-None-Match", `"1"`}} {
			p = problem(t, a.do("PUT", path, admin, `{"version": 2}`, h[0], h[1]), 400, "invalid_field")
			if p["field"] != h[0] {
				t.Errorf("%s: %s: field = %v", h[0], h[1], p["field"])
			}
		}
		if a.pointerRevision("support", "prod") != 1 {
			t.Fatal("a failed precondition moved the pointer")
		}
		// Both agreeing: 200.
		if env := a.ok(a.do("PUT", path, admin, `{"version": 2, "expected_revision": 1}`, "If-Match", `"1"`), 200); env["revision"] != float64(2) {
			t.Fatalf("agreeing = %v", env)
		}
	})
}

func TestRevocations_revokeAndLift(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		const base = "/v1/agents/support/envs/prod"
		problem(t, a.do("POST", base+"/revocations", admin, `{"version": 1}`), 404, "agent_not_found")
		a.createVersion("support", 0, "one")
		a.createVersion("support", 1, "two")
		problem(t, a.do("POST", base+"/revocations", admin, `{"version": 1}`), 409, "no_pointer")
		a.publish("support", "prod", 2, 0)

		problem(t, a.do("POST", base+"/revocations", admin, `{"version": 2}`), 409, "version_current")
		problem(t, a.do("POST", base+"/revocations", admin, `{"version": 5}`), 404, "version_not_found")
		rec := a.do("POST", base+"/revocations", admin, `{"version": 1, "reason": "leaks PII"}`)
		env := a.ok(rec, 200)
		conforms(t, "Env", rec.Body.Bytes())
		if rv := env["revoked"].([]any); len(rv) != 1 || rv[0] != float64(1) || env["revision"] != float64(2) {
			t.Fatalf("revoked = %v", env)
		}
		// Twice: the same answer, nothing changes.
		if env := a.ok(a.do("POST", base+"/revocations", admin, `{"version": 1}`), 200); env["revision"] != float64(2) {
			t.Fatalf("twice = %v", env)
		}
		// A revoked version cannot be published.
		problem(t, a.do("PUT", base, admin, `{"version": 1, "expected_revision": 2}`), 409, "version_revoked")

		rec = a.do("DELETE", base+"/revocations/1", admin, "")
		env = a.ok(rec, 200)
		if len(env["revoked"].([]any)) != 0 || env["revision"] != float64(3) {
			t.Fatalf("lifted = %v", env)
		}
		a.ok(a.do("PUT", base, admin, `{"version": 1, "expected_revision": 3}`), 200)
	})
}
