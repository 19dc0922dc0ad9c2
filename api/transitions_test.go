package api_test

import (
	"fmt"
	"testing"
)

func TestRelease_transitions_overHTTP(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.withVersions(2)
		rel := a.createRelease(`{"candidate_version": 2, "percent": 10, "steps": [{"percent": 50, "after": "1h"}]}`)
		base := "/v1/releases/" + rel["id"].(string)

		// pause: revision 2; pausing again is a 200 no-op (same revision).
		rec := a.do("POST", base+"/pause", admin, `{"expected_revision": 1, "reason": "looking"}`)
		r := a.ok(rec, 200)
		conforms(t, "Release", rec.Body.Bytes())
		if r["state"] != "paused" || r["revision"] != float64(2) || r["next_step_at"] != nil || rec.Header().Get("ETag") != `"2"` {
			t.Fatalf("paused = %v", r)
		}
		before := a.releaseCounts()
		if r := a.ok(a.do("POST", base+"/pause", admin, ""), 200); r["state"] != "paused" || r["revision"] != float64(2) {
			t.Fatalf("pause again = %v", r)
		}
		if after := a.releaseCounts(); after != before {
			t.Fatalf("a no-op wrote: %+v -> %+v", before, after)
		}
		// A stale revision: 409 from the body, 412 from If-Match.
		p := problem(t, a.do("POST", base+"/resume", admin, `{"expected_revision": 1}`), 409, "revision_conflict")
		if p["current_revision"] != float64(2) {
			t.Errorf("current_revision = %v", p["current_revision"])
		}
		problem(t, a.do("POST", base+"/resume", admin, "", "If-Match", `"1"`), 412, "precondition_failed")
		problem(t, a.do("POST", base+"/resume", admin, `{"reason": 5}`), 400, "invalid_field")
		problem(t, a.do("POST", base+"/resume", runtime, ""), 403, "forbidden")
		// resume via If-Match: running again, with its step timer.
		if r := a.ok(a.do("POST", base+"/resume", admin, "", "If-Match", `"2"`), 200); r["state"] != "running" || r["next_step_at"] == nil {
			t.Fatalf("resumed = %v", r)
		}

		// PATCH: the revision is required; from If-Match a stale one is 412.
		problem(t, a.do("PATCH", base, admin, `{"percent": 30}`), 428, "precondition_required")
		p = problem(t, a.do("PATCH", base, admin, `{"percent": 30}`, "If-Match", `"2"`), 412, "precondition_failed")
		if p["current_revision"] != float64(3) {
			t.Errorf("current_revision = %v", p["current_revision"])
		}
		problem(t, a.do("PATCH", base, admin, `{"percent": 30.001, "expected_revision": 3}`), 422, "invalid_percent")
		problem(t, a.do("PATCH", base, admin, `{"percent": "30", "expected_revision": 3}`), 400, "invalid_field")
		rec = a.do("PATCH", base, admin, `{"percent": 5.5}`, "If-Match", `"3"`)
		r = a.ok(rec, 200)
		if r["percent"] != 5.5 || r["revision"] != float64(4) || r["next_step_at"] != nil || r["steps_applied"] != float64(1) {
			t.Fatalf("patched = %s", rec.Body)
		}

		// promote: the pointer moves to the candidate; the env has no release.
		if r := a.ok(a.do("POST", base+"/promote", admin, `{"reason": "good"}`), 200); r["state"] != "promoted" {
			t.Fatalf("promoted = %v", r)
		}
		env := a.ok(a.do("GET", prodPath, runtime, ""), 200)
		if env["version"] != float64(2) || env["release"] != nil {
			t.Fatalf("env after promote = %v", env)
		}
		// promote again: 200 no-op; anything else: 409 invalid_transition with the state.
		a.ok(a.do("POST", base+"/promote", admin, ""), 200)
		for _, action := range []string{"pause", "resume", "rollback"} {
			p := problem(t, a.do("POST", base+"/"+action, admin, ""), 409, "invalid_transition")
			if p["state"] != "promoted" {
				t.Errorf("%s: state = %v", action, p["state"])
			}
		}
		p = problem(t, a.do("PATCH", base, admin, `{"percent": 50, "expected_revision": 5}`), 409, "invalid_transition")
		if p["state"] != "promoted" {
			t.Errorf("patch: state = %v", p["state"])
		}
		problem(t, a.do("POST", "/v1/releases/rel_missing/pause", admin, ""), 404, "release_not_found")
		problem(t, a.do("PATCH", "/v1/releases/rel_missing", admin, `{"percent": 1, "expected_revision": 1}`), 404, "release_not_found")

		// History: create, pause, resume, percent, promote.
		h := a.ok(a.do("GET", base, runtime, ""), 200)["history"].([]any)
		var actions []string
		for _, e := range h {
			actions = append(actions, e.(map[string]any)["action"].(string))
		}
		if fmt.Sprint(actions) != "[create pause resume percent promote]" {
			t.Fatalf("history actions = %v", actions)
		}
	})
}

