package prompt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/promptd/promptd/internal/canonjson"
)

// Config is a parsed prompt config. The canonical JSON it came from is what
// is stored and hashed; Config is for validation and assembly.
type Config struct {
	System    string              `json:"system"`
	Tools     []json.RawMessage   `json:"tools,omitempty"`
	Skills    []Skill             `json:"skills,omitempty"`
	Memory    []string            `json:"memory,omitempty"`
	Messages  []ChatMessage       `json:"messages,omitempty"`
	Model     json.RawMessage     `json:"model,omitempty"`
	Variables map[string]Variable `json:"variables,omitempty"`
	// Fragments are the config's fragment references by alias, pinned in
	// a stored config (fragment.go).
	Fragments map[string]FragmentRef `json:"fragments,omitempty"`
}

// Skill is a named block of instructions appended to the system message.
type Skill struct {
	Name         string `json:"name"`
	Instructions string `json:"instructions"`
}

// ChatMessage is a fixed message of a chat template (few-shot examples, a
// standing instruction); Content is a template like System.
type ChatMessage struct {
	Role    string `json:"role"` // "user", "assistant" or "system"
	Content string `json:"content"`
	// Fragment, instead of role and content, inserts the messages of the
	// messages fragment of that alias here.
	Fragment string `json:"fragment,omitempty"`
}

// Variable declares a template variable: its type (none: a string), an
// enum's values, whether assemble requires it, a default of its type (a
// JSON value), and a description (shown in forms and as an MCP argument's).
type Variable struct {
	Type        string          `json:"type,omitempty"`
	Values      []string        `json:"values,omitempty"`
	Required    bool            `json:"required,omitempty"`
	Default     json.RawMessage `json:"default,omitempty"`
	Description string          `json:"description,omitempty"`
}

// Limits on a config. MaxConfigBytes bounds its canonical JSON however it
// arrives (one version's request body is 1 MiB anyway; an import's may be
// far larger, and its configs are bound all the same).
const (
	MaxConfigBytes = 1 << 20
	MaxTools       = 128
	MaxSkills      = 128
	MaxMemory      = 1024
	MaxVariables   = 256
	MaxMessages    = 100
)

// ReservedModelKeys may not appear inside model: the OpenAI shape puts
// model's keys at the top level of the request, next to these.
var ReservedModelKeys = []string{"messages", "model", "stream", "tools"}

// ParseConfig validates a raw config document, as a version create does,
// and returns it with its canonical JSON. Every placeholder must be
// declared in variables; model, when given, has a non-empty name, may not
// hold the reserved keys, and holds only ModelKeys besides name and extra.
func ParseConfig(raw []byte) (*Config, []byte, error) {
	c, canon, err := parse(raw)
	if err != nil {
		return nil, nil, err
	}
	if err := c.checkModel(); err != nil {
		return nil, nil, err
	}
	if c.Fragments == nil && c.hasInclude() {
		// Without fragments, an include is literal text in a stored
		// version; a new version may not hold one.
		if err := checkIncludes("config.fragments", c.templates(), nil); err != nil {
			return nil, nil, err
		}
	}
	return c, canon, nil
}

// Load parses a stored config (JSON that ParseConfig accepted when its
// version was created). It applies the rules every stored config
// met, so versions created before a rule was added still load; the
// rules added since are checked where they matter (the OpenAI shape
// checks model when it is asked for). It returns the canonical JSON too.
func Load(raw []byte) (*Config, []byte, error) {
	return parse(raw)
}

