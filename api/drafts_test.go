package api_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/promptd/promptd/api"
	"github.com/promptd/promptd/internal/harness/testenv"
)

// author2 is a second admin, its own principal (a bootstrap token).
const author2 = "author2-admin-secret-0123456789"

func withAuthor2(c *api.Config) {
	c.Tokens = append(c.Tokens[:len(c.Tokens):len(c.Tokens)], api.Token{Name: "author2", Role: api.RoleAdmin, Secret: author2})
}

// forEachDialectAuthors is forEachDialect with the second author.
func forEachDialectAuthors(t *testing.T, f func(t *testing.T, a *app)) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) { f(t, newApp(t, db, withAuthor2)) })
}

// draft creates a draft over HTTP as token and returns its answer.
func (a *app) draft(token, agent, body string) map[string]any {
	a.t.Helper()
	rec := a.do("POST", "/v1/agents/"+agent+"/drafts", token, body)
	m := a.ok(rec, 201)
	conforms(a.t, "Draft", rec.Body.Bytes())
	return m
}

// TestDrafts_ownershipAutosaveAndConflict: a draft starts from a
// version's config, is its principal's alone (another admin gets 404 on
// every route and lists none), autosaves with its revision, and a second
// tab's save on an old revision is 409 revision_conflict.
func TestDrafts_ownershipAutosaveAndConflict(t *testing.T) {
	forEachDialectAuthors(t, func(t *testing.T, a *app) {
		a.createVersion("writer", 0, "Hello.")
		d := a.draft(admin, "writer", `{"base_version": 1}`)
		id := d["id"].(string)
		if d["base_version"] != float64(1) || d["revision"] != float64(1) || d["config"].(map[string]any)["system"] != "Hello." ||
			!strings.HasPrefix(id, "drf_") {
			t.Fatalf("draft = %v", d)
		}
		base := "/v1/agents/writer/drafts/" + id
		for _, c := range []struct{ method, path, body string }{
			{"GET", base, ""}, {"PUT", base, `{"config": {"system": "x"}, "expected_revision": 1}`},
			{"POST", base + "/validate", ""}, {"POST", base + "/publish", `{"message": "m"}`}, {"DELETE", base, ""},
			{"POST", "/v1/agents/writer/preview", `{"draft_id": "` + id + `"}`},
		} {
			problem(t, a.do(c.method, c.path, author2, c.body), 404, "not_found")
		}
		if items := a.ok(a.do("GET", "/v1/agents/writer/drafts", author2, ""), 200)["items"].([]any); len(items) != 0 {
			t.Fatalf("author2 lists %v", items)
		}
		problem(t, a.do("GET", "/v1/agents/writer/drafts", runtime, ""), 403, "forbidden")

		rec := a.do("PUT", base, admin, `{"config": {"system": "Hi {{name}}."}, "expected_revision": 1}`)
		saved := a.ok(rec, 200)
		conforms(t, "Draft", rec.Body.Bytes())
		if saved["revision"] != float64(2) {
			t.Fatalf("saved = %v", saved)
		}
		probs := saved["problems"].([]any)
		if len(probs) != 1 || probs[0].(map[string]any)["code"] != "undeclared_variable" || probs[0].(map[string]any)["field"] != "config.system" {
			t.Fatalf("problems = %v", probs)
		}
		if rec := a.do("GET", base+"/diff", admin, ""); rec.Code != 200 || !strings.Contains(rec.Body.String(), `-  "system": "Hello."`) ||
			!strings.Contains(rec.Body.String(), `+  "system": "Hi {{name}}."`) {
			t.Fatalf("diff: %d %s", rec.Code, rec.Body)
		}
		problem(t, a.do("GET", base+"/diff", author2, ""), 404, "not_found")
		p := problem(t, a.do("PUT", base, admin, `{"config": {"system": "other tab"}, "expected_revision": 1}`), 409, "revision_conflict")
		if p["current_revision"] != float64(2) {
			t.Errorf("conflict = %v", p)
		}
		got := a.ok(a.do("GET", base, admin, ""), 200)
		if got["config"].(map[string]any)["system"] != "Hi {{name}}." || got["revision"] != float64(2) {
			t.Fatalf("after the conflict: %v", got)
		}
		// The list pages by cursor.
		a.draft(admin, "writer", `{"base_version": 1, "config": {"system": "two"}}`)
		page := a.ok(a.do("GET", "/v1/agents/writer/drafts?limit=1", admin, ""), 200)
		if items := page["items"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] != id || page["next"] != id {
			t.Fatalf("page 1 = %v", page)
		}
		page = a.ok(a.do("GET", "/v1/agents/writer/drafts?cursor="+id, admin, ""), 200)
		if items := page["items"].([]any); len(items) != 1 || page["next"] != nil {
			t.Fatalf("page 2 = %v", page)
		}
		if rec := a.do("DELETE", base, admin, ""); rec.Code != 204 {
			t.Fatalf("delete: %d %s", rec.Code, rec.Body)
		}
		problem(t, a.do("GET", base, admin, ""), 404, "not_found")
		// A draft is not a version: nothing of it resolves.
		if items := a.ok(a.do("GET", "/v1/agents/writer/versions", admin, ""), 200)["items"].([]any); len(items) != 1 {
			t.Fatalf("versions = %v", items)
		}
	})
}

