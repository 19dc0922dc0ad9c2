package prompt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/internal/canonjson"
)

// PinConfig resolves every fragment reference of a config document
// through src and returns the document with each pinned: {name, version,
// content_hash, the content} (env kept when the reference named one: the
// env is resolved now, its version recorded). A fragment's variables join
// the config's: the config's own declaration wins, a declaration of
// another type is refused. A document without fragments is returned as
// it is. Missing fragments, cycles (a fragment name twice on one path of
// includes) and nesting beyond MaxFragmentDepth are refused, naming the
// field.
func PinConfig(raw []byte, src FragmentSource) ([]byte, error) {
	return pin(raw, "config", "", src)
}

// PinFragment is PinConfig for a fragment version's content, self its
// name (a path back to it is a cycle).
func PinFragment(raw []byte, self string, src FragmentSource) ([]byte, error) {
	return pin(raw, "fragment", self, src)
}

// HasFragments reports whether a config document has a "fragments" member.
func HasFragments(raw []byte) bool {
	if !bytes.Contains(raw, []byte(`"fragments"`)) {
		return false // the common case, without parsing
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return false
	}
	_, ok := top["fragments"]
	return ok
}

var refMembers = []string{"name", "version", "env", "content_hash", "text", "messages", "variables", "fragments"}