func TestRelease_rollback_revokesTheCandidate(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.withVersions(2)
		rel := a.createRelease(`{"candidate_version": 2, "percent": 100}`)
		r := a.ok(a.do("POST", "/v1/releases/"+rel["id"].(string)+"/rollback", admin, `{"expected_revision": 1, "reason": "bad"}`), 200)
		if r["state"] != "rolled_back" {
			t.Fatalf("rolled back = %v", r)
		}
		env := a.ok(a.do("GET", prodPath, runtime, ""), 200)
		if env["version"] != float64(1) || env["release"] != nil || fmt.Sprint(env["revoked"]) != "[2]" {
			t.Fatalf("env = %v", env)
		}
		if p := a.ok(a.do("GET", prodPath+"/prompt?user_id=u1", runtime, ""), 200); p["version"] != float64(1) || p["release"] != nil {
			t.Fatalf("prompt = %v", p)
		}
	})
}

func TestEnvRollback_withAndWithoutRelease(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.withVersions(3)
		a.publish("support", "prod", 2, 1)
		a.publish("support", "prod", 3, 2)
		const path = prodPath + "/rollback"

		// Without a release: 428 without a precondition, 409/412 when stale.
		problem(t, a.do("POST", path, admin, `{"reason": "x"}`), 428, "precondition_required")
		problem(t, a.do("POST", path, admin, `{"expected_revision": 1}`), 409, "revision_conflict")
		problem(t, a.do("POST", path, admin, `{}`, "If-Match", `"1"`), 412, "precondition_failed")
		problem(t, a.do("POST", path, admin, `{"expected_revision": 3, "to_version": 7}`), 404, "version_not_found")
		problem(t, a.do("POST", path, admin, `{"expected_revision": 3, "to_version": 3}`), 400, "invalid_field")
		problem(t, a.do("POST", "/v1/agents/nobody/envs/prod/rollback", admin, `{"expected_revision": 1}`), 404, "agent_not_found")
		problem(t, a.do("POST", "/v1/agents/support/envs/dev/rollback", admin, `{"expected_revision": 1}`), 409, "no_pointer")
		// The default target: the newest older, unrevoked version (2); 3 is revoked.
		rec := a.do("POST", path, admin, `{"reason": "v3 is bad"}`, "If-Match", `"3"`)
		out := a.ok(rec, 200)
		conforms(t, "EnvRollback", rec.Body.Bytes())
		env := out["env"].(map[string]any)
		if out["from_version"] != float64(3) || out["to_version"] != float64(2) || out["release"] != nil ||
			env["version"] != float64(2) || fmt.Sprint(env["revoked"]) != "[3]" || rec.Header().Get("ETag") != fmt.Sprintf(`"%v"`, env["revision"]) {
			t.Fatalf("rollback = %s", rec.Body)
		}

		// With an active release: it is rolled back; to_version is not allowed.
		rel := a.createRelease(`{"candidate_version": 1, "percent": 50}`)
		rev := a.pointerRevision("support", "prod")
		p := problem(t, a.do("POST", path, admin, fmt.Sprintf(`{"expected_revision": %d, "to_version": 1}`, rev)), 400, "invalid_field")
		if p["field"] != "to_version" {
			t.Errorf("field = %v", p["field"])
		}
		rec = a.do("POST", path, admin, fmt.Sprintf(`{"expected_revision": %d, "reason": "abort"}`, rev))
		out = a.ok(rec, 200)
		conforms(t, "EnvRollback", rec.Body.Bytes())
		r := out["release"].(map[string]any)
		env = out["env"].(map[string]any)
		if r["id"] != rel["id"] || r["state"] != "rolled_back" || env["version"] != float64(2) || env["release"] != nil ||
			out["from_version"] != float64(1) || out["to_version"] != float64(2) {
			t.Fatalf("rollback with release = %s", rec.Body)
		}
	})
}
