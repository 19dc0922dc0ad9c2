package jsonin

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

type inner struct {
	Name string `json:"name"`
	N    int    `json:"n,omitempty"`
}

type Embedded struct {
	Shared string `json:"shared"`
	Deep   string `json:"deep"`
}

type outer struct {
	Embedded
	*inner `json:"-"`
	Inner  *inner              `json:"inner"`
	List   []inner             `json:"list"`
	Ptrs   []*inner            `json:"ptrs"`
	ByName map[string]inner    `json:"by_name"`
	Raw    json.RawMessage     `json:"raw"`
	Any    any                 `json:"any"`
	Free   map[string]any      `json:"free"`
	When   time.Time           `json:"when"`
	Arr    [2]inner            `json:"arr"`
	Deep   string              `json:"deep"` // hides Embedded.Deep
	Plain  string              // named Plain
	Skip   string              `json:"-"`
	Dash   string              `json:"-,"`
	Nested map[string][]*inner `json:"nested"`
	hidden string
}

func TestCheckFor_refusesUnknownAndMiscasedMembersAtEveryDepth(t *testing.T) {
	typ := reflect.TypeFor[*outer]()
	for _, c := range []struct{ doc, path string }{
		{`{"nope": 1}`, "nope"},
		{`{"Inner": {}}`, "Inner"},
		{`{"inner": {"Name": "x"}}`, "inner.Name"},
		{`{"inner": {"name": "x", "NAME": "y"}}`, "inner.NAME"},
		{`{"list": [{"name": "a"}, {"nam": "b"}]}`, "list[1].nam"},
		{`{"ptrs": [null, {"x": 1}]}`, "ptrs[1].x"},
		{`{"by_name": {"k": {"name": "a", "z": 1}}}`, "by_name.k.z"},
		{`{"arr": [{}, {"q": 1}]}`, "arr[1].q"},
		{`{"nested": {"k": [{"name": "a"}, {"Name": "b"}]}}`, "nested.k[1].Name"},
		{`{"Skip": "x"}`, "Skip"},
		{`{"hidden": "x"}`, "hidden"},
		{`{"Embedded": {}}`, "Embedded"},
		{`{"plain": "x"}`, "plain"},
	} {
		err := CheckFor([]byte(c.doc), 0, typ)
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrUnknownMember) || e.Path != c.path {
			t.Errorf("CheckFor(%s) = %v, want an unknown member at %q", c.doc, err, c.path)
		}
	}
}

func TestCheckFor_acceptsWhatTheTypeHas_andLooksNotIntoWhatDecodesItself(t *testing.T) {
	typ := reflect.TypeFor[outer]()
	for _, doc := range []string{
		`{}`, `{"shared": "s", "deep": "d", "Plain": "p", "-": "dash"}`,
		`{"inner": null, "list": null, "by_name": null}`,
		`{"inner": {"name": "a", "n": 1}, "list": [{"name": "b"}], "ptrs": [null], "by_name": {"k": {}}}`,
		`{"raw": {"Anything": {"goes": [1]}}, "any": {"X": 1}, "free": {"a": {"B": 2}}, "when": "2026-01-01T00:00:00Z"}`,
		// The wrong kind of value: left to encoding/json's type error.
		`{"inner": [1], "list": {"name": 1}, "by_name": [1]}`,
		`[{"x": 1}]`, `"x"`,
	} {
		if err := CheckFor([]byte(doc), 0, typ); err != nil {
			t.Errorf("CheckFor(%s) = %v, want nil", doc, err)
		}
	}
	// Still Check: duplicates, syntax.
	if err := CheckFor([]byte(`{"inner": {"name": "a", "name": "b"}}`), 0, typ); !errors.Is(err, ErrDuplicateKey) {
		t.Errorf("duplicate: %v", err)
	}
	if err := CheckFor([]byte(`{"inner": {"name": }}`), 0, typ); err == nil {
		t.Error("a syntax error passed")
	}
}

type tree struct {
	Label    string  `json:"label"`
	Children []*tree `json:"children"`
}

func TestCheckFor_followsRecursiveTypes(t *testing.T) {
	doc := `{"label": "a", "children": [{"label": "b", "children": [{"label": "c", "kids": []}]}]}`
	err := CheckFor([]byte(doc), 0, reflect.TypeFor[tree]())
	var e *Error
	if !errors.As(err, &e) || e.Path != "children[0].children[0].kids" {
		t.Fatalf("CheckFor = %v", err)
	}
}

func TestDecode_isCheckForThenUnmarshal(t *testing.T) {
	var v struct {
		A struct {
			B int `json:"b"`
		} `json:"a"`
	}
	if err := Decode([]byte(`{"a": {"B": 1}}`), &v); !errors.Is(err, ErrUnknownMember) {
		t.Fatalf("Decode = %v", err)
	}
	if err := Decode([]byte(`{"a": {"b": 2}}`), &v); err != nil || v.A.B != 2 {
		t.Fatalf("Decode = %v, %+v", err, v)
	}
	var te *json.UnmarshalTypeError
	if err := Decode([]byte(`{"a": {"b": "x"}}`), &v); !errors.As(err, &te) || !strings.Contains(te.Field, "b") {
		t.Fatalf("a type error: %v", err)
	}
}
