package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	pbundle "github.com/promptd/promptd/bundle"
)

// fragment creates a fragment version over HTTP and returns its answer.
func (a *app) fragment(name string, base int, body string) map[string]any {
	a.t.Helper()
	rec := a.do("POST", "/v1/fragments/"+name+"/versions", admin, fmt.Sprintf(`{"base_version": %d, %s}`, base, body))
	m := a.ok(rec, 201)
	conforms(a.t, "FragmentVersion", rec.Body.Bytes())
	return m
}

// TestFragments_createListGetEnvs: versions, a stale base, lists, one
// version with its ETag, env pointers with revisions, audit rows.
func TestFragments_createListGetEnvs(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		v1 := a.fragment("safety", 0, `"fragment": {"text": "Never share secrets."}, "message": "first"`)
		if v1["version"] != float64(1) || v1["created_by"] != "ops" || !strings.HasPrefix(v1["content_hash"].(string), "sha256:") ||
			v1["fragment"].(map[string]any)["text"] != "Never share secrets." {
			t.Fatalf("v1 = %v", v1)
		}
		v2 := a.fragment("safety", 1, `"fragment": {"text": "Never share secrets of {{company}}."}, "variables": {"company": {"default": "ACME"}}`)
		if v2["version"] != float64(2) || v2["content_hash"] == v1["content_hash"] {
			t.Fatalf("v2 = %v", v2)
		}
		p := problem(t, a.do("POST", "/v1/fragments/safety/versions", admin, `{"base_version": 1, "fragment": {"text": "x"}}`), 409, "version_conflict")
		if p["latest_version"] != float64(2) {
			t.Errorf("latest_version = %v", p["latest_version"])
		}
		a.fragment("examples", 0, `"fragment": {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}`)

		rec := a.do("GET", "/v1/fragments?limit=1", runtime, "")
		page := a.ok(rec, 200)
		conforms(t, "FragmentList", rec.Body.Bytes())
		if items := page["items"].([]any); len(items) != 1 || items[0].(map[string]any)["name"] != "examples" || page["next"] != "examples" {
			t.Fatalf("page 1 = %v", page)
		}
		page = a.ok(a.do("GET", "/v1/fragments?cursor=examples", runtime, ""), 200)
		if items := page["items"].([]any); len(items) != 1 || items[0].(map[string]any)["latest_version"] != float64(2) || page["next"] != nil {
			t.Fatalf("page 2 = %v", page)
		}
		rec = a.do("GET", "/v1/fragments/safety/versions?limit=1", runtime, "")
		page = a.ok(rec, 200)
		conforms(t, "FragmentVersionList", rec.Body.Bytes())
		if items := page["items"].([]any); len(items) != 1 || items[0].(map[string]any)["version"] != float64(2) || page["next"] != "2" {
			t.Fatalf("versions page 1 = %v", page)
		}
		rec = a.do("GET", "/v1/fragments/safety/versions/1", runtime, "")
		got := a.ok(rec, 200)
		if etag := rec.Header().Get("ETag"); etag != `"`+v1["content_hash"].(string)+`"` || got["content_hash"] != v1["content_hash"] {
			t.Errorf("ETag %s, got %v", etag, got)
		}
		problem(t, a.do("GET", "/v1/fragments/safety/versions/9", runtime, ""), 404, "not_found")
		problem(t, a.do("GET", "/v1/fragments/nothing/versions", runtime, ""), 404, "not_found")

		rec = a.do("PUT", "/v1/fragments/safety/envs/prod", admin, `{"version": 1, "expected_revision": 0}`)
		e := a.ok(rec, 201)
		conforms(t, "FragmentEnv", rec.Body.Bytes())
		if e["version"] != float64(1) || e["revision"] != float64(1) {
			t.Fatalf("env = %v", e)
		}
		problem(t, a.do("PUT", "/v1/fragments/safety/envs/prod", admin, `{"version": 2, "expected_revision": 0}`), 409, "revision_conflict")
		problem(t, a.do("PUT", "/v1/fragments/safety/envs/prod", admin, `{"version": 7, "expected_revision": 1}`), 400, "invalid_field")
		e = a.ok(a.do("PUT", "/v1/fragments/safety/envs/prod", admin, `{"version": 2, "expected_revision": 1}`), 200)
		if e["version"] != float64(2) || e["revision"] != float64(2) {
			t.Fatalf("moved env = %v", e)
		}
		if g := a.ok(a.do("GET", "/v1/fragments/safety/envs/prod", runtime, ""), 200); g["version"] != float64(2) {
			t.Fatalf("GET env = %v", g)
		}
		problem(t, a.do("GET", "/v1/fragments/safety/envs/staging", runtime, ""), 404, "not_found")
		// Writes are the admin's.
		problem(t, a.do("POST", "/v1/fragments/safety/versions", runtime, `{"base_version": 2, "fragment": {"text": "x"}}`), 403, "forbidden")
		problem(t, a.do("PUT", "/v1/fragments/safety/envs/prod", runtime, `{"version": 1, "expected_revision": 2}`), 403, "forbidden")

		var n int64
		a.db.Raw(`SELECT COUNT(*) FROM audit_events WHERE action IN ('fragment.version.created', 'fragment.env.moved')`).Scan(&n)
		if n != 5 { // 3 versions, 2 pointer writes
			t.Errorf("audit rows = %d, want 5", n)
		}
	})
}

