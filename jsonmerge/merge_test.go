package jsonmerge

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

var byName = []string{"name"}

func TestMerge_rules(t *testing.T) {
	tests := []struct {
		name               string
		base, ours, theirs string
		keys               []string
		want               string   // the merged document, when no conflict
		conflicts          []string // the conflicts' paths, otherwise
	}{
		// Rules 1 and 2.
		{name: "nothing changed", base: `{"a":1}`, ours: `{"a":1}`, theirs: `{"a":1}`, want: `{"a":1}`},
		{name: "the same change on both sides", base: `{"a":1}`, ours: `{"a":2}`, theirs: `{"a":2}`, want: `{"a":2}`},
		{name: "ours changed only", base: `{"a":1,"b":1}`, ours: `{"a":2,"b":1}`, theirs: `{"a":1,"b":1}`, want: `{"a":2,"b":1}`},
		{name: "theirs changed only", base: `{"a":1,"b":1}`, ours: `{"a":1,"b":1}`, theirs: `{"a":1,"b":3}`, want: `{"a":1,"b":3}`},
		{name: "member order does not count as a change", base: `{"a":1,"b":{"x":1,"y":2}}`, ours: `{"b":{"y":2,"x":1},"a":1}`, theirs: `{"a":5,"b":{"x":1,"y":2}}`, want: `{"a":5,"b":{"x":1,"y":2}}`},
		{name: "deletion vs unchanged deletes", base: `{"a":1,"b":2}`, ours: `{"b":2}`, theirs: `{"a":1,"b":2}`, want: `{"b":2}`},
		{name: "deletion vs a change elsewhere", base: `{"a":1,"b":2}`, ours: `{"b":2}`, theirs: `{"a":1,"b":3}`, want: `{"b":3}`},
		{name: "deletion on both sides", base: `{"a":1,"b":2}`, ours: `{"b":2}`, theirs: `{"b":2}`, want: `{"b":2}`},
		{name: "deletion vs change conflicts", base: `{"a":1}`, ours: `{}`, theirs: `{"a":2}`, conflicts: []string{"a"}},
		{name: "null is not absent", base: `{"a":1}`, ours: `{"a":null}`, theirs: `{}`, conflicts: []string{"a"}},
		// Rule 3.
		{name: "changes to different members merge", base: `{"a":1,"b":1}`, ours: `{"a":2,"b":1}`, theirs: `{"a":1,"b":3,"c":4}`, want: `{"a":2,"b":3,"c":4}`},
		{name: "different changes to one member conflict", base: `{"a":1,"b":1}`, ours: `{"a":2,"b":1}`, theirs: `{"a":3,"b":1}`, conflicts: []string{"a"}},
		{name: "nested objects merge member by member", base: `{"p":{"q":{"x":1,"y":1}}}`, ours: `{"p":{"q":{"x":2,"y":1}}}`, theirs: `{"p":{"q":{"x":1,"y":2}}}`, want: `{"p":{"q":{"x":2,"y":2}}}`},
		{name: "both add the same member equal", base: `{}`, ours: `{"a":"v"}`, theirs: `{"a":"v"}`, want: `{"a":"v"}`},
		{name: "both add the same member differently", base: `{}`, ours: `{"a":"v"}`, theirs: `{"a":"w"}`, conflicts: []string{"a"}},
		{name: "both add an object, members apart", base: `{}`, ours: `{"m":{"x":1}}`, theirs: `{"m":{"y":2}}`, want: `{"m":{"x":1,"y":2}}`},
		{name: "both add an object, one member apart", base: `{}`, ours: `{"m":{"x":1,"z":1}}`, theirs: `{"m":{"x":2,"z":1}}`, conflicts: []string{"m.x"}},
		{name: "an object replaced by a scalar vs a change inside", base: `{"a":{"x":1}}`, ours: `{"a":"flat"}`, theirs: `{"a":{"x":2}}`, conflicts: []string{"a"}},
		{name: "root scalars", base: `1`, ours: `2`, theirs: `3`, conflicts: []string{""}},
		{name: "every conflict is reported, in document order", base: `{"a":1,"b":{"c":1},"d":1}`, ours: `{"a":2,"b":{"c":2},"d":2}`, theirs: `{"a":3,"b":{"c":3},"d":1}`, conflicts: []string{"a", "b.c"}},
		// Numbers are compared, and kept, by their literal.
		{name: "a number's literal is kept", base: `{"t":1.50,"u":1}`, ours: `{"t":1.50,"u":2}`, theirs: `{"t":1.50,"u":1}`, want: `{"t":1.50,"u":2}`},
		{name: "big and exponent literals are kept", base: `{"a":1}`, ours: `{"a":1,"b":12345678901234567890123456789}`, theirs: `{"a":1E+2}`, want: `{"a":1E+2,"b":12345678901234567890123456789}`},
		{name: "strings are not HTML-escaped", base: `{"s":"a"}`, ours: `{"s":"<a> & \u00e9"}`, theirs: `{"s":"a"}`, want: `{"s":"<a> & é"}`},
		{name: "a changed literal is kept", base: `{"t":1.50}`, ours: `{"t":1.50}`, theirs: `{"t":2.500}`, want: `{"t":2.500}`},
		{name: "numbers equal in value but not in literal differ", base: `{"t":0}`, ours: `{"t":1.0}`, theirs: `{"t":1}`, conflicts: []string{"t"}},
		{name: "a rewritten literal is a change", base: `{"t":1}`, ours: `{"t":1.0}`, theirs: `{"t":1}`, want: `{"t":1.0}`},
		// Unkeyed arrays are one value.
		{name: "unkeyed array changed on one side", base: `{"s":["a","b"]}`, ours: `{"s":["a","b","c"]}`, theirs: `{"s":["a","b"]}`, want: `{"s":["a","b","c"]}`},
		{name: "unkeyed array changed on both sides", base: `{"s":["a","b"]}`, ours: `{"s":["a","b","c"]}`, theirs: `{"s":["z","a","b"]}`, conflicts: []string{"s"}},
		{name: "messages without names are one value", base: `{"m":[{"role":"user","content":"hi"}]}`, ours: `{"m":[{"role":"user","content":"hi"},{"role":"user","content":"a"}]}`, theirs: `{"m":[{"role":"system","content":"hi"}]}`, conflicts: []string{"m"}},
		{name: "a duplicate key makes an array one value", base: `{"t":[{"name":"a","v":1},{"name":"a","v":2}]}`, ours: `{"t":[{"name":"a","v":9},{"name":"a","v":2}]}`, theirs: `{"t":[{"name":"a","v":1},{"name":"a","v":8}]}`, conflicts: []string{"t"}},
		{name: "an empty key value makes an array one value", base: `{"t":[{"name":"","v":1},{"name":"b"}]}`, ours: `{"t":[{"name":"","v":2},{"name":"b"}]}`, theirs: `{"t":[{"name":"","v":1},{"name":"b","v":3}]}`, conflicts: []string{"t"}},
		{name: "a non-string key makes an array one value", base: `{"t":[{"name":1},{"name":"b"}]}`, ours: `{"t":[{"name":1,"v":1},{"name":"b"}]}`, theirs: `{"t":[{"name":1},{"name":"b","v":2}]}`, conflicts: []string{"t"}},
		{name: "without keys, arrays of objects are one value", keys: []string{}, base: `{"t":[{"name":"a"},{"name":"b"}]}`, ours: `{"t":[{"name":"a","v":1},{"name":"b"}]}`, theirs: `{"t":[{"name":"a"},{"name":"b","v":2}]}`, conflicts: []string{"t"}},
		// Rule 4: keyed arrays.
		{name: "changes to different elements merge", base: `{"tools":[{"name":"a","d":1},{"name":"b","d":1}]}`, ours: `{"tools":[{"name":"a","d":2},{"name":"b","d":1}]}`, theirs: `{"tools":[{"name":"a","d":1},{"name":"b","d":3}]}`, want: `{"tools":[{"d":2,"name":"a"},{"d":3,"name":"b"}]}`},
		{name: "different changes to one element member conflict", base: `{"tools":[{"name":"a","d":1}]}`, ours: `{"tools":[{"name":"a","d":2}]}`, theirs: `{"tools":[{"name":"a","d":3}]}`, conflicts: []string{"tools[name=a].d"}},
		{name: "element deletion vs unchanged deletes", base: `{"t":[{"name":"a"},{"name":"b"},{"name":"c"}]}`, ours: `{"t":[{"name":"a"},{"name":"c"}]}`, theirs: `{"t":[{"name":"a"},{"name":"b"},{"name":"c","v":1}]}`, want: `{"t":[{"name":"a"},{"name":"c","v":1}]}`},
		{name: "element deletion vs change conflicts", base: `{"t":[{"name":"a"},{"name":"b"}]}`, ours: `{"t":[{"name":"a"}]}`, theirs: `{"t":[{"name":"a"},{"name":"b","v":1}]}`, conflicts: []string{"t[name=b]"}},
		{name: "nested object inside an element", base: `{"t":[{"name":"a","p":{"x":1,"y":1}}]}`, ours: `{"t":[{"name":"a","p":{"x":2,"y":1}}]}`, theirs: `{"t":[{"name":"a","p":{"x":1,"y":2}}]}`, want: `{"t":[{"name":"a","p":{"x":2,"y":2}}]}`},
		{name: "nested conflict inside an element", base: `{"t":[{"name":"a","p":{"x":1}}]}`, ours: `{"t":[{"name":"a","p":{"x":2}}]}`, theirs: `{"t":[{"name":"a","p":{"x":3}}]}`, conflicts: []string{"t[name=a].p.x"}},
		{name: "keyed arrays nested in elements", base: `{"t":[{"name":"a","s":[{"name":"x"},{"name":"y"}]}]}`, ours: `{"t":[{"name":"a","s":[{"name":"x","v":1},{"name":"y"}]}]}`, theirs: `{"t":[{"name":"a","s":[{"name":"x"}]}]}`, want: `{"t":[{"name":"a","s":[{"name":"x","v":1}]}]}`},
		{name: "both add the same key equal", base: `{"t":[{"name":"a"}]}`, ours: `{"t":[{"name":"a"},{"name":"n","v":1}]}`, theirs: `{"t":[{"name":"a"},{"name":"n","v":1}]}`, want: `{"t":[{"name":"a"},{"name":"n","v":1}]}`},
		{name: "both add the same key, members apart", base: `{"t":[{"name":"a"}]}`, ours: `{"t":[{"name":"a"},{"name":"n","v":1}]}`, theirs: `{"t":[{"name":"n","w":2},{"name":"a"}]}`, want: `{"t":[{"name":"a"},{"name":"n","v":1,"w":2}]}`},
		{name: "both add the same key differently", base: `{"t":[{"name":"a"}]}`, ours: `{"t":[{"name":"a"},{"name":"n","v":1}]}`, theirs: `{"t":[{"name":"a"},{"name":"n","v":2}]}`, conflicts: []string{"t[name=n].v"}},
		{name: "both add a keyed array", base: `{}`, ours: `{"t":[{"name":"a"}]}`, theirs: `{"t":[{"name":"b"}]}`, want: `{"t":[{"name":"a"},{"name":"b"}]}`},
		{name: "a key that one array lacks is skipped for the next", keys: []string{"id", "name"}, base: `{"t":[{"id":"1","name":"a"},{"name":"b"}]}`, ours: `{"t":[{"id":"1","name":"a","v":1},{"name":"b"}]}`, theirs: `{"t":[{"id":"1","name":"a","v":2},{"name":"b"}]}`, conflicts: []string{"t[name=a].v"}},
		{name: "the first key that works is used", keys: []string{"id", "name"}, base: `{"t":[{"id":"1","name":"a"}]}`, ours: `{"t":[{"id":"1","name":"a","v":1}]}`, theirs: `{"t":[{"id":"1","name":"a","v":2}]}`, conflicts: []string{"t[id=1].v"}},
		{name: "a renamed element is a deletion and an addition", base: `{"t":[{"name":"a"},{"name":"b"}]}`, ours: `{"t":[{"name":"c"},{"name":"b"}]}`, theirs: `{"t":[{"name":"a"},{"name":"b","v":1}]}`, want: `{"t":[{"name":"c"},{"name":"b","v":1}]}`},
		// Order.
		{name: "additions go after their predecessor, ours first", base: `{"t":[{"name":"a"},{"name":"b"}]}`, ours: `{"t":[{"name":"a"},{"name":"o1"},{"name":"o2"},{"name":"b"}]}`, theirs: `{"t":[{"name":"a"},{"name":"t1"},{"name":"b"},{"name":"t2"}]}`, want: `{"t":[{"name":"a"},{"name":"o1"},{"name":"o2"},{"name":"t1"},{"name":"b"},{"name":"t2"}]}`},
		{name: "additions at the start", base: `{"t":[{"name":"a"}]}`, ours: `{"t":[{"name":"o"},{"name":"a"}]}`, theirs: `{"t":[{"name":"t"},{"name":"a","v":1}]}`, want: `{"t":[{"name":"o"},{"name":"t"},{"name":"a","v":1}]}`},
		{name: "an addition after an element the other side deleted stays in place", base: `{"t":[{"name":"a"},{"name":"b"},{"name":"c"}]}`, ours: `{"t":[{"name":"a"},{"name":"c"}]}`, theirs: `{"t":[{"name":"a"},{"name":"b"},{"name":"n"},{"name":"c"}]}`, want: `{"t":[{"name":"a"},{"name":"n"},{"name":"c"}]}`},
		{name: "ours reordered, theirs changed an element", base: `{"t":[{"name":"a"},{"name":"b"},{"name":"c"}]}`, ours: `{"t":[{"name":"c"},{"name":"a"},{"name":"b"}]}`, theirs: `{"t":[{"name":"a","v":1},{"name":"b"},{"name":"c"}]}`, want: `{"t":[{"name":"c"},{"name":"a","v":1},{"name":"b"}]}`},
		{name: "theirs reordered, ours added after a predecessor", base: `{"t":[{"name":"a"},{"name":"b"},{"name":"c"}]}`, ours: `{"t":[{"name":"a"},{"name":"n"},{"name":"b"},{"name":"c"}]}`, theirs: `{"t":[{"name":"b"},{"name":"c"},{"name":"a"}]}`, want: `{"t":[{"name":"b"},{"name":"c"},{"name":"a"},{"name":"n"}]}`},
		{name: "one side reordered, the other added at the start", base: `{"t":[{"name":"a"},{"name":"b"}]}`, ours: `{"t":[{"name":"b"},{"name":"a"}]}`, theirs: `{"t":[{"name":"n"},{"name":"a"},{"name":"b"}]}`, want: `{"t":[{"name":"n"},{"name":"b"},{"name":"a"}]}`},
		{name: "one side reordered, the other deleted", base: `{"t":[{"name":"a"},{"name":"b"},{"name":"c"}]}`, ours: `{"t":[{"name":"c"},{"name":"b"},{"name":"a"}]}`, theirs: `{"t":[{"name":"a"},{"name":"c"}]}`, want: `{"t":[{"name":"c"},{"name":"a"}]}`},
		{name: "both reordered alike", base: `{"t":[{"name":"a"},{"name":"b"},{"name":"c"}]}`, ours: `{"t":[{"name":"c"},{"name":"a"},{"name":"b"}]}`, theirs: `{"t":[{"name":"c"},{"name":"a","v":1},{"name":"b"}]}`, want: `{"t":[{"name":"c"},{"name":"a","v":1},{"name":"b"}]}`},
		{name: "both reordered differently conflict", base: `{"t":[{"name":"a"},{"name":"b"},{"name":"c"}]}`, ours: `{"t":[{"name":"c"},{"name":"a"},{"name":"b"}]}`, theirs: `{"t":[{"name":"b"},{"name":"a","v":1},{"name":"c"}]}`, conflicts: []string{"t"}},
		{name: "a deletion is not a reorder", base: `{"t":[{"name":"a"},{"name":"b"},{"name":"c"}]}`, ours: `{"t":[{"name":"a"},{"name":"c"}]}`, theirs: `{"t":[{"name":"c"},{"name":"b"},{"name":"a"}]}`, want: `{"t":[{"name":"c"},{"name":"a"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys := byName
			if tt.keys != nil {
				keys = tt.keys
			}
			merged, conflicts, err := Merge([]byte(tt.base), []byte(tt.ours), []byte(tt.theirs), Options{Keys: keys})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range conflicts {
				got = append(got, c.Path.String())
			}
			if !slices.Equal(got, tt.conflicts) {
				t.Fatalf("conflicts at %q, want %q", got, tt.conflicts)
			}
			if tt.conflicts != nil {
				if merged != nil {
					t.Errorf("merged = %s with conflicts, want nil", merged)
				}
				return
			}
			if string(merged) != tt.want {
				t.Errorf("merged = %s\n          want %s", merged, tt.want)
			}
		})
	}
}

func TestMerge_conflict_carriesTheThreeValues(t *testing.T) {
	_, conflicts, err := Merge(
		[]byte(`{"tools":[{"name":"search","description":"Find <things>","n":1.50}]}`),
		[]byte(`{"tools":[]}`),
		[]byte(`{"tools":[{"n":1.50,"description":"Find","name":"search"}]}`),
		Options{Keys: byName})
	if err != nil {
		t.Fatal(err)
	}
	if len(conflicts) != 1 {
		t.Fatalf("conflicts = %v, want one", conflicts)
	}
	c := conflicts[0]
	if got, want := string(c.Base), `{"description":"Find <things>","n":1.50,"name":"search"}`; got != want {
		t.Errorf("Base = %s, want %s", got, want)
	}
	if c.Ours != nil {
		t.Errorf("Ours = %q, want nil (deleted)", c.Ours)
	}
	if got, want := string(c.Theirs), `{"description":"Find","n":1.50,"name":"search"}`; got != want {
		t.Errorf("Theirs = %s, want %s", got, want)
	}
	got, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"path":["tools",{"name":"search"}],"base":{"description":"Find \u003cthings\u003e","n":1.50,"name":"search"},"theirs":{"description":"Find","n":1.50,"name":"search"}}`
	if string(got) != want {
		t.Errorf("Marshal = %s\n   want %s", got, want)
	}
}

func TestMerge_rootConflict_hasAnEmptyPath(t *testing.T) {
	_, conflicts, _ := Merge([]byte(`"a"`), []byte(`"b"`), []byte(`"c"`), Options{})
	got, _ := json.Marshal(conflicts)
	if want := `[{"path":[],"base":"a","ours":"b","theirs":"c"}]`; string(got) != want {
		t.Fatalf("conflicts = %s, want %s", got, want)
	}
}

func TestMerge_invalidInput_isAnError(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	tests := []struct {
		doc  string
		want error
	}{
		{``, ErrInvalidJSON},
		{`{`, ErrInvalidJSON},
		{`{"a":}`, ErrInvalidJSON},
		{`{"a":1,}`, ErrInvalidJSON},
		{`[1,]`, ErrInvalidJSON},
		{`[1 2]`, ErrInvalidJSON},
		{`{1:2}`, ErrInvalidJSON},
		{`nul`, ErrInvalidJSON},
		{`1 2`, ErrInvalidJSON},
		{`{} x`, ErrInvalidJSON},
		{`{"a":1}{"b":2}`, ErrInvalidJSON},
		{`{"a":1}]`, ErrInvalidJSON},
		{"\"caf\xe9\"", ErrInvalidJSON},
		{`{"a":1,"a":2}`, ErrDuplicateKey},
		{deep(MaxDepth + 1), ErrTooDeep},
		{`{"a":` + deep(MaxDepth) + `}`, ErrTooDeep},
	}
	valid := []byte(`{}`)
	for _, tt := range tests {
		for side, in := range [][3][]byte{{[]byte(tt.doc), valid, valid}, {valid, []byte(tt.doc), valid}, {valid, valid, []byte(tt.doc)}} {
			merged, conflicts, err := Merge(in[0], in[1], in[2], Options{Keys: byName})
			if !errors.Is(err, tt.want) || merged != nil || conflicts != nil {
				t.Errorf("%q as input %d: err = %v, want %v", tt.doc, side, err, tt.want)
			}
		}
	}
	for _, doc := range []string{deep(MaxDepth), ` {"a": [1, "x", null, true]} ` + "\n"} {
		if _, _, err := Merge([]byte(doc), []byte(doc), []byte(doc), Options{}); err != nil {
			t.Errorf("%.20q: %v", doc, err)
		}
	}
}

func TestMerge_errorNamesTheInput(t *testing.T) {
	_, _, err := Merge([]byte(`{}`), []byte(`{}`), []byte(`{`), Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "jsonmerge: theirs: ") {
		t.Fatalf("err = %v", err)
	}
}

// A key may be a dotted path: tools are keyed by their function's name.
func TestMerge_dottedKey_keysToolsByTheirFunctionName(t *testing.T) {
	base := `[{"type":"function","function":{"name":"a","description":"A"}},{"type":"function","function":{"name":"b","description":"B"}}]`
	ours := `[{"type":"function","function":{"name":"a","description":"A2"}},{"type":"function","function":{"name":"b","description":"B"}}]`
	theirs := `[{"type":"function","function":{"name":"a","description":"A"}},{"type":"function","function":{"name":"b","description":"B"}},{"type":"function","function":{"name":"c"}}]`
	got, conflicts, err := Merge([]byte(base), []byte(ours), []byte(theirs), Options{Keys: []string{"name", "function.name"}})
	want := `[{"function":{"description":"A2","name":"a"},"type":"function"},{"function":{"description":"B","name":"b"},"type":"function"},{"function":{"name":"c"},"type":"function"}]`
	if err != nil || len(conflicts) != 0 || string(got) != want {
		t.Fatalf("merge = %s %v %v", got, conflicts, err)
	}
	// control: without the dotted key the array is one value, changed on both sides
	if _, conflicts, _ := Merge([]byte(base), []byte(ours), []byte(theirs), Options{Keys: []string{"name"}}); len(conflicts) != 1 {
		t.Fatalf("undotted: %v", conflicts)
	}
	if p := (Path{{Key: "function.name", Value: "a"}, {Member: "description"}}).String(); p == "" {
		t.Fatal("empty path string")
	}
}
