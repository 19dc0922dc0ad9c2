package promptstore

import (
	"bytes"
	"encoding/json"
	"testing"
)

func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1,2,{"d":null,"c":"x"}]}`, `"\u2028<>&"`, `1.50e3`, `[]`, `{"a":{"a":{"a":{}}}}`, `{"a":1,"a":2}`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		c, err := Canonical(doc)
		if err != nil {
			return
		}
		if !json.Valid(c) {
			t.Fatalf("canonical form is not JSON: %q", c)
		}
		again, err := Canonical(c)
		if err != nil || !bytes.Equal(again, c) {
			t.Fatalf("not a fixed point: %q -> %q (%v)", c, again, err)
		}
		if ContentHash(c) != ContentHash(again) {
			t.Fatal("hash differs")
		}
	})
}
