package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
)

// chatConfig uses every part of a config: model keys besides name,
// tools, skills, memory and chat template messages.
const chatConfig = `{"system": "You are {{persona}}.",
 "tools": [{"type": "function", "function": {"name": "lookup_order", "description": "Find an order", "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}}],
 "skills": [{"name": "refunds", "instructions": "Refunds within {{days}} days."}],
 "memory": ["Customer prefers email."],
 "messages": [{"role": "user", "content": "Where is order {{example}}?"}, {"role": "assistant", "content": "Let me look that up."}],
 "model": {"name": "gpt-4o", "temperature": 0.2, "max_completion_tokens": 512},
 "variables": {"persona": {"required": true}, "days": {"default": "30"}, "example": {"default": "A-1"}}}`

// chatApp publishes chatConfig as support/prod v1 and opens session s1
// with a tool-calling exchange in its history.
func chatApp(t *testing.T) *app {
	a := sqliteApp(t)
	a.ok(a.do("POST", "/v1/agents/support/versions", admin, `{"base_version": 0, "config": `+chatConfig+`}`), 201)
	a.publish("support", "prod", 1, 0)
	a.ok(a.do("POST", "/v1/sessions", runtime, `{"session_id": "s1", "agent": "support", "env": "prod", "user_id": "u1"}`), 201)
	a.ok(a.do("POST", "/v1/sessions/s1/turns", runtime, `{"expected_revision": 0, "turns": [
		{"role": "user", "content": "Where is order 42?", "metadata": {"ui": "web"}},
		{"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "lookup_order", "arguments": "{\"id\":\"42\"}"}}]},
		{"role": "tool", "tool_call_id": "call_1", "content": "{\"status\":\"shipped\"}"}]}`), 201)
	return a
}

// openAIParams unmarshals an assembled body into the official SDK's
// request type and checks what issue 13 found wrong: Model must be the
// name, messages and tools must come through.
func openAIParams(t *testing.T, body []byte, wantMessages, wantTools int) openai.ChatCompletionNewParams {
	t.Helper()
	var p openai.ChatCompletionNewParams
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("openai-go does not take the body: %v\n%s", err, body)
	}
	if p.Model != "gpt-4o" {
		t.Errorf("Model = %q, want gpt-4o", p.Model)
	}
	if len(p.Messages) != wantMessages || len(p.Tools) != wantTools {
		t.Errorf("%d messages, %d tools; want %d, %d", len(p.Messages), len(p.Tools), wantMessages, wantTools)
	}
	return p
}

func TestAssemble_formatOpenAI_isAnOpenAIGoRequest(t *testing.T) {
	a := chatApp(t)
	const path = "/v1/agents/support/envs/prod/assemble"
	rec := a.do("POST", path+"?format=openai", runtime, `{"session_id": "s1", "history": true, "variables": {"persona": "a support agent"}}`)
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	p := openAIParams(t, rec.Body.Bytes(), 6, 1)
	if !p.Temperature.Valid() || p.Temperature.Value != 0.2 || p.MaxCompletionTokens.Value != 512 {
		t.Errorf("temperature %v, max_completion_tokens %v", p.Temperature, p.MaxCompletionTokens)
	}
	roles := []string{}
	for _, m := range p.Messages {
		roles = append(roles, *m.GetRole())
	}
	if strings.Join(roles, ",") != "system,user,assistant,user,assistant,tool" {
		t.Errorf("roles = %v", roles)
	}
	if u := p.Messages[1].OfUser; u == nil || u.Content.OfString.Value != "Where is order A-1?" {
		t.Errorf("config message = %+v", p.Messages[1])
	}
	if as := p.Messages[4].OfAssistant; as == nil || len(as.ToolCalls) != 1 || as.ToolCalls[0].OfFunction.ID != "call_1" ||
		as.ToolCalls[0].OfFunction.Function.Arguments != `{"id":"42"}` {
		t.Errorf("assistant turn = %+v", p.Messages[4])
	}
	if tm := p.Messages[5].OfTool; tm == nil || tm.ToolCallID != "call_1" {
		t.Errorf("tool turn = %+v", p.Messages[5])
	}
	if f := p.Tools[0].OfFunction; f == nil || f.Function.Name != "lookup_order" {
		t.Errorf("tool = %+v", p.Tools[0])
	}
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(rec.Body.Bytes(), &raw)
	if strings.Contains(string(raw["messages"]), "metadata") || raw["version"] != nil {
		t.Errorf("the body carries more than a request: %s", rec.Body)
	}
	if rec.Header().Get("Promptd-Version") != "support/prod/1" {
		t.Errorf("Promptd-Version = %q", rec.Header().Get("Promptd-Version"))
	}

	// The body's "format" does the same; no tools: no "tools" key.
	a.ok(a.do("POST", "/v1/agents/support/versions", admin, `{"base_version": 1, "config": {"system": "s", "model": {"name": "gpt-4o"}}}`), 201)
	a.publish("support", "staging", 2, 0)
	rec = a.do("POST", "/v1/agents/support/envs/staging/assemble", runtime, `{"format": "openai"}`)
	if rec.Code != 200 || strings.Contains(rec.Body.String(), `"tools"`) {
		t.Fatalf("without tools: %d %s", rec.Code, rec.Body)
	}
	openAIParams(t, rec.Body.Bytes(), 1, 0)
}

