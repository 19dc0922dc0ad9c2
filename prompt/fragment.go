package prompt

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/promptd/promptd/ident"
)

// Fragments are shared, versioned pieces of prompts. A config (or a
// fragment) names them under aliases in "fragments"; a template includes a
// text fragment as {{> alias}}, and a message entry {"fragment": "alias"}
// inserts a messages fragment's messages. At publish every reference is
// pinned (PinConfig, PinFragment): it is stored with its version, its
// content hash and its content embedded, so a stored config is
// self-contained and its own content hash covers the exact text.

// Limits on fragments.
const (
	MaxFragmentTextBytes  = 64 << 10 // a text fragment's text
	MaxFragmentMessages   = 50       // a messages fragment's messages
	MaxFragmentsPerConfig = 32       // aliases of one config or fragment
	MaxFragmentDepth      = 4        // a config's fragment is at depth 1, one it includes at 2, ...
)

// FragmentRef is one alias of a config's (or a fragment's) "fragments".
// As written it names a fragment and a version or an env; pinned it also
// holds the version's content hash and content (Text or Messages, the
// variables it declares, the fragments it includes, themselves pinned).
type FragmentRef struct {
	Name        string                 `json:"name"`
	Version     int                    `json:"version,omitempty"`
	Env         string                 `json:"env,omitempty"`
	ContentHash string                 `json:"content_hash,omitempty"`
	Text        *string                `json:"text,omitempty"`
	Messages    []ChatMessage          `json:"messages,omitempty"`
	Variables   map[string]Variable    `json:"variables,omitempty"`
	Fragments   map[string]FragmentRef `json:"fragments,omitempty"`
}

// Pinned reports whether the reference carries its content.
func (r FragmentRef) Pinned() bool { return r.ContentHash != "" }

// Fragment is a fragment version's content: exactly one of Text and
// Messages, the variables its templates use, the fragments it includes.
// Its canonical JSON is what is stored and hashed.
type Fragment struct {
	Text      *string                `json:"text,omitempty"`
	Messages  []ChatMessage          `json:"messages,omitempty"`
	Variables map[string]Variable    `json:"variables,omitempty"`
	Fragments map[string]FragmentRef `json:"fragments,omitempty"`
}

// FragmentVersion is what a FragmentSource answers: a stored fragment
// version, Body its canonical content (a Fragment).
type FragmentVersion struct {
	Name        string
	Version     int
	ContentHash string
	Body        json.RawMessage
}

// FragmentSource reads a fragment version: version > 0 names it; else env
// names the env whose pointer names it. It answers (nil, nil) when there
// is none.
type FragmentSource func(name string, version int, env string) (*FragmentVersion, error)

// partialAt reports the fragment include {{> alias}} starting at s[i]
// ("{{" there): its alias and the index after it. Spaces and tabs are
// allowed around ">" and the alias.
func partialAt(s string, i int) (alias string, end int, ok bool) {
	j := skipBlanks(s, i+2)
	if j >= len(s) || s[j] != '>' {
		return "", 0, false
	}
	return nameThenClose(s, j+1)
}

// hasPartial reports whether s holds a fragment include.
func hasPartial(s string) bool {
	for i := 0; i < len(s); {
		k := strings.Index(s[i:], "{{")
		if k < 0 {
			return false
		}
		i += k
		if _, _, ok := partialAt(s, i); ok {
			return true
		}
		i++
	}
	return false
}

// Partials lists the fragment aliases s includes, in order, each once.
func Partials(s string) []string {
	var out []string
	seen := map[string]bool{}
	for i := 0; i < len(s); {
		k := strings.Index(s[i:], "{{")
		if k < 0 {
			break
		}
		i += k
		if a, end, ok := partialAt(s, i); ok {
			if !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
			i = end
			continue
		}
		i++
	}
	return out
}

// RenderWith is Render that also includes fragments: {{> alias}} of a
// text fragment in frags is replaced by that fragment's text rendered
// with the same vars and its own fragments, in the same single pass (a
// substituted value is never scanned again, so a value holding
// "{{> x}}" is text). An alias frags lacks (or a messages fragment) is
// literal text, as it was before fragments existed: publish refuses it,
// so only versions stored before then hold one.
func RenderWith(s string, vars map[string]string, frags map[string]FragmentRef) string {
	if len(frags) == 0 {
		return Render(s, vars)
	}
	var b strings.Builder
	renderInto(&b, s, vars, frags, 0)
	return b.String()
}

