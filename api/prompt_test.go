package api_test

import (
	"encoding/json"
	"strconv"
	"testing"
)

func TestPrompt_resolve_etagAnd304(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		const path = "/v1/agents/support/envs/prod/prompt"
		problem(t, a.do("GET", path, runtime, ""), 404, "agent_not_found")
		a.createVersion("support", 0, "one")
		problem(t, a.do("GET", path, runtime, ""), 409, "no_pointer")
		a.publish("support", "prod", 1, 0)

		rec := a.do("GET", path+"?user_id=alice%40example.com", runtime, "")
		p := a.ok(rec, 200)
		conforms(t, "Prompt", rec.Body.Bytes())
		if p["version"] != float64(1) || p["pinned"] != false || p["release"] != nil || p["repinned_from"] != nil ||
			p["config"].(map[string]any)["system"] != "one" {
			t.Fatalf("prompt = %v", p)
		}
		etag := rec.Header().Get("ETag")
		if len(etag) != 34 || rec.Header().Get("Cache-Control") != "private, no-cache" {
			t.Errorf("ETag %q, Cache-Control %q", etag, rec.Header().Get("Cache-Control"))
		}
		if cl := rec.Header().Get("Content-Length"); cl != strconv.Itoa(rec.Body.Len()) {
			t.Errorf("Content-Length %q for %d bytes", cl, rec.Body.Len())
		}
		if again := a.do("GET", path+"?user_id=alice%40example.com", runtime, ""); again.Body.String() != rec.Body.String() ||
			again.Header().Get("ETag") != etag {
			t.Errorf("a second resolve answered %s %s", again.Header().Get("ETag"), again.Body)
		}
		rec = a.do("GET", path+"?user_id=alice%40example.com", runtime, "", "If-None-Match", etag)
		if rec.Code != 304 || rec.Body.Len() != 0 || rec.Header().Get("ETag") != etag {
			t.Fatalf("304: %d %s", rec.Code, rec.Body)
		}
		// A new version behind the pointer changes the ETag.
		a.createVersion("support", 1, "two")
		a.publish("support", "prod", 2, 1)
		rec = a.do("GET", path+"?user_id=alice%40example.com", runtime, "", "If-None-Match", etag)
		if rec.Code != 200 || rec.Header().Get("ETag") == etag {
			t.Fatalf("after a switch: %d, ETag %s", rec.Code, rec.Header().Get("ETag"))
		}

		// Sessions are not available yet.
		problem(t, a.do("GET", path+"?session_id=s-1", runtime, ""), 404, "session_not_found")
		pr := problem(t, a.do("GET", path+"?session_id=s%7B1", runtime, ""), 400, "invalid_id")
		if pr["field"] != "session_id" {
			t.Errorf("field = %v", pr["field"])
		}
		pr = problem(t, a.do("GET", path+"?user_id=", runtime, ""), 400, "invalid_id")
		if pr["field"] != "user_id" {
			t.Errorf("field = %v", pr["field"])
		}
		problem(t, a.do("GET", path+"?user_id=a%01b", runtime, ""), 400, "invalid_id")
	})
}

func TestAssemble_systemMessage_isByteExact(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.ok(a.do("POST", "/v1/agents/support/versions", admin, `{"base_version": 0, "config": `+exampleConfig+`}`), 201)
		a.publish("support", "prod", 1, 0)
		const path = "/v1/agents/support/envs/prod/assemble"

		rec := a.do("POST", path, runtime, `{"user_id": "u-1", "variables": {"persona": "a support agent", "extra": "ignored"}, "history": true}`)
		out := a.ok(rec, 200)
		conforms(t, "Assembled", rec.Body.Bytes())
		var got struct {
			Messages []struct{ Role, Content string }
			Tools    []map[string]any
			Model    map[string]any
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		want := "You are a support agent for ACME.\n\n# Skills\n\n## refunds\nRefunds within 30 days.\n\n# Memory\n- Customer prefers email."
		if len(got.Messages) != 1 || got.Messages[0].Role != "system" || got.Messages[0].Content != want {
			t.Fatalf("messages = %q\nwant %q", got.Messages, want)
		}
		if len(got.Tools) != 1 || got.Model["name"] != "gpt-4o" || out["version"] != float64(1) || out["pinned"] != false {
			t.Errorf("assembled = %s", rec.Body)
		}

		p := problem(t, a.do("POST", path, runtime, `{"variables": {}}`), 422, "missing_variable")
		if p["variable"] != "persona" {
			t.Errorf("variable = %v", p["variable"])
		}
		p = problem(t, a.do("POST", path, runtime, `{"variables": {"persona": 42}}`), 422, "invalid_variable")
		if p["variable"] != "persona" {
			t.Errorf("variable = %v", p["variable"])
		}
		p = problem(t, a.do("POST", path, runtime, `{"variables": ["persona"]}`), 400, "invalid_field")
		if p["field"] != "variables" {
			t.Errorf("field = %v", p["field"])
		}
		problem(t, a.do("POST", path, runtime, `{"session_id": "s-1", "variables": {"persona": "x"}}`), 404, "session_not_found")
		problem(t, a.do("POST", path, runtime, `{"max_history_turns": -1, "variables": {"persona": "x"}}`), 400, "invalid_field")
		problem(t, a.do("POST", path, runtime, `{"history": "yes"}`), 400, "invalid_field")
	})
}
