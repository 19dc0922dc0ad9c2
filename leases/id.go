package leases

import (
	"encoding/base64"
	"slices"
	"strings"

	"github.com/promptd/promptd/ident"
)

// idPrefix starts every lease ID.
const idPrefix = "ls_"

// maxIDLen bounds the encoded part of an ID that ParseID decodes.
const maxIDLen = 8192

// ID names the resources of a lease, so that any instance can renew or
// release it with nothing stored. Its text is "ls_" + base64url (no
// padding) of the sorted, distinct resource names joined by "\n". It is not
// a secret (the token is); the same set of resources always has the same
// ID.
type ID struct{ resources []string }

// idOf is the ID of sorted, distinct resources.
func idOf(resources []string) ID { return ID{resources: resources} }

// String is the ID's text.
func (id ID) String() string {
	return idPrefix + base64.RawURLEncoding.EncodeToString([]byte(strings.Join(id.resources, "\n")))
}

// Resources are the resources the ID names, sorted.
func (id ID) Resources() []string { return slices.Clone(id.resources) }

// ParseID reads an ID's text. Anything that is not the text of an ID this
// package produces is ErrNotFound: no lease can have it.
func ParseID(s string) (ID, error) {
	raw, ok := strings.CutPrefix(s, idPrefix)
	if !ok || len(raw) > maxIDLen {
		return ID{}, ErrNotFound
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(raw)
	if err != nil {
		return ID{}, ErrNotFound
	}
	rs := strings.Split(string(b), "\n")
	if len(rs) > MaxResources || !slices.IsSorted(rs) || len(slices.Compact(slices.Clone(rs))) != len(rs) {
		return ID{}, ErrNotFound
	}
	for _, r := range rs {
		if ident.ValidateResource("resources", r) != nil {
			return ID{}, ErrNotFound
		}
	}
	return ID{resources: rs}, nil
}
