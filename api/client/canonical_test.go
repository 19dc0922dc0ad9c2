package client_test

import (
	"encoding/json"
	"testing"

	"github.com/promptd/promptd/api/client"
)

var canonicalDocs = []string{
	`{"system":"x"}`,
	`{ "variables": {"b": {"default": "2"}, "a": {"required": true}},
	   "system": "Hi {{a}} & <b> \u00e9\u2028 \"q\" \\ \t", "model": {"name": "m", "temperature": 0.20, "top_p": 1e-3, "n": -0} }`,
	`{"system":"s","memory":["\u0001","日本"],"tools":[{"type":"function","function":{"name":"f","parameters":{"z":[],"a":{}}}}]}`,
	`{"system":"s","model":{"name":"gpt-4o","max_tokens":12345678901234567890}}`,
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