// The control: the plain shape (what issue 13 sent to the SDK) fails the
// same check, so the check can tell.
func TestAssemble_plainShape_isNotAnOpenAIGoRequest(t *testing.T) {
	a := chatApp(t)
	rec := a.do("POST", "/v1/agents/support/envs/prod/assemble", runtime, `{"session_id": "s1", "history": true, "variables": {"persona": "x"}}`)
	var p openai.ChatCompletionNewParams
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err == nil && p.Model == "gpt-4o" {
		t.Fatalf("the plain shape passed as an OpenAI request: Model %q", p.Model)
	}
	if !strings.HasPrefix(string(p.Model), "{") {
		t.Errorf("Model = %q: expected the object's JSON text, as issue 13 reported", p.Model)
	}
}

func TestAssemble_format_whenQueryAndBodyDiffer_is400(t *testing.T) {
	a := chatApp(t)
	const path = "/v1/agents/support/envs/prod/assemble"
	p := problem(t, a.do("POST", path+"?format=openai", runtime, `{"format": "plain", "variables": {"persona": "x"}}`), 400, "invalid_field")
	if p["field"] != "format" {
		t.Errorf("field = %v", p["field"])
	}
	problem(t, a.do("POST", path+"?format=anthropic", runtime, `{"variables": {"persona": "x"}}`), 400, "invalid_field")
	problem(t, a.do("POST", path, runtime, `{"format": 1, "variables": {"persona": "x"}}`), 400, "invalid_field")
	if rec := a.do("POST", path+"?format=openai", runtime, `{"format": "openai", "variables": {"persona": "x"}}`); rec.Code != 200 {
		t.Errorf("same format twice: %d %s", rec.Code, rec.Body)
	}
	// No model: the openai shape cannot be made. (A model without name is
	// refused at publish: TestCreateVersion_chatTemplateAndModelKeys_areValidated.)
	a.ok(a.do("POST", "/v1/agents/other/versions", admin, `{"base_version": 0, "config": {"system": "s"}}`), 201)
	a.publish("other", "prod", 1, 0)
	p = problem(t, a.do("POST", "/v1/agents/other/envs/prod/assemble?format=openai", runtime, `{}`), 422, "invalid_config")
	if p["field"] != "config.model.name" {
		t.Errorf("field = %v", p["field"])
	}
}

