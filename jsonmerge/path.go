package jsonmerge

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Segment is one step of a Path: a member name, or an element of a keyed
// array (Key is the key member's name, Value its value). A Segment with a
// Key is an element; otherwise it is the member Member.
type Segment struct {
	Member string
	Key    string
	Value  string
}

// MarshalJSON writes a member as a JSON string and an element as
// {"<Key>": "<Value>"}.
func (s Segment) MarshalJSON() ([]byte, error) {
	if s.Key != "" {
		return json.Marshal(map[string]string{s.Key: s.Value})
	}
	return json.Marshal(s.Member)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Segment) UnmarshalJSON(b []byte) error {
	var kv map[string]string
	switch {
	case len(b) > 0 && b[0] == '"':
		*s = Segment{}
		return json.Unmarshal(b, &s.Member)
	case len(b) > 0 && b[0] == '{' && json.Unmarshal(b, &kv) == nil && len(kv) == 1:
		for k, v := range kv {
			if k != "" {
				*s = Segment{Key: k, Value: v}
				return nil
			}
		}
	}
	return fmt.Errorf("jsonmerge: a path segment is a string or an object of one non-empty string member, not %s", b)
}

// Path is where a value sits in a document; the empty Path is the root.
type Path []Segment

// String writes p as members joined by dots and elements in brackets:
// tools[name=search].description. A name or value that is empty or holds
// a dot, bracket, equals sign, quote, backslash, space or control character
// is written as a quoted Go string: metadata."a.b". The root is "".
func (p Path) String() string {
	var sb strings.Builder
	for i, s := range p {
		if s.Key != "" {
			sb.WriteString("[" + token(s.Key) + "=" + token(s.Value) + "]")
			continue
		}
		if i > 0 {
			sb.WriteByte('.')
		}
		sb.WriteString(token(s.Member))
	}
	return sb.String()
}

func token(s string) string {
	special := func(r rune) bool {
		return strings.ContainsRune(`.[]="\`, r) || unicode.IsSpace(r) || !unicode.IsPrint(r)
	}
	if s == "" || strings.ContainsFunc(s, special) {
		return strconv.Quote(s)
	}
	return s
}

// member and element return p extended by one step, never sharing p's
// backing array (paths are kept in conflicts).
func (p Path) member(name string) Path {
	return append(p[:len(p):len(p)], Segment{Member: name})
}

func (p Path) element(key, value string) Path {
	return append(p[:len(p):len(p)], Segment{Key: key, Value: value})
}

// Conflict is one place where both sides changed the document differently.
// Base, Ours and Theirs are the canonical JSON of the value there on each
// side; nil means absent there (deleted, or never added).
type Conflict struct {
	Path   Path            `json:"path"`
	Base   json.RawMessage `json:"base,omitempty"`
	Ours   json.RawMessage `json:"ours,omitempty"`
	Theirs json.RawMessage `json:"theirs,omitempty"`
}
