package api_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPreview_sameAnswerAsAssemble: a preview of a version is byte for
// byte the answer of assemble in an env pointing at it, in both formats;
// a preview of an unpublished config or a draft assembles it, typed
// variables checked as assemble checks them, and nothing is written.
func TestPreview_sameAnswerAsAssemble(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.ok(a.do("POST", "/v1/agents/pv/versions", admin, `{"base_version": 0, "config": `+exampleConfig+`, "message": "v1"}`), 201)
		a.publish("pv", "staging", 1, 0)
		vars := `{"persona": "a helper", "company": "Initech"}`
		for _, format := range []string{"plain", "openai"} {
			want := a.do("POST", "/v1/agents/pv/envs/staging/assemble", runtime, `{"variables": `+vars+`, "format": "`+format+`"}`)
			got := a.do("POST", "/v1/agents/pv/preview", admin, `{"version": 1, "variables": `+vars+`, "format": "`+format+`"}`)
			if want.Code != 200 || got.Code != 200 || want.Body.String() != got.Body.String() {
				t.Fatalf("%s: assemble %d %s\npreview %d %s", format, want.Code, want.Body, got.Code, got.Body)
			}
		}
		cfg := `{"system": "Count {{n}} for {{who}}.", "variables": {"n": {"type": "number", "required": true}, "who": {"default": "you"}}}`
		rec := a.do("POST", "/v1/agents/pv/preview", admin, `{"config": `+cfg+`, "variables": {"n": 3},
			"history": [{"role": "user", "content": "hi"}]}`)
		m := a.ok(rec, 200)
		conforms(t, "Assembled", rec.Body.Bytes())
		msgs := m["messages"].([]any)
		if len(msgs) != 2 || msgs[0].(map[string]any)["content"] != "Count 3 for you." || msgs[1].(map[string]any)["content"] != "hi" ||
			m["version"] != float64(2) {
			t.Fatalf("preview = %v", m)
		}
		problem(t, a.do("POST", "/v1/agents/pv/preview", admin, `{"config": `+cfg+`, "variables": {"n": "three"}}`), 422, "invalid_variable")
		problem(t, a.do("POST", "/v1/agents/pv/preview", admin, `{"config": `+cfg+`}`), 422, "missing_variable")
		problem(t, a.do("POST", "/v1/agents/pv/preview", admin, `{"config": {"system": "{{x}}"}}`), 422, "undeclared_variable")
		problem(t, a.do("POST", "/v1/agents/pv/preview", admin, `{"version": 1, "config": `+cfg+`}`), 400, "invalid_field")
		problem(t, a.do("POST", "/v1/agents/pv/preview", admin, `{"version": 1, "Format": "openai"}`), 400, "invalid_field")
		problem(t, a.do("POST", "/v1/agents/pv/preview", runtime, `{"version": 1}`), 403, "forbidden")

		d := a.draft(admin, "pv", `{"base_version": 1, "config": `+cfg+`}`)
		rec = a.do("POST", "/v1/agents/pv/preview", admin, `{"draft_id": "`+d["id"].(string)+`", "variables": {"n": 7}, "format": "openai"}`)
		var oa map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &oa); rec.Code != 422 && (err != nil || oa["messages"] == nil) {
			t.Fatalf("draft preview: %d %s", rec.Code, rec.Body)
		}
		// openai without model.name is assemble's 422; with the plain format the draft assembles.
		m = a.ok(a.do("POST", "/v1/agents/pv/preview", admin, `{"draft_id": "`+d["id"].(string)+`", "variables": {"n": 7}}`), 200)
		if m["messages"].([]any)[0].(map[string]any)["content"] != "Count 7 for you." {
			t.Fatalf("draft preview = %v", m)
		}
		if items := a.ok(a.do("GET", "/v1/agents/pv/versions", admin, ""), 200)["items"].([]any); len(items) != 1 {
			t.Fatalf("preview wrote a version: %v", items)
		}
	})
}

// TestPreview_fragmentsPinnedAsPublishWould: a config referencing a
// fragment by env previews with the fragment's text as a publish would pin
// it now, and the same config's draft validates the reference: a missing
// fragment is a problem listed at config.fragments.
func TestPreview_fragmentsPinnedAsPublishWould(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.fragment("safety", 0, `"fragment": {"text": "Never share secrets."}`)
		a.ok(a.do("PUT", "/v1/fragments/safety/envs/prod", admin, `{"version": 1, "expected_revision": 0}`), 201)
		a.createVersion("fr", 0, "v1")
		cfg := `{"system": "Help. {{> safety}}", "fragments": {"safety": {"name": "safety", "env": "prod"}}}`
		m := a.ok(a.do("POST", "/v1/agents/fr/preview", admin, `{"config": `+cfg+`}`), 200)
		if got := m["messages"].([]any)[0].(map[string]any)["content"]; got != "Help. Never share secrets." {
			t.Fatalf("preview with a fragment: %v", got)
		}
		bad := `{"system": "Help. {{> safety}}", "fragments": {"safety": {"name": "nowhere", "env": "prod"}}}`
		d := a.draft(admin, "fr", `{"base_version": 1, "config": `+bad+`}`)
		v := a.ok(a.do("POST", "/v1/agents/fr/drafts/"+d["id"].(string)+"/validate", admin, ""), 200)
		probs := v["problems"].([]any)
		if v["valid"] != false || len(probs) == 0 || !strings.HasPrefix(probs[0].(map[string]any)["field"].(string), "config.fragments") {
			t.Fatalf("a missing fragment: %v", v)
		}
		rec := a.do("POST", "/v1/agents/fr/preview", admin, `{"config": `+bad+`}`)
		if rec.Code < 400 || rec.Code >= 500 {
			t.Fatalf("preview of a missing fragment: %d %s", rec.Code, rec.Body)
		}
	})
}