func renderInto(b *strings.Builder, s string, vars map[string]string, frags map[string]FragmentRef, depth int) {
	for i := 0; i < len(s); {
		k := strings.Index(s[i:], "{{")
		if k < 0 {
			b.WriteString(s[i:])
			return
		}
		b.WriteString(s[i : i+k])
		i += k
		if name, end, ok := placeholderAt(s, i); ok {
			b.WriteString(vars[name])
			i = end
			continue
		}
		if alias, end, ok := partialAt(s, i); ok {
			if f, found := frags[alias]; found && f.Text != nil && depth < MaxFragmentDepth {
				renderInto(b, *f.Text, vars, f.Fragments, depth+1)
				i = end
				continue
			}
		}
		b.WriteByte('{')
		i++
	}
}

// fragmentTemplates lists the templates of pinned fragments (recursively),
// with their JSON paths under prefix, for placeholder checks.
func fragmentTemplates(prefix string, frags map[string]FragmentRef, out []template) []template {
	for _, alias := range sortedAliases(frags) {
		f := frags[alias]
		p := prefix + "." + alias
		if f.Text != nil {
			out = append(out, template{p + ".text", *f.Text})
		}
		for i, m := range f.Messages {
			out = append(out, template{fmt.Sprintf("%s.messages[%d].content", p, i), m.Content})
		}
		out = fragmentTemplates(p+".fragments", f.Fragments, out)
	}
	return out
}

func sortedAliases(frags map[string]FragmentRef) []string {
	names := make([]string, 0, len(frags))
	for a := range frags {
		names = append(names, a)
	}
	sort.Strings(names)
	return names
}

// checkRefs checks a pinned fragments map at path (config.fragments or a
// nested one): alias names, references pinned and well formed, exactly
// one of text and messages, and within each fragment every include
// declared and of the right kind.
func checkRefs(path string, frags map[string]FragmentRef, depth int) error {
	if len(frags) > MaxFragmentsPerConfig {
		return invalid(CodeInvalidConfig, path, "at most %d fragments", MaxFragmentsPerConfig)
	}
	if len(frags) > 0 && depth > MaxFragmentDepth {
		return invalid(CodeInvalidConfig, path, "fragments nest at most %d deep", MaxFragmentDepth)
	}
	for _, alias := range sortedAliases(frags) {
		f := frags[alias]
		p := path + "." + alias
		switch {
		case !validVarName(alias):
			return invalid(CodeInvalidConfig, p, "fragment aliases are [A-Za-z_][A-Za-z0-9_]*")
		case ident.Validate("name", f.Name) != nil:
			return invalid(CodeInvalidConfig, p+".name", "name must be 1..128 of [A-Za-z0-9._-], first alphanumeric")
		case !f.Pinned():
			return invalid(CodeInvalidConfig, p, "fragment %s is not pinned (publish pins it)", alias)
		case (f.Text == nil) == (f.Messages == nil):
			return invalid(CodeInvalidConfig, p, "a fragment has text or messages")
		}
		for i, m := range f.Messages {
			if m.Fragment != "" {
				return invalid(CodeInvalidConfig, fmt.Sprintf("%s.messages[%d].fragment", p, i), "a messages fragment's messages are role and content")
			}
		}
		if err := checkIncludes(p+".fragments", f.templateTexts(), f.Fragments); err != nil {
			return err
		}
		if err := checkRefs(p+".fragments", f.Fragments, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (f FragmentRef) templateTexts() []template {
	var out []template
	if f.Text != nil {
		out = append(out, template{"text", *f.Text})
	}
	for i, m := range f.Messages {
		out = append(out, template{fmt.Sprintf("messages[%d].content", i), m.Content})
	}
	return out
}

// checkIncludes refuses an include of an undeclared alias or of a
// messages fragment.
func checkIncludes(path string, ts []template, frags map[string]FragmentRef) error {
	for _, t := range ts {
		for _, a := range Partials(t.text) {
			f, ok := frags[a]
			if !ok {
				return invalid(CodeInvalidConfig, path+"."+a, "{{> %s}} in %s names no fragment: declare the alias in fragments", a, t.field)
			}
			if f.Pinned() && f.Text == nil {
				return invalid(CodeInvalidConfig, path+"."+a, "{{> %s}} in %s includes a messages fragment: insert it with a message {\"fragment\": %q}", a, t.field, a)
			}
		}
	}
	return nil
}