// TestDrafts_validateListsEveryProblem: one call lists each problem a
// version create would stop at one by one, with its field; the fixed
// config validates clean.
func TestDrafts_validateListsEveryProblem(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.createVersion("checker", 0, "Hello.")
		bad := `{"system": "Hi {{name}} from {{company}}.", "skills": [{"name": "", "instructions": "x"}],
			"variables": {"tone": {"type": "enum"}}, "tools": [{"function": {"name": "f"}}], "memory": ["{{mood}}"]}`
		d := a.draft(admin, "checker", `{"base_version": 1, "config": `+bad+`}`)
		path := "/v1/agents/checker/drafts/" + d["id"].(string)
		rec := a.do("POST", path+"/validate", admin, "")
		v := a.ok(rec, 200)
		conforms(t, "DraftValidation", rec.Body.Bytes())
		fields := map[string]string{}
		for _, p := range v["problems"].([]any) {
			m := p.(map[string]any)
			fields[m["field"].(string)] = m["code"].(string)
		}
		want := map[string]string{"config.system": "undeclared_variable", "config.skills[0].name": "invalid_config",
			"config.tools[0].type": "invalid_config", "config.memory[0]": "undeclared_variable"}
		for f, code := range want {
			if fields[f] != code {
				t.Errorf("problem at %s = %q, want %s (all: %v)", f, fields[f], code, v["problems"])
			}
		}
		if v["valid"] != false || len(fields) < 5 {
			t.Errorf("validation = %v", v)
		}
		// The same config as a version: the create stops at one of them.
		if rec := a.do("POST", "/v1/agents/checker/versions", admin, `{"base_version": 1, "config": `+bad+`}`); rec.Code != 422 ||
			strings.Count(rec.Body.String(), `"field"`) != 1 {
			t.Errorf("create: %d %s", rec.Code, rec.Body)
		}
		good := `{"system": "Hi {{name}}.", "variables": {"name": {"required": true}}}`
		a.ok(a.do("PUT", path, admin, `{"config": `+good+`, "expected_revision": 1}`), 200)
		if v := a.ok(a.do("POST", path+"/validate", admin, ""), 200); v["valid"] != true || len(v["problems"].([]any)) != 0 {
			t.Fatalf("fixed = %v", v)
		}
	})
}

