package api_test

import (
	"fmt"
	"strings"
	"testing"
)

const (
	releasesPath = "/v1/agents/support/envs/prod/releases"
	prodPath     = "/v1/agents/support/envs/prod"
)

// withVersions creates versions 1..n of support and points prod at 1.
func (a *app) withVersions(n int) {
	a.t.Helper()
	for i := range n {
		a.createVersion("support", i, fmt.Sprintf("v%d", i+1))
	}
	a.publish("support", "prod", 1, 0)
}

// createRelease starts a release of candidate at percent and returns it.
func (a *app) createRelease(body string) map[string]any {
	a.t.Helper()
	rec := a.do("POST", releasesPath, admin, body)
	rel := a.ok(rec, 201)
	conforms(a.t, "Release", rec.Body.Bytes())
	return rel
}

// releaseCounts are the rows a release write changes.
type releaseCounts struct {
	releases, history, audit, revocations, pointerRev int64
}

func (a *app) releaseCounts() releaseCounts {
	a.t.Helper()
	var c releaseCounts
	for table, dst := range map[string]*int64{"releases": &c.releases, "release_history": &c.history,
		"audit_events": &c.audit, "prompt_revocations": &c.revocations} {
		if err := a.db.Raw("SELECT COUNT(*) FROM " + table).Scan(dst).Error; err != nil {
			a.t.Fatal(err)
		}
	}
	c.pointerRev = a.pointerRevision("support", "prod")
	return c
}

func TestRelease_createGetListAndResolve(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.withVersions(2)
		rel := a.createRelease(`{"candidate_version": 2, "percent": 12.5, "stickiness": "user",
			"steps": [{"percent": 25, "after": "10m"}, {"percent": 50.05, "after": "1h"}, {"promote": true, "after": "1h"}],
			"message": "try v2", "expected_revision": 1}`)
		id := rel["id"].(string)
		if !strings.HasPrefix(id, "rel_") || rel["state"] != "running" || rel["baseline_version"] != float64(1) ||
			rel["candidate_version"] != float64(2) || rel["revision"] != float64(1) || rel["created_by"] != "ops" ||
			!millis.MatchString(rel["created_at"].(string)) || !millis.MatchString(rel["next_step_at"].(string)) {
			t.Fatalf("release = %v", rel)
		}
		// Percents are JSON numbers, written exactly.
		rec := a.do("GET", "/v1/releases/"+id, runtime, "")
		got := a.ok(rec, 200)
		conforms(t, "Release", rec.Body.Bytes())
		body := rec.Body.String()
		if !strings.Contains(body, `"percent":12.5`) || !strings.Contains(body, `{"percent":50.05,"after":"1h0m0s"}`) ||
			!strings.Contains(body, `{"promote":true,"after":"1h0m0s"}`) || rec.Header().Get("ETag") != `"1"` {
			t.Fatalf("GET release = %s (ETag %s)", body, rec.Header().Get("ETag"))
		}
		if h := got["history"].([]any); len(h) != 1 || h[0].(map[string]any)["action"] != "create" {
			t.Fatalf("history = %v", h)
		}

		// The env shows the active release; with it, no 304 on the pointer's ETag.
		rec = a.do("GET", prodPath, runtime, "")
		env := a.ok(rec, 200)
		conforms(t, "Env", rec.Body.Bytes())
		if r, _ := env["release"].(map[string]any); r == nil || r["id"] != id || r["percent"] != 12.5 {
			t.Fatalf("env release = %v", env["release"])
		}
		if rec := a.do("GET", prodPath, runtime, "", "If-None-Match", rec.Header().Get("ETag")); rec.Code != 200 {
			t.Fatalf("If-None-Match with an active release = %d", rec.Code)
		}

		// The list, newest first, without histories.
		rec = a.do("GET", releasesPath, runtime, "")
		l := a.ok(rec, 200)
		conforms(t, "ReleaseList", rec.Body.Bytes())
		items := l["items"].([]any)
		if len(items) != 1 || items[0].(map[string]any)["id"] != id || items[0].(map[string]any)["history"] != nil || l["next"] != nil {
			t.Fatalf("list = %v", l)
		}
		problem(t, a.do("GET", "/v1/agents/nobody/envs/prod/releases", runtime, ""), 404, "agent_not_found")
		if l := a.ok(a.do("GET", "/v1/agents/support/envs/dev/releases", runtime, ""), 200); len(l["items"].([]any)) != 0 {
			t.Fatalf("dev list = %v", l)
		}
		problem(t, a.do("GET", "/v1/releases/rel_nope", runtime, ""), 404, "release_not_found")

		// Resolve carries the trace: the HTTP contract's (api/openapi.yaml) vector rel_1:user-1 is 771,
		// so at 12.5% bucket < 1250 means the candidate.
		rec = a.do("GET", prodPath+"/prompt?user_id=alice", runtime, "")
		p := a.ok(rec, 200)
		conforms(t, "Prompt", rec.Body.Bytes())
		tr := p["release"].(map[string]any)
		bucket := int(tr["bucket"].(float64))
		wantArm, wantVersion := "baseline", float64(1)
		if bucket < 1250 {
			wantArm, wantVersion = "candidate", 2
		}
		if tr["id"] != id || tr["arm"] != wantArm || p["version"] != wantVersion || tr["percent"] != 12.5 {
			t.Fatalf("prompt = %v", p)
		}
		if p := a.ok(a.do("GET", prodPath+"/prompt", runtime, ""), 200); p["release"].(map[string]any)["bucket"] != nil ||
			p["version"] != float64(1) {
			t.Fatalf("no key = %v", p)
		}
	})
}

