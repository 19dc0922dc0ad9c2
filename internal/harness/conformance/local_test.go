package conformance

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"testing"
)

const vectorsPath = "../../../testdata/conformance/vectors.json"

// The Go evaluator (package bundle) gives every vector's answers,
// compared as SDKs compare them (parsed JSON, deep equality) and byte for
// byte.
func TestVectors_localGoEvaluator_givesEveryAnswer(t *testing.T) {
	f, err := Load(vectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	if f.Format != FormatVersion || len(f.Vectors) < 40 {
		t.Fatalf("format %d, %d vectors", f.Format, len(f.Vectors))
	}
	passed := 0
	for _, v := range f.Vectors {
		got, err := Answers(v)
		if err != nil {
			t.Errorf("%s: %v", v.Name, err)
			continue
		}
		ok := true
		for _, c := range []struct {
			what      string
			got, want json.RawMessage
		}{{"resolve", got.Resolve, v.Expect.Resolve}, {"assembled", got.Assembled, v.Expect.Assembled}} {
			if !sameJSON(c.got, c.want) {
				t.Errorf("%s: %s\n got %s\nwant %s", v.Name, c.what, c.got, c.want)
				ok = false
			}
		}
		if ok {
			passed++
		}
	}
	t.Logf("local Go: %d/%d vectors", passed, len(f.Vectors))
}

// vectors.json is what the generator writes: regenerate it with
// go run ./internal/harness/conformance/gen after changing a case.
func TestVectors_fileIsGenerated(t *testing.T) {
	want, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("testdata/conformance/vectors.json is stale: go run ./internal/harness/conformance/gen")
	}
}

// sameJSON compares as testdata/conformance/README.md asks SDKs to: parsed, deep equality,
// numbers by value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
