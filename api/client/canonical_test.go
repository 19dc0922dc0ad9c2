package client_test

import (
	"encoding/json"
	"testing"

	"github.com/promptd/promptd/api/client"
	"github.com/promptd/promptd/promptstore"
)

var canonicalDocs = []string{
	`{"system":"x"}`,
	`{ "variables": {"b": {"default": "2"}, "a": {"required": true}},
	   "system": "Hi {{a}} & <b> \u00e9\u2028 \"q\" \\ \t", "model": {"temperature": 0.20, "top_p": 1e-3, "n": -0} }`,
	`{"system":"s","memory":["\u0001","日本"],"tools":[{"type":"function","function":{"name":"f","parameters":{"z":[],"a":{}}}}]}`,
	`{"system":"s","model":{"name":"gpt-4o","max_tokens":12345678901234567890}}`,
}

// TestCanonical_matchesPromptstore: the client's copy of the canonical
// JSON agrees with promptstore's byte for byte.
func TestCanonical_matchesPromptstore(t *testing.T) {
	for _, doc := range canonicalDocs {
		got, err := client.Canonical([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		want, err := promptstore.Canonical([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("canonical of %s:\n got %s\nwant %s", doc, got, want)
		}
		hash, _ := client.ContentHash([]byte(doc))
		if hash != promptstore.ContentHash(want) {
			t.Fatalf("hash of %s: %s, want %s", doc, hash, promptstore.ContentHash(want))
		}
	}
}

// TestContentHash_matchesPromptd: the hash a client computes is the
// content_hash promptd gives the version.
func TestContentHash_matchesPromptd(t *testing.T) {
	s := startPromptd(t)
	ctx := ctxT(t)
	for i, doc := range canonicalDocs[:3] {
		v, err := s.admin.CreateVersion(ctx, "hashes", client.CreateVersionRequest{BaseVersion: i, Config: json.RawMessage(doc)})
		if err != nil {
			t.Fatal(err)
		}
		if hash, _ := client.ContentHash([]byte(doc)); hash != v.ContentHash {
			t.Fatalf("doc %d: client %s, promptd %s", i, hash, v.ContentHash)
		}
	}
}

// FuzzCanonical_matchesPromptstore: on any input the two implementations
// agree (both fail, or give the same bytes).
func FuzzCanonical_matchesPromptstore(f *testing.F) {
	for _, doc := range canonicalDocs {
		f.Add([]byte(doc))
	}
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Add([]byte("\"\xff\""))
	f.Fuzz(func(t *testing.T, doc []byte) {
		got, gerr := client.Canonical(doc)
		want, werr := promptstore.Canonical(doc)
		if (gerr == nil) != (werr == nil) || string(got) != string(want) {
			t.Fatalf("%q: client %q, %v; promptstore %q, %v", doc, got, gerr, want, werr)
		}
	})
}