func parse(raw []byte) (*Config, []byte, error) {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, nil, invalid(CodeInvalidConfig, "config", "config is required")
	}
	if len(raw) > 4*MaxConfigBytes { // refused before canonicalizing (insignificant space aside)
		return nil, nil, invalid(CodeInvalidConfig, "config", "config is larger than %d bytes", MaxConfigBytes)
	}
	canon, err := canonjson.Canonical(raw)
	if err != nil {
		return nil, nil, invalid(CodeInvalidConfig, "config", "%v", err)
	}
	if len(canon) > MaxConfigBytes {
		return nil, nil, invalid(CodeInvalidConfig, "config", "config is larger than %d bytes (as canonical JSON)", MaxConfigBytes)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(canon, &top); err != nil {
		return nil, nil, invalid(CodeInvalidConfig, "config", "config must be a JSON object")
	}
	for k := range top {
		switch k {
		case "system", "tools", "skills", "memory", "messages", "model", "variables", "fragments":
		default:
			return nil, nil, invalid(CodeInvalidConfig, "config."+k, "unknown field")
		}
	}
	c := &Config{}
	if err := decodeField(top, "system", &c.System); err != nil {
		return nil, nil, err
	}
	if c.System == "" {
		return nil, nil, invalid(CodeInvalidConfig, "config.system", "system is required and must be a non-empty string")
	}
	for _, f := range []struct {
		name string
		dst  any
	}{{"tools", &c.Tools}, {"skills", &c.Skills}, {"memory", &c.Memory}, {"messages", &c.Messages}, {"variables", &c.Variables}, {"fragments", &c.Fragments}} {
		if err := decodeField(top, f.name, f.dst); err != nil {
			return nil, nil, err
		}
	}
	if m, ok := top["model"]; ok {
		if len(m) == 0 || m[0] != '{' {
			return nil, nil, invalid(CodeInvalidConfig, "config.model", "model must be an object")
		}
		c.Model = m
	}
	if err := c.checkMessages(top["messages"]); err != nil {
		return nil, nil, err
	}
	if err := c.validate(); err != nil {
		return nil, nil, err
	}
	return c, canon, nil
}

func decodeField(top map[string]json.RawMessage, name string, dst any) error {
	raw, ok := top[name]
	if !ok {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return invalid(CodeInvalidConfig, "config."+name, "%s", jsonErrText(err))
	}
	return nil
}

func jsonErrText(err error) string {
	if te, ok := err.(*json.UnmarshalTypeError); ok {
		if te.Field != "" {
			return fmt.Sprintf("%s must be %s, not %s", te.Field, te.Type, te.Value)
		}
		return fmt.Sprintf("must be %s, not %s", te.Type, te.Value)
	}
	return err.Error()
}

func (c *Config) validate() error {
	switch {
	case len(c.Tools) > MaxTools:
		return invalid(CodeInvalidConfig, "config.tools", "at most %d tools", MaxTools)
	case len(c.Skills) > MaxSkills:
		return invalid(CodeInvalidConfig, "config.skills", "at most %d skills", MaxSkills)
	case len(c.Memory) > MaxMemory:
		return invalid(CodeInvalidConfig, "config.memory", "at most %d memory items", MaxMemory)
	case len(c.Variables) > MaxVariables:
		return invalid(CodeInvalidConfig, "config.variables", "at most %d variables", MaxVariables)
	}
	for i, raw := range c.Tools {
		var t struct {
			Type     *string `json:"type"`
			Function *struct {
				Name *string `json:"name"`
			} `json:"function"`
		}
		field := fmt.Sprintf("config.tools[%d]", i)
		if err := json.Unmarshal(raw, &t); err != nil || len(raw) == 0 || raw[0] != '{' {
			return invalid(CodeInvalidConfig, field, "a tool must be an object with type and function.name")
		}
		if t.Type == nil || *t.Type == "" {
			return invalid(CodeInvalidConfig, field+".type", "type is required")
		}
		if *t.Type == "function" && (t.Function == nil || t.Function.Name == nil || *t.Function.Name == "") {
			return invalid(CodeInvalidConfig, field+".function.name", "function.name is required")
		}
	}
	for i, s := range c.Skills {
		if s.Name == "" {
			return invalid(CodeInvalidConfig, fmt.Sprintf("config.skills[%d].name", i), "name is required")
		}
	}
	for _, name := range c.VariableNames() {
		if !validVarName(name) {
			return invalid(CodeInvalidConfig, "config.variables."+name, "variable names are [A-Za-z_][A-Za-z0-9_]*")
		}
		if err := c.Variables[name].validate(name); err != nil {
			return err
		}
	}
	if c.Fragments != nil {
		if err := checkRefs("config.fragments", c.Fragments, 1); err != nil {
			return err
		}
		if err := checkIncludes("config.fragments", c.templates(), c.Fragments); err != nil {
			return err
		}
	}
	for _, t := range fragmentTemplates("config.fragments", c.Fragments, c.templates()) {
		for _, name := range Placeholders(t.text) {
			if _, ok := c.Variables[name]; !ok {
				return &InvalidError{Code: CodeUndeclaredVariable, Field: t.field, Variable: name,
					Detail: fmt.Sprintf("placeholder {{%s}} is not declared in variables", name)}
			}
		}
	}
	return nil
}