// TestFragments_strictBodies: unknown or mis-cased members are 400
// invalid_field with their path; a body with neither text nor messages
// is 400 too.
func TestFragments_strictBodies(t *testing.T) {
	a := sqliteApp(t)
	for _, c := range []struct{ path, body, field string }{
		{"/v1/fragments/f/versions", `{"base_version": 0, "fragment": {"text": "x"}, "extra": 1}`, "extra"},
		{"/v1/fragments/f/versions", `{"Base_Version": 0, "fragment": {"text": "x"}}`, "Base_Version"},
		{"/v1/fragments/f/versions", `{"base_version": 0, "fragment": {"Text": "x"}}`, "fragment.Text"},
		{"/v1/fragments/f/versions", `{"base_version": 0, "fragment": {"messages": [{"role": "user", "content": "x", "name": "n"}]}}`, "fragment.messages[0].name"},
		{"/v1/fragments/f/versions", `{"base_version": 0, "fragment": {}}`, "fragment"},
		{"/v1/fragments/f/versions", `{"fragment": {"text": "x"}}`, "base_version"},
	} {
		p := problem(t, a.do("POST", c.path, admin, c.body), 400, "invalid_field")
		if p["field"] != c.field {
			t.Errorf("%s: field %v, want %s", c.body, p["field"], c.field)
		}
	}
	a.fragment("f", 0, `"fragment": {"text": "x"}`)
	for _, c := range []struct{ body, field string }{
		{`{"version": 1, "expected_revision": 0, "Reason": "x"}`, "Reason"},
		{`{"Version": 1, "expected_revision": 0}`, "Version"},
		{`{"version": 1}`, "expected_revision"},
	} {
		p := problem(t, a.do("PUT", "/v1/fragments/f/envs/prod", admin, c.body), 400, "invalid_field")
		if p["field"] != c.field {
			t.Errorf("%s: field %v, want %s", c.body, p["field"], c.field)
		}
	}
}

