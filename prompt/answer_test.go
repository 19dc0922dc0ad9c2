package prompt

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestBody_openAI_putsModelKeysAtTheTopAndLeavesOutEmptyTools(t *testing.T) {
	cfg, canon, err := ParseConfig([]byte(`{"system": "S {{x}}", "messages": [{"role": "user", "content": "u {{x}}"}],
		"model": {"name": "gpt-4o", "temperature": 0.20, "max_completion_tokens": 5}, "variables": {"x": {"default": "<&>"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	vars, _ := cfg.Bind(nil)
	a := Assemble(cfg, 3, "sha256:x", vars, []Message{{Role: "assistant", Content: json.RawMessage(`null`), ToolCalls: json.RawMessage(`[{"id":"c"}]`)}})
	got, err := a.Body(FormatOpenAI)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"gpt-4o","max_completion_tokens":5,"temperature":0.20,"messages":[{"role":"system","content":"S \u003c\u0026\u003e"},{"role":"user","content":"u \u003c\u0026\u003e"},{"role":"assistant","content":null,"tool_calls":[{"id":"c"}]}]}` + "\n"
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	_ = canon
	plain, _ := a.Body(FormatPlain)
	if want := `{"version":3,"content_hash":"sha256:x","messages":[{"role":"system","content":"S \u003c\u0026\u003e"},{"role":"user","content":"u \u003c\u0026\u003e"},{"role":"assistant","content":null,"tool_calls":[{"id":"c"}]}],"tools":[],"model":{"max_completion_tokens":5,"name":"gpt-4o","temperature":0.20},"release":null,"pinned":false}` + "\n"; string(plain) != want {
		t.Errorf("plain %s\nwant  %s", plain, want)
	}
}

func TestBody_openAI_withoutModelName_isInvalidConfig(t *testing.T) {
	// The second is refused at publish since model.name became required
	// with model; stored before that, it loads and the openai shape says so.
	for _, config := range []string{`{"system": "s"}`, `{"system": "s", "model": {"temperature": 1}}`} {
		cfg, _, err := Load([]byte(config))
		if err != nil {
			t.Fatal(err)
		}
		_, err = Assemble(cfg, 1, "h", nil, nil).Body(FormatOpenAI)
		var ie *InvalidError
		if !errors.As(err, &ie) || ie.Code != CodeInvalidConfig || ie.Field != "config.model.name" {
			t.Errorf("%s: %v", config, err)
		}
	}
	// A stored config from before the rule (model.stream) loads, and the
	// openai shape refuses it rather than sending two "stream" keys.
	cfg, _, err := Load([]byte(`{"model":{"name":"m","stream":true},"system":"s"}`))
	if err != nil {
		t.Fatal(err)
	}
	var ie *InvalidError
	if _, err := Assemble(cfg, 1, "h", nil, nil).Body(FormatOpenAI); !errors.As(err, &ie) || ie.Field != "config.model.stream" {
		t.Errorf("reserved key: %v", err)
	}
}

func TestCutHistory_neverStartsWithAToolTurnWhenItCut(t *testing.T) {
	turns := []Message{{Role: "user"}, {Role: "assistant"}, {Role: "tool"}, {Role: "tool"}, {Role: "user"}}
	if got := CutHistory(turns, 3); len(got) != 1 || got[0].Role != "user" {
		t.Errorf("cut at tool turns: %v", got)
	}
	if got := CutHistory(turns, 4); len(got) != 4 || got[0].Role != "assistant" {
		t.Errorf("cut at the assistant turn: %v", got)
	}
	if got := CutHistory(turns, 0); len(got) != 5 {
		t.Errorf("no cut: %v", got)
	}
}

func TestConversation_configMessagesComeBetweenSystemAndHistory(t *testing.T) {
	cfg, _, err := ParseConfig([]byte(`{"system": "s", "messages": [{"role": "user", "content": "{{v}}"}, {"role": "assistant", "content": "a"}], "variables": {"v": {}}}`))
	if err != nil {
		t.Fatal(err)
	}
	msgs := cfg.Conversation(map[string]string{"v": "{{v}}"}, []Message{{Role: "user", Content: json.RawMessage(`"h"`)}})
	var got []string
	for _, m := range msgs {
		got = append(got, m.Role+":"+string(m.Content))
	}
	if want := `system:"s" user:"{{v}}" assistant:"a" user:"h"`; join(got) != want {
		t.Errorf("got %s, want %s", join(got), want)
	}
	if n := cfg.FixedSize(map[string]string{"v": "{{v}}"}); n != int64(len(`"s"`)+len(`"{{v}}"`)+len(`"a"`)) {
		t.Errorf("FixedSize = %d", n)
	}
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}
