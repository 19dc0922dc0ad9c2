package promptstore

import "github.com/promptd/promptd/internal/canonjson"

// Canonical returns the canonical JSON of a JSON document: object keys
// sorted (by UTF-8 bytes), no insignificant whitespace, no HTML escaping,
// numbers exactly as written. Duplicate object keys and trailing data are
// errors, so two different documents never share a canonical form by
// accident of parsing.
func Canonical(doc []byte) ([]byte, error) { return canonjson.Canonical(doc) }

// ContentHash is "sha256:" + hex of the canonical JSON.
func ContentHash(canonical []byte) string { return canonjson.Hash(canonical) }

// Pretty returns the canonical document indented by two spaces (sorted
// keys), the form diffs are computed on.
func Pretty(canonical []byte) []byte { return canonjson.Pretty(canonical) }

// ErrDuplicateKey is returned for an object that names a key twice.
var ErrDuplicateKey = canonjson.ErrDuplicateKey