// TestFragments_publishRefusals: a missing fragment, a missing env
// pointer, an undeclared alias, a cycle, nesting too deep, a variable of
// another type, a text fragment used as messages: 422 naming the field;
// nothing written.
func TestFragments_publishRefusals(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.fragment("safety", 0, `"fragment": {"text": "Be safe, {{company}}."}, "variables": {"company": {"type": "string", "default": "ACME"}}`)
		a.fragment("b", 0, `"fragment": {"text": "b"}`)
		a.fragment("a", 0, `"fragment": {"text": "a {{> b}}"}, "fragments": {"b": {"name": "b", "version": 1}}`)
		for _, c := range []struct{ name, config, field, detail string }{
			{"missing version", `{"system": "{{> s}}", "fragments": {"s": {"name": "safety", "version": 4}}}`, "config.fragments.s", "does not exist"},
			{"missing fragment", `{"system": "{{> s}}", "fragments": {"s": {"name": "nope", "version": 1}}}`, "config.fragments.s", "does not exist"},
			{"missing env", `{"system": "{{> s}}", "fragments": {"s": {"name": "safety", "env": "prod"}}}`, "config.fragments.s", "in env prod"},
			{"undeclared alias", `{"system": "{{> other}}", "fragments": {"s": {"name": "safety", "version": 1}}}`, "config.fragments.other", "names no fragment"},
			{"undeclared alias without fragments", `{"system": "{{> other}}"}`, "config.fragments.other", "names no fragment"},
			{"type clash", `{"system": "{{> s}}", "variables": {"company": {"type": "number"}}, "fragments": {"s": {"name": "safety", "version": 1}}}`, "config.variables.company", "is number here and string"},
			{"text as messages", `{"system": "x", "messages": [{"fragment": "s"}], "fragments": {"s": {"name": "safety", "version": 1}}}`, "config.messages[0].fragment", "text fragment"},
			{"unknown member", `{"system": "x", "fragments": {"s": {"name": "safety", "version": 1, "Version": 2}}}`, "config.fragments.s.Version", "unknown field"},
			{"forged hash", `{"system": "{{> s}}", "fragments": {"s": {"name": "safety", "version": 1, "content_hash": "sha256:00"}}}`, "config.fragments.s.content_hash", "not sha256:00"},
		} {
			body, _ := json.Marshal(map[string]any{"base_version": 0, "config": json.RawMessage(c.config)})
			p := problem(t, a.do("POST", "/v1/agents/bot/versions", admin, string(body)), 422, "invalid_config")
			if p["field"] != c.field || !strings.Contains(p["detail"].(string), c.detail) {
				t.Errorf("%s: field %v detail %v, want %s / %s", c.name, p["field"], p["detail"], c.field, c.detail)
			}
		}
		// A cycle by name: c2 includes c1; c1 v2 including c2 would include itself.
		a.fragment("c1", 0, `"fragment": {"text": "c1"}`)
		a.fragment("c2", 0, `"fragment": {"text": "c2 {{> c}}"}, "fragments": {"c": {"name": "c1", "version": 1}}`)
		p := problem(t, a.do("POST", "/v1/fragments/c1/versions", admin, `{"base_version": 1, "fragment": {"text": "{{> c}}"}, "fragments": {"c": {"name": "c2", "version": 1}}}`), 422, "invalid_config")
		if p["field"] != "fragment.fragments.c" || !strings.Contains(p["detail"].(string), "fragment cycle: c1 -> c2 -> c1") {
			t.Errorf("cycle: %v", p)
		}
		p = problem(t, a.do("POST", "/v1/fragments/a/versions", admin, `{"base_version": 1, "fragment": {"text": "{{> me}}"}, "fragments": {"me": {"name": "a", "version": 1}}}`), 422, "invalid_config")
		if !strings.Contains(p["detail"].(string), "fragment cycle: a -> a") {
			t.Errorf("self: %v", p)
		}
		// Depth: d1 <- d2 <- d3 <- d4 <- d5; a config including d5 nests 5 deep.
		a.fragment("d1", 0, `"fragment": {"text": "1"}`)
		for i := 2; i <= 5; i++ {
			rec := a.do("POST", fmt.Sprintf("/v1/fragments/d%d/versions", i), admin,
				fmt.Sprintf(`{"base_version": 0, "fragment": {"text": "%d {{> x}}"}, "fragments": {"x": {"name": "d%d", "version": 1}}}`, i, i-1))
			if i <= 4 && rec.Code != 201 {
				t.Fatalf("d%d: %d %s", i, rec.Code, rec.Body)
			}
			if i == 5 {
				p := problem(t, rec, 422, "invalid_config")
				if !strings.Contains(p["detail"].(string), "nest at most 4 deep") {
					t.Errorf("depth: %v", p)
				}
			}
		}
		if rec := a.do("POST", "/v1/agents/deep/versions", admin, `{"base_version": 0, "config": {"system": "{{> x}}", "fragments": {"x": {"name": "d4", "version": 1}}}}`); rec.Code != 201 {
			t.Errorf("4 deep: %d %s", rec.Code, rec.Body)
		}
		var n int64
		a.db.Raw(`SELECT COUNT(*) FROM prompt_versions WHERE agent = 'bot'`).Scan(&n)
		if n != 0 {
			t.Errorf("refused publishes wrote %d versions", n)
		}
	})
}