func pin(raw []byte, root, self string, src FragmentSource) ([]byte, error) {
	canon, err := canonjson.Canonical(raw)
	if err != nil {
		return nil, invalid(CodeInvalidConfig, root, "%v", err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(canon, &top); err != nil {
		return nil, invalid(CodeInvalidConfig, root, "%s must be a JSON object", root)
	}
	fr, ok := top["fragments"]
	if !ok {
		return canon, nil
	}
	var refs map[string]json.RawMessage
	if len(fr) == 0 || fr[0] != '{' || json.Unmarshal(fr, &refs) != nil {
		return nil, invalid(CodeInvalidConfig, root+".fragments", "fragments must be an object of aliases")
	}
	if len(refs) > MaxFragmentsPerConfig {
		return nil, invalid(CodeInvalidConfig, root+".fragments", "at most %d fragments", MaxFragmentsPerConfig)
	}
	var vars map[string]Variable
	if v, ok := top["variables"]; ok {
		if err := strictDecode(v, &vars); err != nil {
			return nil, invalid(CodeInvalidConfig, root+".variables", "%s", jsonErrText(err))
		}
	}
	if vars == nil {
		vars = map[string]Variable{}
	}
	own := make(map[string]bool, len(vars))
	for n := range vars {
		own[n] = true
	}
	pinned := make(map[string]FragmentRef, len(refs))
	aliases := make([]string, 0, len(refs))
	for a := range refs {
		aliases = append(aliases, a)
	}
	sort.Strings(aliases)
	for _, alias := range aliases {
		field := root + ".fragments." + alias
		if !validVarName(alias) {
			return nil, invalid(CodeInvalidConfig, field, "fragment aliases are [A-Za-z_][A-Za-z0-9_]*")
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(refs[alias], &m); err != nil || refs[alias][0] != '{' {
			return nil, invalid(CodeInvalidConfig, field, "a fragment reference is an object {name, version} or {name, env}")
		}
		for k := range m {
			if !containsStr(refMembers, k) {
				return nil, invalid(CodeInvalidConfig, field+"."+k, "unknown field")
			}
		}
		var ref FragmentRef
		if err := json.Unmarshal(refs[alias], &ref); err != nil {
			return nil, invalid(CodeInvalidConfig, field, "%s", jsonErrText(err))
		}
		if err := ident.Validate("name", ref.Name); err != nil {
			return nil, invalid(CodeInvalidConfig, field+".name", "name must be 1..128 of [A-Za-z0-9._-], first alphanumeric")
		}
		if ref.Env != "" {
			if err := ident.Validate("env", ref.Env); err != nil {
				return nil, invalid(CodeInvalidConfig, field+".env", "env must be 1..128 of [A-Za-z0-9._-], first alphanumeric")
			}
		}
		if ref.Env == "" && ref.Version <= 0 {
			return nil, invalid(CodeInvalidConfig, field, "a fragment reference names a version (>= 1) or an env")
		}
		if ref.Name == self {
			return nil, invalid(CodeInvalidConfig, field, "fragment cycle: %s -> %s", self, self)
		}
		fv, err := src(ref.Name, map[bool]int{true: 0, false: ref.Version}[ref.Env != ""], ref.Env)
		if err != nil {
			return nil, err
		}
		if fv == nil {
			what := fmt.Sprintf("v%d", ref.Version)
			if ref.Env != "" {
				what = "in env " + ref.Env
			}
			return nil, invalid(CodeInvalidConfig, field, "fragment %s %s does not exist", ref.Name, what)
		}
		if ref.Env == "" && ref.ContentHash != "" && ref.ContentHash != fv.ContentHash {
			return nil, invalid(CodeInvalidConfig, field+".content_hash", "fragment %s v%d has content_hash %s, not %s", ref.Name, fv.Version, fv.ContentHash, ref.ContentHash)
		}
		var body Fragment
		if err := json.Unmarshal(fv.Body, &body); err != nil {
			return nil, fmt.Errorf("prompt: stored fragment %s v%d: %w", fv.Name, fv.Version, err)
		}
		p := FragmentRef{Name: fv.Name, Version: fv.Version, Env: ref.Env, ContentHash: fv.ContentHash, Text: body.Text,
			Messages: body.Messages, Variables: body.Variables, Fragments: body.Fragments}
		path, depth := []string{}, 1
		if self != "" {
			path, depth = append(path, self), 2
		}
		if err := walkRefs(field, append(path, p.Name), p.Fragments, depth); err != nil {
			return nil, err
		}
		for _, vn := range sortedVarNames(body.Variables) {
			d := body.Variables[vn]
			if have, ok := vars[vn]; ok {
				if have.Kind() != d.Kind() {
					return nil, invalid(CodeInvalidConfig, root+".variables."+vn, "variable %s is %s here and %s in fragment %s", vn, have.Kind(), d.Kind(), p.Name)
				}
				if own[vn] {
					continue // the document's own declaration wins
				}
				continue // the first fragment (by alias) to declare it wins
			}
			vars[vn] = d
		}
		pinned[alias] = p
	}
	top["fragments"], _ = json.Marshal(pinned)
	if len(vars) > 0 {
		top["variables"], _ = json.Marshal(vars)
	}
	out, err := json.Marshal(top)
	if err != nil {
		return nil, err
	}
	return canonjson.Canonical(out)
}

// walkRefs refuses a name twice on one path of includes, and depth beyond
// MaxFragmentDepth; depth is the depth of the fragments holding frags.
func walkRefs(field string, path []string, frags map[string]FragmentRef, depth int) error {
	if len(frags) > 0 && depth >= MaxFragmentDepth {
		return invalid(CodeInvalidConfig, field, "fragments nest at most %d deep: %s -> ...", MaxFragmentDepth, strings.Join(path, " -> "))
	}
	for _, a := range sortedAliases(frags) {
		f := frags[a]
		if containsStr(path, f.Name) {
			return invalid(CodeInvalidConfig, field, "fragment cycle: %s -> %s", strings.Join(path, " -> "), f.Name)
		}
		if err := walkRefs(field, append(append([]string(nil), path...), f.Name), f.Fragments, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func sortedVarNames(m map[string]Variable) []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func strictDecode(raw []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(dst)
}

// ParseFragment validates a fragment version's content (pinned: after
// PinFragment) and returns it with its canonical JSON: exactly one of a
// non-empty text (at most MaxFragmentTextBytes) and 1..MaxFragmentMessages
// messages {role, content}; every placeholder declared in variables; every
// include declared in fragments and a text fragment.
func ParseFragment(raw []byte) (*Fragment, []byte, error) {
	canon, err := canonjson.Canonical(raw)
	if err != nil {
		return nil, nil, invalid(CodeInvalidConfig, "fragment", "%v", err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(canon, &top); err != nil {
		return nil, nil, invalid(CodeInvalidConfig, "fragment", "a fragment is a JSON object")
	}
	for k := range top {
		switch k {
		case "text", "messages", "variables", "fragments":
		default:
			return nil, nil, invalid(CodeInvalidConfig, "fragment."+k, "unknown field")
		}
	}
	f := &Fragment{}
	if err := strictDecode(canon, f); err != nil {
		return nil, nil, invalid(CodeInvalidConfig, "fragment", "%s", jsonErrText(err))
	}
	switch {
	case (f.Text == nil) == (top["messages"] == nil):
		return nil, nil, invalid(CodeInvalidConfig, "fragment", "a fragment has text or messages (one of them)")
	case f.Text != nil && *f.Text == "":
		return nil, nil, invalid(CodeInvalidConfig, "fragment.text", "text is not empty")
	case f.Text != nil && len(*f.Text) > MaxFragmentTextBytes:
		return nil, nil, invalid(CodeInvalidConfig, "fragment.text", "text is at most %d bytes", MaxFragmentTextBytes)
	case f.Text == nil && len(f.Messages) == 0:
		return nil, nil, invalid(CodeInvalidConfig, "fragment.messages", "messages holds 1..%d messages", MaxFragmentMessages)
	case len(f.Messages) > MaxFragmentMessages:
		return nil, nil, invalid(CodeInvalidConfig, "fragment.messages", "at most %d messages", MaxFragmentMessages)
	case len(f.Variables) > MaxVariables:
		return nil, nil, invalid(CodeInvalidConfig, "fragment.variables", "at most %d variables", MaxVariables)
	}
	var present []map[string]json.RawMessage
	_ = json.Unmarshal(top["messages"], &present)
	for i, m := range f.Messages {
		p := fmt.Sprintf("fragment.messages[%d]", i)
		if m.Fragment != "" {
			return nil, nil, invalid(CodeInvalidConfig, p+".fragment", "a messages fragment's messages are role and content")
		}
		if i < len(present) {
			if _, ok := present[i]["content"]; !ok {
				return nil, nil, invalid(CodeInvalidConfig, p+".content", "content is required")
			}
		}
		switch m.Role {
		case "user", "assistant", "system":
		default:
			return nil, nil, invalid(CodeInvalidConfig, p+".role", "role must be user, assistant or system")
		}
	}
	for _, name := range sortedVarNames(f.Variables) {
		if !validVarName(name) {
			return nil, nil, invalid(CodeInvalidConfig, "fragment.variables."+name, "variable names are [A-Za-z_][A-Za-z0-9_]*")
		}
		if err := f.Variables[name].validate(name); err != nil {
			if ie, ok := err.(*InvalidError); ok {
				ie.Field = "fragment" + strings.TrimPrefix(ie.Field, "config")
			}
			return nil, nil, err
		}
	}
	if err := checkRefs("fragment.fragments", f.Fragments, 2); err != nil {
		return nil, nil, err
	}
	own := FragmentRef{Text: f.Text, Messages: f.Messages}
	ts := own.templateTexts()
	for i := range ts {
		ts[i].field = "fragment." + ts[i].field
	}
	if err := checkIncludes("fragment.fragments", ts, f.Fragments); err != nil {
		return nil, nil, err
	}
	for _, t := range fragmentTemplates("fragment.fragments", f.Fragments, ts) {
		for _, name := range Placeholders(t.text) {
			if _, ok := f.Variables[name]; !ok {
				return nil, nil, &InvalidError{Code: CodeUndeclaredVariable, Field: t.field, Variable: name,
					Detail: fmt.Sprintf("placeholder {{%s}} is not declared in variables", name)}
			}
		}
	}
	return f, canon, nil
}