// TestDrafts_publishAndStaleBase: publish creates base+1 and deletes the
// draft (audited); a second author's draft from the old base is 409
// version_conflict, then merges with merge=true when the paths differ.
func TestDrafts_publishAndStaleBase(t *testing.T) {
	forEachDialectAuthors(t, func(t *testing.T, a *app) {
		a.ok(a.do("POST", "/v1/agents/pub/versions", admin,
			`{"base_version": 0, "config": {"system": "v1", "memory": ["m1"]}, "message": "v1"}`), 201)
		mine := a.draft(admin, "pub", `{"base_version": 1}`)
		theirs := a.draft(author2, "pub", `{"base_version": 1, "config": {"system": "v1", "memory": ["m2"]}}`)
		a.ok(a.do("PUT", "/v1/agents/pub/drafts/"+mine["id"].(string), admin, `{"config": {"system": "v2", "memory": ["m1"]}, "expected_revision": 1}`), 200)
		rec := a.do("POST", "/v1/agents/pub/drafts/"+mine["id"].(string)+"/publish", admin, `{"message": "from the console"}`)
		v := a.ok(rec, 201)
		conforms(t, "Version", rec.Body.Bytes())
		if v["version"] != float64(2) || v["message"] != "from the console" || v["created_by"] != "ops" {
			t.Fatalf("published = %v", v)
		}
		problem(t, a.do("GET", "/v1/agents/pub/drafts/"+mine["id"].(string), admin, ""), 404, "not_found")
		audit := a.ok(a.do("GET", "/v1/audit?agent=pub&action=draft.published", admin, ""), 200)
		if items := audit["items"].([]any); len(items) != 1 {
			t.Fatalf("audit = %v", audit)
		}
		tp := "/v1/agents/pub/drafts/" + theirs["id"].(string) + "/publish"
		p := problem(t, a.do("POST", tp, author2, `{"message": "stale"}`), 409, "version_conflict")
		if p["latest_version"] != float64(2) {
			t.Errorf("conflict = %v", p)
		}
		a.ok(a.do("GET", "/v1/agents/pub/drafts/"+theirs["id"].(string), author2, ""), 200) // kept
		m := a.ok(a.do("POST", tp, author2, `{"message": "merged", "merge": true}`), 201)
		cfg := m["config"].(map[string]any)
		if m["version"] != float64(3) || cfg["system"] != "v2" || fmt.Sprint(cfg["memory"]) != "[m2]" {
			t.Fatalf("merged = %v", m)
		}
	})
}

// TestDrafts_limits: a config over the size limit is 422 limit_exceeded
// (draft_bytes); past DraftMaxPerAgent drafts of one agent, 422
// limit_exceeded (drafts); bad bodies 400 invalid_field.
func TestDrafts_limits(t *testing.T) {
	a := sqliteApp(t)
	a.createVersion("lim", 0, "x")
	big := `{"system": "` + strings.Repeat("a", 1<<20) + `"}`
	body, _ := json.Marshal(map[string]any{"config": json.RawMessage(big), "base_version": 1})
	rec := a.do("POST", "/v1/agents/lim/drafts", admin, string(body))
	if rec.Code != 413 && rec.Code != 422 {
		t.Fatalf("big: %d %s", rec.Code, rec.Body)
	}
	for range 20 {
		a.draft(admin, "lim", `{"base_version": 1}`)
	}
	p := problem(t, a.do("POST", "/v1/agents/lim/drafts", admin, `{"base_version": 1}`), 422, "limit_exceeded")
	if p["field"] != "drafts" && p["limit"] == nil {
		t.Errorf("limit = %v", p)
	}
	problem(t, a.do("POST", "/v1/agents/lim/drafts", admin, `{}`), 400, "invalid_field")
	problem(t, a.do("POST", "/v1/agents/lim/drafts", admin, `{"base_version": 9}`), 404, "version_not_found")
	problem(t, a.do("POST", "/v1/agents/lim/drafts", admin, `{"base_version": 1, "Config": {}}`), 400, "invalid_field")
}
