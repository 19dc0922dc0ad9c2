package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// PathStep is one step of a merge conflict's path: a member of an object
// (Member), or the element of a keyed array whose Key member is Value (the
// board merges arrays of objects by their "id", else their "name"). On the
// wire a member is a JSON string and an element a one-member object
// {"<Key>": "<Value>"}.
type PathStep struct {
	Member     string
	Key, Value string
}

// Keyed reports whether s is an element of a keyed array.
func (s PathStep) Keyed() bool { return s.Key != "" }

// String is the member's name, or "[key=value]" for an element.
func (s PathStep) String() string {
	if s.Keyed() {
		return "[" + s.Key + "=" + s.Value + "]"
	}
	return s.Member
}

// MarshalJSON writes the step as the wire has it.
func (s PathStep) MarshalJSON() ([]byte, error) {
	if s.Keyed() {
		return json.Marshal(map[string]string{s.Key: s.Value})
	}
	return json.Marshal(s.Member)
}

// UnmarshalJSON reads a member (a JSON string) or an element (an object
// of one member whose value is a string).
func (s *PathStep) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		*s = PathStep{}
		return json.Unmarshal(b, &s.Member)
	}
	var kv map[string]string
	if len(b) > 0 && b[0] == '{' && json.Unmarshal(b, &kv) == nil && len(kv) == 1 {
		for k, v := range kv {
			if k != "" {
				*s = PathStep{Key: k, Value: v}
				return nil
			}
		}
	}
	return fmt.Errorf("promptd: a merge path step is a member name or {key: value}, not %.60s", b)
}

// MergePath is one path both sides of a merge changed differently: the
// value at the base, in the write (Ours) and in the record now (Theirs).
// A nil value is absent on that side (deleted, or never there); a JSON
// null is the JSON "null".
type MergePath struct {
	Path   []PathStep      `json:"path"`
	Base   json.RawMessage `json:"base,omitempty"`
	Ours   json.RawMessage `json:"ours,omitempty"`
	Theirs json.RawMessage `json:"theirs,omitempty"`
}

// String is the path readably: members joined by dots, elements in
// brackets ("items[id=3].title"; "" for the whole payload).
func (p MergePath) String() string {
	var b strings.Builder
	for i, s := range p.Path {
		if i > 0 && !s.Keyed() {
			b.WriteByte('.')
		}
		b.WriteString(s.String())
	}
	return b.String()
}

// MergePathsOf decodes the paths of a batch item's merge_conflict: nil
// for another conflict, or paths that do not decode.
func MergePathsOf(c *BatchItemConflict) []MergePath {
	if c == nil || c.Code != string(ErrMergeConflict) || len(c.Conflicts) == 0 {
		return nil
	}
	var out []MergePath
	if json.Unmarshal(c.Conflicts, &out) != nil {
		return nil
	}
	return out
}