type template struct{ field, text string }

// hasInclude reports whether any template holds a fragment include,
// without building the templates' list (a publish's hot path).
func (c *Config) hasInclude() bool {
	if hasPartial(c.System) {
		return true
	}
	for _, s := range c.Skills {
		if hasPartial(s.Instructions) {
			return true
		}
	}
	for _, m := range c.Memory {
		if hasPartial(m) {
			return true
		}
	}
	for _, m := range c.Messages {
		if hasPartial(m.Content) {
			return true
		}
	}
	return false
}

// templates lists the strings placeholders may appear in.
func (c *Config) templates() []template {
	out := []template{{"config.system", c.System}}
	for i, s := range c.Skills {
		out = append(out, template{fmt.Sprintf("config.skills[%d].instructions", i), s.Instructions})
	}
	for i, m := range c.Memory {
		out = append(out, template{fmt.Sprintf("config.memory[%d]", i), m})
	}
	for i, m := range c.Messages {
		out = append(out, template{fmt.Sprintf("config.messages[%d].content", i), m.Content})
	}
	return out
}

func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// VariableNames lists the declared variables, sorted.
func (c *Config) VariableNames() []string {
	names := make([]string, 0, len(c.Variables))
	for n := range c.Variables {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// checkMessages checks the chat template (raw as written): a role of
// user, assistant or system and a string content, for every message.
func (c *Config) checkMessages(raw json.RawMessage) error {
	if len(c.Messages) > MaxMessages {
		return invalid(CodeInvalidConfig, "config.messages", "at most %d messages", MaxMessages)
	}
	var present []map[string]json.RawMessage
	_ = json.Unmarshal(raw, &present) // decodeField accepted it
	for i, m := range c.Messages {
		if m.Fragment != "" || i < len(present) && present[i]["fragment"] != nil {
			f, ok := c.Fragments[m.Fragment]
			switch {
			case i < len(present) && len(present[i]) != 1:
				return invalid(CodeInvalidConfig, fmt.Sprintf("config.messages[%d]", i), "a fragment message has fragment only (no role or content)")
			case !ok:
				return invalid(CodeInvalidConfig, fmt.Sprintf("config.messages[%d].fragment", i), "fragment %q names no alias of fragments", m.Fragment)
			case f.Pinned() && f.Messages == nil:
				return invalid(CodeInvalidConfig, fmt.Sprintf("config.messages[%d].fragment", i), "fragment %q is a text fragment: include it with {{> %s}}", m.Fragment, m.Fragment)
			}
			continue
		}
		if i < len(present) {
			if _, ok := present[i]["content"]; !ok {
				return invalid(CodeInvalidConfig, fmt.Sprintf("config.messages[%d].content", i), "content is required")
			}
		}
		switch m.Role {
		case "user", "assistant", "system":
		default:
			return invalid(CodeInvalidConfig, fmt.Sprintf("config.messages[%d].role", i), "role must be user, assistant or system")
		}
	}
	return nil
}

// checkModel refuses the keys the OpenAI shape owns inside model, a model
// without a name or whose name is not a non-empty string, and keys that
// are neither known model keys nor under model.extra (checkModelKeys).
func (c *Config) checkModel() error {
	if c.Model == nil {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(c.Model, &m); err != nil {
		return invalid(CodeInvalidConfig, "config.model", "model must be an object")
	}
	for _, k := range ReservedModelKeys {
		if _, ok := m[k]; ok {
			return invalid(CodeInvalidConfig, "config.model."+k, "model may not set %s: promptd assembles it", k)
		}
	}
	raw, ok := m["name"]
	if !ok {
		return invalid(CodeInvalidConfig, "config.model.name", "model.name is required when model is set (the openai format sends it as the request's model)")
	}
	var name string
	if err := json.Unmarshal(raw, &name); err != nil || name == "" {
		return invalid(CodeInvalidConfig, "config.model.name", "model.name must be a non-empty string")
	}
	return checkModelKeys(m)
}

// ContentHash is a config's content_hash: "sha256:" + hex of its
// canonical JSON (ParseConfig and Load return it).
func ContentHash(canonical []byte) string { return canonjson.Hash(canonical) }
