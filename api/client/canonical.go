package client

import "github.com/promptd/promptd/internal/canonjson"

// Canonical returns promptd's canonical JSON of a document: keys sorted,
// no insignificant whitespace, no HTML escaping, numbers as written,
// duplicate keys rejected (the same code as the server's).
func Canonical(doc []byte) ([]byte, error) { return canonjson.Canonical(doc) }

// ContentHash is the content_hash promptd gives a version whose config
// is the JSON document config: "sha256:" + hex of its canonical JSON.
func ContentHash(config []byte) (string, error) {
	c, err := canonjson.Canonical(config)
	if err != nil {
		return "", err
	}
	return canonjson.Hash(c), nil
}

// Pretty returns a canonical document indented by two spaces, the form
// promptd's diffs use.
func Pretty(canonical []byte) []byte { return canonjson.Pretty(canonical) }