// TestFragments_pinnedAtPublish_usedBy_andByteIdenticalAfterNewVersion: 3
// agents use a fragment (one by env); publishing fragment v2 and moving
// the env leaves the 3 agents' versions byte-identical; used-by of v1
// lists the 3 with their envs; the next publish of the env reference
// picks v2 up; propose names it beforehand and writes nothing.
func TestFragments_pinnedAtPublish_usedBy_andByteIdenticalAfterNewVersion(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		f1 := a.fragment("safety", 0, `"fragment": {"text": "Never share secrets of {{company}}."}, "variables": {"company": {"default": "ACME"}}`)
		a.ok(a.do("PUT", "/v1/fragments/safety/envs/prod", admin, `{"version": 1, "expected_revision": 0}`), 201)
		refs := map[string]string{"alpha": `{"name": "safety", "version": 1}`, "beta": `{"name": "safety", "version": 1}`, "gamma": `{"name": "safety", "env": "prod"}`}
		before := map[string]string{}
		for _, agent := range []string{"alpha", "beta", "gamma"} {
			rec := a.do("POST", "/v1/agents/"+agent+"/versions", admin, `{"base_version": 0, "config": {"system": "`+agent+`: {{> safety}}", "fragments": {"safety": `+refs[agent]+`}}}`)
			v := a.ok(rec, 201)
			conforms(t, "Version", rec.Body.Bytes())
			pin := v["config"].(map[string]any)["fragments"].(map[string]any)["safety"].(map[string]any)
			if pin["version"] != float64(1) || pin["content_hash"] != f1["content_hash"] || pin["text"] != "Never share secrets of {{company}}." {
				t.Fatalf("%s pinned %v", agent, pin)
			}
			a.publish(agent, "prod", 1, 0)
			before[agent] = a.do("GET", "/v1/agents/"+agent+"/versions/1", runtime, "").Body.String()
		}
		out := a.ok(a.do("POST", "/v1/agents/alpha/envs/prod/assemble", runtime, `{"variables": {"company": "Globex"}}`), 200)
		if c := out["messages"].([]any)[0].(map[string]any)["content"]; c != "alpha: Never share secrets of Globex." {
			t.Errorf("assembled %v", c)
		}

		// propose: who would pick a new version up (gamma, by env); nothing written.
		rec := a.do("POST", "/v1/fragments/safety/versions", admin, `{"base_version": 1, "fragment": {"text": "v2 {{company}}"}, "variables": {"company": {"default": "ACME"}}, "propose": true}`)
		prop := a.ok(rec, 200)
		conforms(t, "FragmentVersion", rec.Body.Bytes())
		if items, _ := prop["proposal"].([]any); len(items) != 1 || items[0].(map[string]any)["agent"] != "gamma" || items[0].(map[string]any)["env"] != "prod" {
			t.Fatalf("proposal = %v", prop["proposal"])
		}
		if l := a.ok(a.do("GET", "/v1/fragments/safety/versions", runtime, ""), 200); len(l["items"].([]any)) != 1 {
			t.Fatalf("propose wrote a version: %v", l)
		}

		a.fragment("safety", 1, `"fragment": {"text": "v2 {{company}}"}, "variables": {"company": {"default": "ACME"}}`)
		a.ok(a.do("PUT", "/v1/fragments/safety/envs/prod", admin, `{"version": 2, "expected_revision": 1}`), 200)
		for agent, body := range before {
			if now := a.do("GET", "/v1/agents/"+agent+"/versions/1", runtime, "").Body.String(); now != body {
				t.Errorf("%s v1 changed:\n%s\n%s", agent, body, now)
			}
		}
		if c := a.ok(a.do("POST", "/v1/agents/gamma/envs/prod/assemble", runtime, `{}`), 200)["messages"].([]any)[0].(map[string]any)["content"]; c != "gamma: Never share secrets of ACME." {
			t.Errorf("gamma after fragment v2: %v", c)
		}

		rec = a.do("GET", "/v1/fragments/safety/versions/1/used-by?limit=2", runtime, "")
		page := a.ok(rec, 200)
		conforms(t, "FragmentUseList", rec.Body.Bytes())
		items := page["items"].([]any)
		if len(items) != 2 || items[0].(map[string]any)["agent"] != "alpha" || page["next"] != "beta/1" ||
			fmt.Sprint(items[0].(map[string]any)["envs"]) != "[prod]" {
			t.Fatalf("used-by page 1 = %v", page)
		}
		page = a.ok(a.do("GET", "/v1/fragments/safety/versions/1/used-by?cursor=beta/1", runtime, ""), 200)
		if items := page["items"].([]any); len(items) != 1 || items[0].(map[string]any)["agent"] != "gamma" || page["next"] != nil {
			t.Fatalf("used-by page 2 = %v", page)
		}
		if l := a.ok(a.do("GET", "/v1/fragments/safety/versions/2/used-by", runtime, ""), 200); len(l["items"].([]any)) != 0 {
			t.Fatalf("used-by v2 before any publish = %v", l)
		}

		// gamma's next version, its config sent back as served, picks up v2 through the env.
		var v struct {
			Config json.RawMessage `json:"config"`
		}
		_ = json.Unmarshal([]byte(before["gamma"]), &v)
		body, _ := json.Marshal(map[string]any{"base_version": 1, "config": v.Config})
		g2 := a.ok(a.do("POST", "/v1/agents/gamma/versions", admin, string(body)), 201)
		if pin := g2["config"].(map[string]any)["fragments"].(map[string]any)["safety"].(map[string]any); pin["version"] != float64(2) || pin["env"] != "prod" {
			t.Fatalf("gamma v2 pinned %v", pin)
		}
		// alpha's config sent back as served pins the same version: the same bytes, the same hash.
		_ = json.Unmarshal([]byte(before["alpha"]), &v)
		body, _ = json.Marshal(map[string]any{"base_version": 1, "config": v.Config})
		a2 := a.ok(a.do("POST", "/v1/agents/alpha/versions", admin, string(body)), 201)
		var a1 map[string]any
		_ = json.Unmarshal([]byte(before["alpha"]), &a1)
		if a2["content_hash"] != a1["content_hash"] {
			t.Errorf("alpha re-published: %v, was %v", a2["content_hash"], a1["content_hash"])
		}
		if l := a.ok(a.do("GET", "/v1/fragments/safety/versions/2/used-by", runtime, ""), 200); len(l["items"].([]any)) != 1 {
			t.Fatalf("used-by v2 = %v", l)
		}
	})
}