func TestRelease_badInput_getsItsCode_andWritesNothing(t *testing.T) {
	cases := []struct {
		name, path, body string
		headers          []string
		status           int
		code, field      string
	}{
		{"percent over 100", releasesPath, `{"candidate_version": 2, "percent": 100.01}`, nil, 422, "invalid_percent", "percent"},
		{"percent negative", releasesPath, `{"candidate_version": 2, "percent": -1}`, nil, 422, "invalid_percent", "percent"},
		{"percent 3 decimals", releasesPath, `{"candidate_version": 2, "percent": 12.345}`, nil, 422, "invalid_percent", "percent"},
		{"percent exponent", releasesPath, `{"candidate_version": 2, "percent": 1e1}`, nil, 422, "invalid_percent", "percent"},
		{"percent a string", releasesPath, `{"candidate_version": 2, "percent": "10"}`, nil, 400, "invalid_field", "percent"},
		{"percent missing", releasesPath, `{"candidate_version": 2}`, nil, 400, "invalid_field", "percent"},
		{"candidate missing", releasesPath, `{"percent": 10}`, nil, 400, "invalid_field", "candidate_version"},
		{"candidate is the baseline", releasesPath, `{"candidate_version": 1, "percent": 10}`, nil, 400, "invalid_field", "candidate_version"},
		{"candidate unknown", releasesPath, `{"candidate_version": 9, "percent": 10}`, nil, 404, "version_not_found", ""},
		{"candidate revoked", releasesPath, `{"candidate_version": 3, "percent": 10}`, nil, 409, "version_revoked", ""},
		{"no pointer", "/v1/agents/support/envs/dev/releases", `{"candidate_version": 2, "percent": 10}`, nil, 409, "no_pointer", ""},
		{"unknown agent", "/v1/agents/nobody/envs/prod/releases", `{"candidate_version": 2, "percent": 10}`, nil, 404, "agent_not_found", ""},
		{"stickiness", releasesPath, `{"candidate_version": 2, "percent": 10, "stickiness": "device"}`, nil, 400, "invalid_field", "stickiness"},
		{"steps decrease", releasesPath, `{"candidate_version": 2, "percent": 10, "steps": [{"percent": 50, "after": "1m"}, {"percent": 25, "after": "1m"}]}`, nil, 422, "invalid_steps", "steps[1].percent"},
		{"steps below the start", releasesPath, `{"candidate_version": 2, "percent": 30, "steps": [{"percent": 20, "after": "1m"}]}`, nil, 422, "invalid_steps", "steps[0].percent"},
		{"promote not last", releasesPath, `{"candidate_version": 2, "percent": 10, "steps": [{"promote": true, "after": "1m"}, {"percent": 50, "after": "1m"}]}`, nil, 422, "invalid_steps", "steps[0]"},
		{"step after", releasesPath, `{"candidate_version": 2, "percent": 10, "steps": [{"percent": 50, "after": "soon"}]}`, nil, 422, "invalid_steps", "steps[0].after"},
		{"step percent 3 decimals", releasesPath, `{"candidate_version": 2, "percent": 10, "steps": [{"percent": 50.001, "after": "1m"}]}`, nil, 422, "invalid_steps", "steps[0].percent"},
		{"step unknown member", releasesPath, `{"candidate_version": 2, "percent": 10, "steps": [{"percent": 50, "after": "1m", "at": 3}]}`, nil, 400, "invalid_field", "steps[0].at"},
		{"step percent a string", releasesPath, `{"candidate_version": 2, "percent": 10, "steps": [{"percent": "50", "after": "1m"}]}`, nil, 400, "invalid_field", "steps[0].percent"},
		{"stale pointer revision", releasesPath, `{"candidate_version": 2, "percent": 10, "expected_revision": 1}`, nil, 409, "revision_conflict", ""},
		{"stale If-Match", releasesPath, `{"candidate_version": 2, "percent": 10}`, []string{"If-Match", `"1"`}, 412, "precondition_failed", ""},
		{"If-None-Match", releasesPath, `{"candidate_version": 2, "percent": 10}`, []string{"If-None-Match", "*"}, 400, "invalid_field", "If-None-Match"},
		{"runtime token", releasesPath, `{"candidate_version": 2, "percent": 10}`, nil, 403, "forbidden", ""},
		{"message too long", releasesPath, `{"candidate_version": 2, "percent": 10, "message": "` + strings.Repeat("m", 4097) + `"}`, nil, 400, "invalid_field", "message"},
	}
	forEachDialect(t, func(t *testing.T, a *app) {
		a.withVersions(3)
		a.ok(a.do("POST", prodPath+"/revocations", admin, `{"version": 3}`), 200) // pointer revision 2
		before := a.releaseCounts()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				token := admin
				if tc.code == "forbidden" {
					token = runtime
				}
				p := problem(t, a.do("POST", tc.path, token, tc.body, tc.headers...), tc.status, tc.code)
				if tc.field != "" && p["field"] != tc.field {
					t.Errorf("field = %v, want %s", p["field"], tc.field)
				}
				if tc.code == "revision_conflict" || tc.code == "precondition_failed" {
					if p["current_revision"] != float64(2) {
						t.Errorf("current_revision = %v", p["current_revision"])
					}
				}
				if after := a.releaseCounts(); after != before {
					t.Fatalf("rows changed: %+v -> %+v", before, after)
				}
			})
		}
		// A second active release: 409 release_active naming the first.
		rel := a.createRelease(`{"candidate_version": 2, "percent": 10}`)
		before = a.releaseCounts()
		p := problem(t, a.do("POST", releasesPath, admin, `{"candidate_version": 2, "percent": 20}`), 409, "release_active")
		if p["release_id"] != rel["id"] {
			t.Errorf("release_id = %v", p["release_id"])
		}
		// ... and the pointer does not move around it.
		problem(t, a.do("PUT", prodPath, admin, fmt.Sprintf(`{"version": 2, "expected_revision": %d}`, before.pointerRev)), 409, "release_active")
		if after := a.releaseCounts(); after != before {
			t.Fatalf("rows changed: %+v -> %+v", before, after)
		}
	})
}

func TestRelease_create_idempotencyKeyReplays(t *testing.T) {
	a := sqliteApp(t)
	a.withVersions(2)
	body := `{"candidate_version": 2, "percent": 5}`
	first := a.do("POST", releasesPath, admin, body, "Idempotency-Key", "rel-1")
	a.ok(first, 201)
	again := a.do("POST", releasesPath, admin, body, "Idempotency-Key", "rel-1")
	if again.Code != 201 || again.Body.String() != first.Body.String() || again.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay = %d %s", again.Code, again.Body)
	}
	if c := a.releaseCounts(); c.releases != 1 {
		t.Fatalf("%d releases", c.releases)
	}
}
