package prompt

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Bind checks assemble-time variables against the config's declarations
// and renders each as its template text: a value must be of its
// variable's type (a JSON string for an untyped one), else
// invalid_variable; a required variable without a value (or with null)
// is missing_variable; defaults fill the rest; undeclared extras are
// ignored.
func (c *Config) Bind(vars map[string]json.RawMessage) (map[string]string, error) {
	out := make(map[string]string, len(c.Variables))
	for _, name := range c.VariableNames() {
		decl := c.Variables[name]
		raw, given := vars[name]
		if given && string(raw) != "null" {
			s, err := decl.render(raw)
			if err != nil {
				return nil, &InvalidError{Code: CodeInvalidVariable, Variable: name, Field: "variables." + name,
					Detail: fmt.Sprintf("variable %s must be %s", name, decl.expected())}
			}
			out[name] = s
			continue
		}
		switch {
		case decl.hasDefault():
			s, err := decl.render(decl.Default)
			if err != nil { // a version published before its type was checked
				return nil, &InvalidError{Code: CodeInvalidVariable, Variable: name, Field: "variables." + name,
					Detail: fmt.Sprintf("variable %s's default is not %s", name, decl.expected())}
			}
			out[name] = s
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
	b.WriteString(RenderWith(c.System, vars, c.Fragments))
	if len(c.Skills) > 0 {
		b.WriteString("\n\n# Skills")
		for _, s := range c.Skills {
			b.WriteString("\n\n## ")
			b.WriteString(s.Name)
			b.WriteString("\n")
			b.WriteString(RenderWith(s.Instructions, vars, c.Fragments))
		}
	}
	if len(c.Memory) > 0 {
		b.WriteString("\n\n# Memory")
		for _, m := range c.Memory {
			b.WriteString("\n- ")
			b.WriteString(RenderWith(m, vars, c.Fragments))
		}
	}
	return b.String()
}

// Message is one chat message of an assembled prompt: the fields a chat
// completions request takes, and no others.
type Message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	ToolCalls  json.RawMessage `json:"tool_calls,omitempty"`
}

// Conversation is the assembled conversation: the system message, then the
// config's rendered messages in order, then history (the session's turns,
// oldest first, already cut).
func (c *Config) Conversation(vars map[string]string, history []Message) []Message {
	out := make([]Message, 0, 1+len(c.Messages)+len(history))
	out = append(out, Message{Role: "system", Content: jsonString(c.SystemMessage(vars))})
	for _, m := range c.Messages {
		if m.Fragment == "" {
			out = append(out, Message{Role: m.Role, Content: jsonString(RenderWith(m.Content, vars, c.Fragments))})
			continue
		}
		f := c.Fragments[m.Fragment] // a messages fragment's messages, in place
		for _, fm := range f.Messages {
			out = append(out, Message{Role: fm.Role, Content: jsonString(RenderWith(fm.Content, vars, f.Fragments))})
		}
	}
	return append(out, history...)
}

// chatMessage is a config message with the fragments its content may
// include (the config's, or a messages fragment's own).
type chatMessage struct {
	ChatMessage
	frags map[string]FragmentRef
}

// chatMessages are the config's messages with each messages fragment's
// messages inserted in place of its entry.
func (c *Config) chatMessages() []chatMessage {
	out := make([]chatMessage, 0, len(c.Messages))
	for _, m := range c.Messages {
		if m.Fragment == "" {
			out = append(out, chatMessage{m, c.Fragments})
			continue
		}
		f := c.Fragments[m.Fragment]
		for _, fm := range f.Messages {
			out = append(out, chatMessage{fm, f.Fragments})
		}
	}
	return out
}

// jsonString is s as a JSON string, byte for byte as json.Marshal writes
// it (HTML characters escaped). Printable ASCII with newlines and tabs,
// what prompts mostly are, is written here; anything else goes through
// json.Marshal.
func jsonString(s string) json.RawMessage {
	extra := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			extra++
		case c < 0x20 || c >= 0x7f || c == '<' || c == '>' || c == '&':
			b, _ := json.Marshal(s)
			return b
		}
	}
	b := make([]byte, 0, len(s)+extra+2)
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// FixedSize is the size of what an assembly holds besides the history:
// the JSON-encoded system message and config messages, the tools and the
// model. It is computed without rendering: the literal text and each
// variable's value are measured once, and a value counts once per
// placeholder naming it.
func (c *Config) FixedSize(vars map[string]string) int64 {
	if len(c.Fragments) > 0 { // measured on the rendered text
		n := int64(len(jsonString(c.SystemMessage(vars)))) + int64(len(c.Model))
		for _, m := range c.chatMessages() {
			n += int64(len(jsonString(RenderWith(m.Content, vars, m.frags))))
		}
		for _, t := range c.Tools {
			n += int64(len(t))
		}
		return n
	}
	varSize := make(map[string]int64, len(vars))
	n := c.systemMessageSize(vars, varSize) + int64(len(c.Model))
	for _, m := range c.Messages {
		n += 2 + renderedSize(m.Content, vars, varSize, jsonStringSize)
	}
	for _, t := range c.Tools {
		n += int64(len(t))
	}
	return n
}

// SystemMessageSize is len(json.Marshal(c.SystemMessage(vars))), computed
// without rendering.
func (c *Config) SystemMessageSize(vars map[string]string) int64 {
	if len(c.Fragments) > 0 {
		return int64(len(jsonString(c.SystemMessage(vars))))
	}
	return c.systemMessageSize(vars, make(map[string]int64, len(vars)))
}

func (c *Config) systemMessageSize(vars map[string]string, varSize map[string]int64) int64 {
	n := int64(2) + renderedSize(c.System, vars, varSize, jsonStringSize)
	if len(c.Skills) > 0 {
		n += jsonStringSize("\n\n# Skills")
		for _, s := range c.Skills {
			n += jsonStringSize("\n\n## ") + jsonStringSize(s.Name) + jsonStringSize("\n") +
				renderedSize(s.Instructions, vars, varSize, jsonStringSize)
		}
	}
	if len(c.Memory) > 0 {
		n += jsonStringSize("\n\n# Memory")
		for _, m := range c.Memory {
			n += jsonStringSize("\n- ") + renderedSize(m, vars, varSize, jsonStringSize)
		}
	}
	return n
}

// asciiJSONSize[b] is the size of ASCII byte b in a string json.Marshal
// encodes (HTML escaping on, as jsonString encodes messages).
var asciiJSONSize = func() (t [utf8.RuneSelf]int64) {
	for b := range t {
		enc, _ := json.Marshal(string(rune(b)))
		t[b] = int64(len(enc) - 2)
	}
	return t
}()

// jsonStringSize is the size of s inside a string json.Marshal encodes,
// quotes left out.
func jsonStringSize(s string) int64 {
	var n int64
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			n += asciiJSONSize[b]
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1, r == '\u2028', r == '\u2029':
			n += 6 // \ufffd, \u2028, \u2029
		default:
			n += int64(size)
		}
		i += size
	}
	return n
}

// CutHistory is the history an assembly appends, as the server cuts a
// session's turns: turns oldest first; with max > 0 the newest max, and
// when that may have left older turns out (max turns or more), leading
// tool turns are dropped too, so a tool answer is never separated from
// the assistant turn whose tool_calls it answers.
func CutHistory(turns []Message, max int) []Message {
	if max <= 0 || len(turns) < max {
		return turns
	}
	turns = turns[len(turns)-max:]
	for len(turns) > 0 && turns[0].Role == "tool" {
		turns = turns[1:]
	}
	return turns
}
