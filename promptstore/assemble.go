package promptstore

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Bind checks assemble-time variables against the config's declarations:
// values must be strings; a required variable without a value is missing;
// defaults fill the rest; undeclared extras are ignored.
func (c *Config) Bind(vars map[string]json.RawMessage) (map[string]string, error) {
	out := make(map[string]string, len(c.Variables))
	for _, name := range c.VariableNames() {
		decl := c.Variables[name]
		raw, given := vars[name]
		if given && string(raw) != "null" {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, &InvalidError{Code: CodeInvalidVariable, Variable: name, Field: "variables." + name,
					Detail: fmt.Sprintf("variable %s must be a string", name)}
			}
			out[name] = s
			continue
		}
		switch {
		case decl.Default != nil:
			out[name] = *decl.Default
		case decl.Required:
			return nil, &InvalidError{Code: CodeMissingVariable, Variable: name, Field: "variables." + name,
				Detail: fmt.Sprintf("required variable %s is missing", name)}
		}
	}
	return out, nil
}

// SystemMessage renders the system message, byte for byte: the rendered
// system; then, with skills, "\n\n# Skills" and per skill
// "\n\n## <name>\n<instructions>"; then, with memory, "\n\n# Memory" and per
// item "\n- <item>".
func (c *Config) SystemMessage(vars map[string]string) string {
	var b strings.Builder
	b.WriteString(Render(c.System, vars))
	if len(c.Skills) > 0 {
		b.WriteString("\n\n# Skills")
		for _, s := range c.Skills {
			b.WriteString("\n\n## ")
			b.WriteString(s.Name)
			b.WriteString("\n")
			b.WriteString(Render(s.Instructions, vars))
		}
	}
	if len(c.Memory) > 0 {
		b.WriteString("\n\n# Memory")
		for _, m := range c.Memory {
			b.WriteString("\n- ")
			b.WriteString(Render(m, vars))
		}
	}
	return b.String()
}