func TestCreateVersion_chatTemplateAndModelKeys_areValidated(t *testing.T) {
	a := sqliteApp(t)
	for body, field := range map[string]string{
		`{"system": "s", "model": {"name": "m", "messages": []}}`:                "config.model.messages",
		`{"system": "s", "model": {"name": "m", "stream": true}}`:                "config.model.stream",
		`{"system": "s", "model": {"name": "m", "tools": []}}`:                   "config.model.tools",
		`{"system": "s", "model": {"name": "m", "model": "x"}}`:                  "config.model.model",
		`{"system": "s", "model": {"name": 4}}`:                                  "config.model.name",
		`{"system": "s", "model": {"temperature": 1}}`:                           "config.model.name",
		`{"system": "s", "model": {"name": "m", "temprature": 1}}`:               "config.model.temprature",
		`{"system": "s", "model": {"name": "m", "extra": {"stream": true}}}`:     "config.model.extra.stream",
		`{"system": "s", "messages": [{"role": "tool", "content": "x"}]}`:        "config.messages[0].role",
		`{"system": "s", "messages": [{"role": "user"}]}`:                        "config.messages[0].content",
		`{"system": "s", "messages": [{"role": "user", "content": 1}]}`:          "config.messages",
		`{"system": "s", "messages": [{"role": "user", "content": "", "x": 1}]}`: "config.messages",
	} {
		p := problem(t, a.do("POST", "/v1/agents/support/versions", admin, `{"base_version": 0, "config": `+body+`}`), 422, "invalid_config")
		if p["field"] != field {
			t.Errorf("%s: field %v, want %s", body, p["field"], field)
		}
	}
	p := problem(t, a.do("POST", "/v1/agents/support/versions", admin, `{"base_version": 0, "config": {"system": "s", "messages": [{"role": "user", "content": "{{who}}"}]}}`), 422, "undeclared_variable")
	if p["variable"] != "who" {
		t.Errorf("variable = %v", p["variable"])
	}
	many := strings.Repeat(`{"role": "user", "content": "x"},`, 101)
	problem(t, a.do("POST", "/v1/agents/support/versions", admin, `{"base_version": 0, "config": {"system": "s", "messages": [`+many[:len(many)-1]+`]}}`), 422, "invalid_config")
}

func TestResolve_withRelease_namesItInHeadersAndTrace(t *testing.T) {
	a := sqliteApp(t)
	a.createVersion("support", 0, "one")
	a.publish("support", "prod", 1, 0)
	a.ok(a.do("POST", "/v1/sessions", runtime, `{"session_id": "s1", "agent": "support", "env": "prod", "user_id": "u1"}`), 201)
	a.createVersion("support", 1, "two")
	rel := a.ok(a.do("POST", "/v1/agents/support/envs/prod/releases", admin, `{"candidate_version": 2, "percent": 100}`), 201)
	id := rel["id"].(string)

	const path = "/v1/agents/support/envs/prod/prompt"
	rec := a.do("GET", path+"?user_id=u1", runtime, "")
	p := a.ok(rec, 200)
	trace, _ := p["release"].(map[string]any)
	if trace == nil || trace["arm"] != "candidate" || trace["reason"] != "bucket" {
		t.Fatalf("trace = %v", p["release"])
	}
	bucket := int(trace["bucket"].(float64))
	want := `id="` + id + `", arm=candidate, bucket=` + itoa(bucket) + `, reason=bucket`
	if got := rec.Header().Get("Promptd-Release"); got != want {
		t.Errorf("Promptd-Release = %q, want %q", got, want)
	}
	if got := rec.Header().Get("Promptd-Version"); got != "support/prod/2" {
		t.Errorf("Promptd-Version = %q", got)
	}

	// The session was pinned to v1 before the release: v1 is served, and
	// the trace says it is the baseline arm, because of the pin.
	rec = a.do("GET", path+"?session_id=s1", runtime, "")
	p = a.ok(rec, 200)
	trace, _ = p["release"].(map[string]any)
	if p["version"] != float64(1) || p["pinned"] != true || trace == nil || trace["id"] != id || trace["arm"] != "baseline" || trace["reason"] != "pinned" {
		t.Fatalf("pinned answer = %s", rec.Body)
	}
	if got := rec.Header().Get("Promptd-Release"); !strings.HasSuffix(got, "reason=pinned") || !strings.Contains(got, "arm=baseline") {
		t.Errorf("Promptd-Release = %q", got)
	}
	rec = a.do("POST", "/v1/agents/support/envs/prod/assemble", runtime, `{"session_id": "s1"}`)
	if a.ok(rec, 200); !strings.HasSuffix(rec.Header().Get("Promptd-Release"), "reason=pinned") {
		t.Errorf("assemble Promptd-Release = %q", rec.Header().Get("Promptd-Release"))
	}

	// Without a release: no Promptd-Release.
	a.publish("support", "dev", 1, 0)
	if rec := a.do("GET", "/v1/agents/support/envs/dev/prompt", runtime, ""); rec.Header().Get("Promptd-Release") != "" {
		t.Errorf("Promptd-Release without a release: %q", rec.Header().Get("Promptd-Release"))
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
