package prompt

import (
	"bytes"
	"strings"
	"testing"
)

func FuzzRender(f *testing.F) {
	for _, s := range []string{"Hi {{name}}", "{{ a }}{{b}}", "{{{x}}}", "{{", "}}{{1}}", "{{ a b }}"} {
		f.Add(s, "v{{name}}")
	}
	f.Fuzz(func(t *testing.T, tmpl, value string) {
		names := Placeholders(tmpl)
		vars := map[string]string{}
		for _, n := range names {
			if !validVarName(n) {
				t.Fatalf("placeholder name %q is not a valid variable name", n)
			}
			vars[n] = value
		}
		out := Render(tmpl, vars)
		if len(names) == 0 && out != tmpl {
			t.Fatalf("no placeholders but output changed: %q -> %q", tmpl, out)
		}
		// Placeholders only ever shrink to their (empty) values.
		if len(Render(tmpl, nil)) > len(tmpl) {
			t.Fatalf("rendering with empty values grew %q", tmpl)
		}
		// One pass: a value that looks like a placeholder stays as it is.
		for n := range vars {
			vars[n] = "{{" + n + "}}"
		}
		if once := Render(tmpl, vars); len(names) > 0 && !strings.Contains(once, "{{"+names[0]+"}}") {
			t.Fatalf("a value was expanded again: %q -> %q", tmpl, once)
		}
	})
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"system":"You are {{p}}","variables":{"p":{"required":true}},"tools":[{"type":"function","function":{"name":"f"}}]}`))
	f.Add([]byte(`{"system":"x","skills":[{"name":"s","instructions":"{{y}}"}]}`))
	f.Add([]byte(`{"system":"x","memory":["m"],"model":{"t":0.2}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, canon, err := ParseConfig(raw)
		if err != nil {
			if _, ok := err.(*InvalidError); !ok {
				t.Fatalf("error is not an *InvalidError: %T %v", err, err)
			}
			return
		}
		c2, canon2, err := ParseConfig(canon)
		if err != nil || !bytes.Equal(canon, canon2) || c2.System != c.System {
			t.Fatalf("canonical config does not parse to itself: %v", err)
		}
		vars := map[string]string{}
		for _, n := range c.VariableNames() {
			vars[n] = "x"
		}
		_ = c.SystemMessage(vars)
	})
}
