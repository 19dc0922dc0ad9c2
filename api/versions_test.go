package api_test

import (
	"regexp"
	"strings"
	"testing"
)

var millis = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)

func TestVersions_createListGetDiff(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		rec := a.do("POST", "/v1/agents/support/versions", admin,
			`{"base_version": 0, "config": {"system": "Hi <b>", "model": {"name": "m", "temperature": 0.20}}, "message": "first"}`)
		v1 := a.ok(rec, 201)
		conforms(t, "Version", rec.Body.Bytes())
		if v1["agent"] != "support" || v1["version"] != float64(1) || v1["created_by"] != "ops" || v1["message"] != "first" ||
			!millis.MatchString(v1["created_at"].(string)) {
			t.Fatalf("v1 = %v", v1)
		}
		// The config is served as stored: canonical, numbers as written, no HTML escapes.
		if !strings.Contains(rec.Body.String(), `"config":{"model":{"name":"m","temperature":0.20},"system":"Hi <b>"}`) {
			t.Errorf("config not served as stored: %s", rec.Body)
		}
		if a.createVersion("support", 1, "two") != 2 {
			t.Fatal("v2")
		}
		// A stale base: 409 version_conflict with latest_version.
		p := problem(t, a.do("POST", "/v1/agents/support/versions", admin, `{"base_version": 1, "config": {"system": "x"}}`), 409, "version_conflict")
		if p["latest_version"] != float64(2) {
			t.Errorf("latest_version = %v", p["latest_version"])
		}

		// List, newest first, paginated.
		rec = a.do("GET", "/v1/agents/support/versions?limit=1", runtime, "")
		page := a.ok(rec, 200)
		conforms(t, "VersionList", rec.Body.Bytes())
		items := page["items"].([]any)
		if len(items) != 1 || items[0].(map[string]any)["version"] != float64(2) || page["next"] != "2" {
			t.Fatalf("page 1 = %v", page)
		}
		page = a.ok(a.do("GET", "/v1/agents/support/versions?limit=1&cursor=2", runtime, ""), 200)
		if items := page["items"].([]any); len(items) != 1 || items[0].(map[string]any)["version"] != float64(1) || page["next"] != nil {
			t.Fatalf("page 2 = %v", page)
		}

		// One version: ETag, immutable caching, 304.
		rec = a.do("GET", "/v1/agents/support/versions/1", runtime, "")
		got := a.ok(rec, 200)
		etag := rec.Header().Get("ETag")
		if etag != `"`+v1["content_hash"].(string)+`"` || got["content_hash"] != v1["content_hash"] {
			t.Errorf("ETag = %s, content_hash %v", etag, v1["content_hash"])
		}
		if cc := rec.Header().Get("Cache-Control"); cc != "public, max-age=31536000, immutable" {
			t.Errorf("Cache-Control = %q", cc)
		}
		rec = a.do("GET", "/v1/agents/support/versions/1", runtime, "", "If-None-Match", etag)
		if rec.Code != 304 || rec.Body.Len() != 0 || rec.Header().Get("ETag") != etag {
			t.Errorf("If-None-Match: %d %q", rec.Code, rec.Body)
		}
		if rec := a.do("GET", "/v1/agents/support/versions/1", runtime, "", "If-None-Match", `"sha256:other"`); rec.Code != 200 {
			t.Errorf("other ETag: %d", rec.Code)
		}
		problem(t, a.do("GET", "/v1/agents/support/versions/9", runtime, ""), 404, "version_not_found")
		problem(t, a.do("GET", "/v1/agents/nobody/versions/1", runtime, ""), 404, "agent_not_found")
		problem(t, a.do("GET", "/v1/agents/nobody/versions", runtime, ""), 404, "agent_not_found")

		// Diff: text/x-diff, a is the old side.
		rec = a.do("GET", "/v1/agents/support/versions/1/diff/2", runtime, "")
		if rec.Code != 200 || rec.Header().Get("Content-Type") != "text/x-diff; charset=utf-8" {
			t.Fatalf("diff: %d %q", rec.Code, rec.Header().Get("Content-Type"))
		}
		for _, want := range []string{"--- support/v1", "+++ support/v2", `-  "system": "Hi <b>"`, `+  "system": "two"`, `-  "model": {`} {
			if !strings.Contains(rec.Body.String(), want) {
				t.Errorf("diff lacks %q:\n%s", want, rec.Body)
			}
		}
		problem(t, a.do("GET", "/v1/agents/support/versions/1/diff/7", runtime, ""), 404, "version_not_found")

		// Agents: latest version and envs.
		a.publish("support", "prod", 2, 0)
		rec = a.do("GET", "/v1/agents", runtime, "")
		agents := a.ok(rec, 200)
		conforms(t, "AgentList", rec.Body.Bytes())
		first := agents["items"].([]any)[0].(map[string]any)
		if first["agent"] != "support" || first["latest_version"] != float64(2) || first["envs"].(map[string]any)["prod"] != float64(2) {
			t.Errorf("agents = %v", agents)
		}
	})
}

// A tool is kept as given: an OpenAI function tool's "strict": null (OpenAI's
// own type allows it) is stored and served back, and the spec documents it.
func TestVersions_toolWithStrictNull_isServedAsGiven(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		tool := `{"function":{"name":"lookup","strict":null},"type":"function"}`
		rec := a.do("POST", "/v1/agents/support/versions", admin, `{"base_version": 0, "config": {"system": "x", "tools": [`+tool+`]}}`)
		a.ok(rec, 201)
		conforms(t, "Version", rec.Body.Bytes())
		rec = a.do("GET", "/v1/agents/support/versions/1", runtime, "")
		a.ok(rec, 200)
		if !strings.Contains(rec.Body.String(), `"tools":[`+tool+`]`) {
			t.Errorf("tool not served as given: %s", rec.Body)
		}
	})
}

func TestAgents_list_paginatesByName(t *testing.T) {
	a := sqliteApp(t)
	for _, name := range []string{"c", "a", "b"} {
		a.createVersion(name, 0, "x")
	}
	page := a.ok(a.do("GET", "/v1/agents?limit=2", runtime, ""), 200)
	if items := page["items"].([]any); len(items) != 2 || items[0].(map[string]any)["agent"] != "a" || page["next"] != "b" {
		t.Fatalf("page 1 = %v", page)
	}
	page = a.ok(a.do("GET", "/v1/agents?limit=2&cursor=b", runtime, ""), 200)
	if items := page["items"].([]any); len(items) != 1 || items[0].(map[string]any)["agent"] != "c" || page["next"] != nil {
		t.Fatalf("page 2 = %v", page)
	}
	empty := a.do("GET", "/v1/agents?cursor=z", runtime, "")
	if strings.TrimSpace(empty.Body.String()) != `{"items":[],"next":null}` {
		t.Fatalf("empty page = %s", empty.Body)
	}
}
