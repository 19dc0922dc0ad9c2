package promptstore

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
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

// Assembly limits (Limits): an assembled answer is sized before anything
// is rendered, and refused over AssembleMaxBytes.
const (
	DefaultAssembleMaxBytes = 8 << 20
	DefaultMaxHistoryTurns  = 1000
	MaxHistoryTurnsRequest  = 10000 // the largest max_history_turns a request may name
	DefaultDiffMaxBytes     = 1 << 20
	DefaultDiffMaxLines     = 20000
	DefaultDiffCacheBytes   = 16 << 20
	LimitAssembledBytes     = "assembled_bytes"
	LimitDiffBytes          = "diff_bytes"
	LimitDiffLines          = "diff_lines"
)

// Limits bound what one read may cost (Options.Limits); a zero field
// takes its default.
type Limits struct {
	// AssembleMaxBytes bounds an assembled answer: the JSON-encoded system
	// message, tools and model, and the history's turns
	// (PROMPTD_ASSEMBLE_MAX_BYTES, default 8 MiB). The history fills what
	// the rest leaves, newest turns first.
	AssembleMaxBytes int64
	// MaxHistoryTurns is the history's length when a request names none
	// and the most it may name (PROMPTD_ASSEMBLE_MAX_HISTORY_TURNS,
	// default 1000).
	MaxHistoryTurns int
	// DiffMaxBytes bounds the two pretty-printed configs of a diff
	// together (PROMPTD_DIFF_MAX_BYTES, default 1 MiB), DiffMaxLines their
	// lines together (PROMPTD_DIFF_MAX_LINES, default 20,000: the diff is
	// quadratic in lines at worst).
	DiffMaxBytes int64
	DiffMaxLines int
	// DiffCacheBytes bounds the cache of computed diffs
	// (PROMPTD_DIFF_CACHE_BYTES, default 16 MiB).
	DiffCacheBytes int64
}

func (l Limits) withDefaults() Limits {
	if l.AssembleMaxBytes <= 0 {
		l.AssembleMaxBytes = DefaultAssembleMaxBytes
	}
	if l.MaxHistoryTurns <= 0 {
		l.MaxHistoryTurns = DefaultMaxHistoryTurns
	}
	if l.DiffMaxBytes <= 0 {
		l.DiffMaxBytes = DefaultDiffMaxBytes
	}
	if l.DiffMaxLines <= 0 {
		l.DiffMaxLines = DefaultDiffMaxLines
	}
	if l.DiffCacheBytes <= 0 {
		l.DiffCacheBytes = DefaultDiffCacheBytes
	}
	return l
}

// historyTurns is how many turns an assembly asks for: the request's
// number (0: none named), at most the configured maximum.
func (l Limits) historyTurns(requested int) int {
	if requested <= 0 || requested > l.MaxHistoryTurns {
		return l.MaxHistoryTurns
	}
	return requested
}

// SystemMessageSize is len(json.Marshal(c.SystemMessage(vars))), computed
// without rendering: the literal text and each variable's value are
// measured once, and a value counts once per placeholder naming it.
func (c *Config) SystemMessageSize(vars map[string]string) int64 {
	varSize := make(map[string]int64, len(vars))
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
// encodes (HTML escaping on, as Assemble encodes the system message).
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
