package jsonmerge

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestPath_String(t *testing.T) {
	tests := []struct {
		path Path
		want string
	}{
		{Path{}, ""},
		{Path{{Member: "tools"}, {Key: "name", Value: "search"}, {Member: "description"}}, "tools[name=search].description"},
		{Path{{Key: "id", Value: "7"}, {Member: "a"}}, "[id=7].a"},
		{Path{{Member: "metadata"}, {Member: "a.b"}}, `metadata."a.b"`},
		{Path{{Member: "m"}, {Member: ""}}, `m.""`},
		{Path{{Member: "t"}, {Key: "name", Value: "a]b"}}, `t[name="a]b"]`},
		{Path{{Member: "t"}, {Key: "name", Value: "x=y z"}}, `t[name="x=y z"]`},
		{Path{{Member: `say "hi"`}}, `"say \"hi\""`},
		{Path{{Member: "café-1_x"}}, "café-1_x"},
	}
	for _, tt := range tests {
		if got := tt.path.String(); got != tt.want {
			t.Errorf("String() = %s, want %s", got, tt.want)
		}
	}
}

func TestPath_JSON_roundTrips(t *testing.T) {
	p := Path{{Member: "tools"}, {Key: "name", Value: "search"}, {Member: ""}, {Member: "description"}}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := `["tools",{"name":"search"},"","description"]`; string(b) != want {
		t.Fatalf("Marshal = %s, want %s", b, want)
	}
	var back Path
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back, p) {
		t.Fatalf("Unmarshal = %#v, want %#v", back, p)
	}
}

func TestSegment_UnmarshalJSON_refusesOtherShapes(t *testing.T) {
	for _, in := range []string{`null`, `1`, `{}`, `{"name":1}`, `{"":"x"}`, `{"a":"x","b":"y"}`, `["a"]`} {
		var s Segment
		if err := json.Unmarshal([]byte(in), &s); err == nil {
			t.Errorf("%s: decoded as %#v, want an error", in, s)
		}
	}
}
