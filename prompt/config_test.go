package prompt

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestRender_placeholderForms(t *testing.T) {
	vars := map[string]string{"name": "Ada", "x": "{{name}}", "a_1": "A"}
	cases := map[string]string{
		"Hi {{name}}!":           "Hi Ada!",
		"Hi {{ name }}!":         "Hi Ada!",
		"Hi {{\tname\t}}":        "Hi Ada",
		"{{x}}":                  "{{name}}", // one pass: values are not expanded again
		"{{{name}}}":             "{Ada}",
		"{{ not valid }}":        "{{ not valid }}",
		"{{1abc}} {{a_1}}":       "{{1abc}} A",
		"{{name":                 "{{name",
		"}} {{":                  "}} {{",
		"{{unknown}}":            "",
		"no placeholders at all": "no placeholders at all",
	}
	for in, want := range cases {
		if got := Render(in, vars); got != want {
			t.Errorf("Render(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Placeholders("{{a}} {{ b }} {{a}} {{ c d }}"); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("Placeholders = %v", got)
	}
}

const apiExample = `{"system": "You are {{persona}} for {{company}}.",
 "tools": [{"type": "function", "function": {"name": "lookup_order", "description": "Find an order", "parameters": {"type": "object"}}}],
 "skills": [{"name": "refunds", "instructions": "Refunds within {{refund_days}} days."}],
 "memory": ["Customer prefers email."],
 "model": {"name": "gpt-4o", "temperature": 0.2},
 "variables": {"persona": {"required": true}, "company": {"default": "ACME"}, "refund_days": {"default": "30"}}}`

func TestSystemMessage_isByteExact(t *testing.T) {
	c, _, err := ParseConfig([]byte(apiExample))
	if err != nil {
		t.Fatal(err)
	}
	vars, err := c.Bind(map[string]json.RawMessage{"persona": json.RawMessage(`"a support agent"`), "extra": json.RawMessage(`1`)})
	if err != nil {
		t.Fatal(err)
	}
	want := "You are a support agent for ACME.\n\n# Skills\n\n## refunds\nRefunds within 30 days.\n\n# Memory\n- Customer prefers email."
	if got := c.SystemMessage(vars); got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

func TestBind_missingAndNonStringVariables(t *testing.T) {
	c, _, err := ParseConfig([]byte(apiExample))
	if err != nil {
		t.Fatal(err)
	}
	var ie *InvalidError
	if _, err := c.Bind(nil); !errors.As(err, &ie) || ie.Code != CodeMissingVariable || ie.Variable != "persona" {
		t.Fatalf("missing: %v", err)
	}
	if _, err := c.Bind(map[string]json.RawMessage{"persona": json.RawMessage(`42`)}); !errors.As(err, &ie) || ie.Code != CodeInvalidVariable {
		t.Fatalf("non-string: %v", err)
	}
}

func TestParseConfig_rejects(t *testing.T) {
	cases := []struct{ in, code, field string }{
		{`{}`, CodeInvalidConfig, "config.system"},
		{`{"system": ""}`, CodeInvalidConfig, "config.system"},
		{`{"system": 5}`, CodeInvalidConfig, "config.system"},
		{`[]`, CodeInvalidConfig, "config"},
		{`null`, CodeInvalidConfig, "config"},
		{`{"system":"x","extra":1}`, CodeInvalidConfig, "config.extra"},
		{`{"system":"x","tools":[{"function":{"name":"f"}}]}`, CodeInvalidConfig, "config.tools[0].type"},
		{`{"system":"x","tools":[{"type":"function","function":{}}]}`, CodeInvalidConfig, "config.tools[0].function.name"},
		{`{"system":"x","tools":["f"]}`, CodeInvalidConfig, "config.tools[0]"},
		{`{"system":"x","skills":[{"instructions":"i"}]}`, CodeInvalidConfig, "config.skills[0].name"},
		{`{"system":"x","memory":[1]}`, CodeInvalidConfig, "config.memory"},
		{`{"system":"x","model":"gpt"}`, CodeInvalidConfig, "config.model"},
		{`{"system":"x","variables":{"a b":{}}}`, CodeInvalidConfig, "config.variables.a b"},
		{`{"system":"x","variables":{"a":{"default":1}}}`, CodeInvalidConfig, "config.variables.a.default"},
		{`{"system":"Hi {{who}}"}`, CodeUndeclaredVariable, "config.system"},
		{`{"system":"x","skills":[{"name":"s","instructions":"{{ y }}"}]}`, CodeUndeclaredVariable, "config.skills[0].instructions"},
		{`{"system":"x","memory":["{{z}}"]}`, CodeUndeclaredVariable, "config.memory[0]"},
		{`{"system":"x","system":"y"}`, CodeInvalidConfig, "config"},
	}
	for _, c := range cases {
		_, _, err := ParseConfig([]byte(c.in))
		var ie *InvalidError
		if !errors.As(err, &ie) || ie.Code != c.code || ie.Field != c.field {
			t.Errorf("%s: err = %v (field %q), want %s at %s", c.in, err, fieldOf(ie), c.code, c.field)
		}
	}
}

func fieldOf(e *InvalidError) string {
	if e == nil {
		return ""
	}
	return e.Field
}
