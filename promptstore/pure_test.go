package promptstore

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestCanonical_sortsKeysKeepsNumbersNoHTMLEscape(t *testing.T) {
	in := `{ "b": 1.50, "a": {"z": [3, 1e2, -0], "y": "<&> \u00e9 \n"}, "c": null, "d": true }`
	got, err := Canonical([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":{"y":"<&> é \n","z":[3,1e2,-0]},"b":1.50,"c":null,"d":true}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	again, _ := Canonical(got)
	if string(again) != string(got) {
		t.Fatal("canonical form is not a fixed point")
	}
}

func TestCanonical_rejectsDuplicateKeysAndTrailingData(t *testing.T) {
	for _, in := range []string{`{"a":1,"a":2}`, `{"a":1} {}`, `{"a":`, `[1,]`, ``} {
		if _, err := Canonical([]byte(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
	if _, err := Canonical([]byte(`{"a":{"x":1,"x":1}}`)); !errors.Is(err, ErrDuplicateKey) {
		t.Fatalf("nested duplicate: %v", err)
	}
}

// TestCanonical_refusesHostileDocuments: 3 MiB of '[' overflowed the
// goroutine stack (a fatal error, the process died); invalid UTF-8 and a
// lone surrogate were replaced by U+FFFD, so two different configs had the
// same content hash.
func TestCanonical_refusesHostileDocuments(t *testing.T) {
	for name, doc := range map[string]string{
		"3 MiB of [":       strings.Repeat("[", 3<<20),
		"65 levels":        strings.Repeat("[", 65) + strings.Repeat("]", 65),
		"invalid UTF-8":    "{\"system\":\"a\xffb\"}",
		"lone surrogate":   `{"system":"a\ud800b"}`,
		"nested duplicate": `{"a":{"b":1,"b":2}}`,
	} {
		if out, err := Canonical([]byte(doc)); err == nil {
			t.Errorf("%s: accepted as %.40q", name, out)
		}
	}
	replaced, err := Canonical([]byte(`{"system":"a\ufffdb"}`))
	if err != nil || string(replaced) != "{\"system\":\"a\uFFFDb\"}" {
		t.Fatalf("a real U+FFFD: %q, %v", replaced, err)
	}
	if _, err := Canonical([]byte(strings.Repeat("[", 64) + strings.Repeat("]", 64))); err != nil {
		t.Fatalf("64 levels: %v", err)
	}
}

func TestContentHash_sameForReorderedDocuments(t *testing.T) {
	a, _ := Canonical([]byte(`{"system":"x","model":{"name":"m","temperature":0.2}}`))
	b, _ := Canonical([]byte("{\"model\":{\"temperature\":0.2,\"name\":\"m\"},\n \"system\":\"x\"}"))
	if ContentHash(a) != ContentHash(b) {
		t.Fatal("hash depends on key order or whitespace")
	}
	if h := ContentHash([]byte("hello")); h != "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" {
		t.Fatalf("hash = %s", h)
	}
}

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
		{`{"system":"x","variables":{"a":{"default":1}}}`, CodeInvalidConfig, "config.variables"},
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