// TestFragments_scopedTokens_areRefused: a fragment is not an agent; a
// scoped token reaches no fragment route (403), an unscoped runtime
// token reads.
func TestFragments_scopedTokens_areRefused(t *testing.T) {
	a := sqliteApp(t)
	a.fragment("safety", 0, `"fragment": {"text": "x"}`)
	tok := a.createToken(`{"name": "team-a-runtime", "role": "runtime", "scopes": {"agents": ["team-a-*"]}}`)
	adm := a.createToken(`{"name": "team-a-admin", "role": "admin", "scopes": {"agents": ["team-a-*"]}}`)
	for _, c := range []struct{ tok, method, path, body string }{
		{tok, "GET", "/v1/fragments", ""},
		{tok, "GET", "/v1/fragments/safety/versions", ""},
		{tok, "GET", "/v1/fragments/safety/versions/1", ""},
		{tok, "GET", "/v1/fragments/safety/versions/1/used-by", ""},
		{tok, "GET", "/v1/fragments/safety/envs/prod", ""},
		{adm, "POST", "/v1/fragments/safety/versions", `{"base_version": 1, "fragment": {"text": "y"}}`},
		{adm, "PUT", "/v1/fragments/safety/envs/prod", `{"version": 1, "expected_revision": 0}`},
	} {
		problem(t, a.do(c.method, c.path, c.tok, c.body), 403, "forbidden")
	}
	a.ok(a.do("GET", "/v1/fragments/safety/versions/1", runtime, ""), 200)
}

// TestFragments_bundleServesPinnedConfigs_andTheGoEvaluatorAgrees: the
// bundle holds the pinned config (valid against the Bundle schema), and
// package bundle assembles from it the server's exact bytes.
func TestFragments_bundleServesPinnedConfigs_andTheGoEvaluatorAgrees(t *testing.T) {
	a := sqliteApp(t)
	a.fragment("tone", 0, `"fragment": {"text": "Tone: {{tone}}."}, "variables": {"tone": {"type": "enum", "values": ["calm", "firm"], "default": "calm"}}`)
	a.fragment("examples", 0, `"fragment": {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "{{> t}} Hello {{who}}."}]},
		"variables": {"who": {"required": true}}, "fragments": {"t": {"name": "tone", "version": 1}}`)
	a.ok(a.do("POST", "/v1/agents/support/versions", admin, `{"base_version": 0, "config": {"system": "S {{> t}}", "messages": [{"fragment": "ex"}],
		"fragments": {"t": {"name": "tone", "version": 1}, "ex": {"name": "examples", "version": 1}}}}`), 201)
	a.publish("support", "prod", 1, 0)
	rec := a.do("GET", "/v1/bundle", runtime, "")
	if rec.Code != 200 {
		t.Fatalf("bundle: %d %s", rec.Code, rec.Body)
	}
	conforms(t, "Bundle", rec.Body.Bytes())
	var b pbundle.Bundle
	if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
		t.Fatal(err)
	}
	ev, err := pbundle.New(&b)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]json.RawMessage{"who": json.RawMessage(`"Ada"`), "tone": json.RawMessage(`"firm"`)}
	local, _, err := ev.Assemble(pbundle.Request{Agent: "support", Env: "prod", Variables: vars})
	if err != nil {
		t.Fatal(err)
	}
	server := a.do("POST", "/v1/agents/support/envs/prod/assemble", runtime, `{"variables": {"who": "Ada", "tone": "firm"}}`)
	if !bytes.Equal(bytes.TrimSpace(local), bytes.TrimSpace(server.Body.Bytes())) {
		t.Fatalf("local  %s\nserver %s", local, server.Body)
	}
	if !strings.Contains(string(local), `"content":"Tone: firm. Hello Ada."`) || !strings.Contains(string(local), `"content":"S Tone: firm."`) {
		t.Fatalf("assembled %s", local)
	}
}
