package promptstore

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestCanonical_sortsKeysKeepsNumbersNoHTMLEscape(t *testing.T) {
	in := `{ "b": 1.50, "a": {"z": [3, 1e2, -0], "y": "<&> \u00e9 \n"}, "c": null, "d": true }`
	got, err := Canonical([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":{"y":"<&> é \n","z":[3,1e2,-0]},"b":1.50,"c":null,"d":true}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	again, _ := Canonical(got)
	if string(again) != string(got) {
		t.Fatal("canonical form is not a fixed point")
	}
}

func TestCanonical_rejectsDuplicateKeysAndTrailingData(t *testing.T) {
	for _, in := range []string{`{"a":1,"a":2}`, `{"a":1} {}`, `{"a":`, `[1,]`, ``} {
		if _, err := Canonical([]byte(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
	if _, err := Canonical([]byte(`{"a":{"x":1,"x":1}}`)); !errors.Is(err, ErrDuplicateKey) {
		t.Fatalf("nested duplicate: %v", err)
	}
}

// TestCanonical_refusesHostileDocuments: 3 MiB of '[' overflowed the
// goroutine stack (a fatal error, the process died); invalid UTF-8 and a
// lone surrogate were replaced by U+FFFD, so two different configs had the
// same content hash.
func TestCanonical_refusesHostileDocuments(t *testing.T) {
	for name, doc := range map[string]string{
		"3 MiB of [":       strings.Repeat("[", 3<<20),
		"65 levels":        strings.Repeat("[", 65) + strings.Repeat("]", 65),
		"invalid UTF-8":    "{\"system\":\"a\xffb\"}",
		"lone surrogate":   `{"system":"a\ud800b"}`,
		"nested duplicate": `{"a":{"b":1,"b":2}}`,
	} {
		if out, err := Canonical([]byte(doc)); err == nil {
			t.Errorf("%s: accepted as %.40q", name, out)
		}
	}
	replaced, err := Canonical([]byte(`{"system":"a\ufffdb"}`))
	if err != nil || string(replaced) != "{\"system\":\"a\uFFFDb\"}" {
		t.Fatalf("a real U+FFFD: %q, %v", replaced, err)
	}
	if _, err := Canonical([]byte(strings.Repeat("[", 64) + strings.Repeat("]", 64))); err != nil {
		t.Fatalf("64 levels: %v", err)
	}
}

func TestContentHash_sameForReorderedDocuments(t *testing.T) {
	a, _ := Canonical([]byte(`{"system":"x","model":{"name":"m","temperature":0.2}}`))
	b, _ := Canonical([]byte("{\"model\":{\"temperature\":0.2,\"name\":\"m\"},\n \"system\":\"x\"}"))
	if ContentHash(a) != ContentHash(b) {
		t.Fatal("hash depends on key order or whitespace")
	}
	if h := ContentHash([]byte("hello")); h != "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" {
		t.Fatalf("hash = %s", h)
	}
}

// The snapshot cache is bounded by the bytes of its configs as well as by
// count: a few large configs used to stay, 4096 of them, whatever their
// size.
func TestSnapshotCache_isBoundedByBytes(t *testing.T) {
	c := newSnapshotCache(4096, 10<<20)
	big := json.RawMessage(`{"system": "` + strings.Repeat("x", 1<<20) + `"}`)
	for i := range 20 {
		c.put(&Snapshot{Version: &Version{Agent: "a", Version: i + 1, Config: big}})
	}
	if c.bytes > 10<<20 || c.ll.Len() > 5 {
		t.Fatalf("cache holds %d snapshots, %d bytes; want at most 10 MiB", c.ll.Len(), c.bytes)
	}
	if c.get("a", 20) == nil || c.get("a", 1) != nil {
		t.Fatal("not least-recently-used: the newest is gone or the oldest stayed")
	}
	c.put(&Snapshot{Version: &Version{Agent: "a", Version: 99, Config: json.RawMessage(`{"system": "` + strings.Repeat("y", 6<<20) + `"}`)}})
	if c.get("a", 99) != nil {
		t.Fatal("a snapshot larger than the whole cache was kept")
	}
}
