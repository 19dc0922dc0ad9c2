package jsonmerge

import (
	"fmt"
	"maps"
	"slices"
)

// Options say how arrays of objects are matched.
type Options struct {
	// Keys are the member names (or dotted paths of member names, such as
	// "function.name") that identify an element of an array of
	// objects, tried in order for each array: []string{"name"} for prompt
	// configs, []string{"id", "name"} for payloads. Empty names are skipped.
	Keys []string
}

// Merge merges ours and theirs, both edited from base, by the rules of the
// package comment. It returns the merged document (compact JSON, members
// sorted) when there is no conflict; otherwise merged is nil and conflicts
// lists every one, in document order. err is only for input that is not
// exactly one valid JSON value (ErrInvalidJSON, ErrDuplicateKey) or is
// nested deeper than MaxDepth (ErrTooDeep).
func Merge(base, ours, theirs []byte, opts Options) (merged []byte, conflicts []Conflict, err error) {
	var docs [3]any
	for i, doc := range [][]byte{base, ours, theirs} {
		if docs[i], err = parse(doc); err != nil {
			return nil, nil, fmt.Errorf("jsonmerge: %s: %w", [...]string{"base", "ours", "theirs"}[i], err)
		}
	}
	m := merger{keys: opts.Keys}
	v := m.merge(Path{}, docs[0], docs[1], docs[2])
	if len(m.conflicts) > 0 {
		return nil, m.conflicts, nil
	}
	return encode(v), nil, nil
}

type merger struct {
	keys      []string
	conflicts []Conflict
}

// merge returns the merged value at p (absent when it is deleted), or
// records a conflict.
func (m *merger) merge(p Path, b, o, t any) any {
	switch {
	case equal(o, t):
		return o
	case equal(o, b):
		return t
	case equal(t, b):
		return o
	}
	if bo, oo, to, ok := three[map[string]any](b, o, t); ok {
		return m.mergeObjects(p, bo, oo, to)
	}
	if ba, oa, ta, ok := three[[]any](b, o, t); ok {
		if key, ok := m.key(ba, oa, ta); ok {
			return m.mergeKeyed(p, key, b, oa, ta)
		}
	}
	m.conflict(p, b, o, t)
	return o
}

// three returns b, o and t as T when o and t are T and b is T or absent.
func three[T any](b, o, t any) (bt, ot, tt T, ok bool) {
	ot, oOK := o.(T)
	tt, tOK := t.(T)
	bt, bOK := b.(T)
	return bt, ot, tt, oOK && tOK && (bOK || isAbsent(b))
}

func (m *merger) conflict(p Path, b, o, t any) {
	m.conflicts = append(m.conflicts, Conflict{Path: p, Base: encode(b), Ours: encode(o), Theirs: encode(t)})
}

func (m *merger) mergeObjects(p Path, b, o, t map[string]any) map[string]any {
	names := map[string]bool{}
	for _, obj := range []map[string]any{b, o, t} {
		for k := range obj {
			names[k] = true
		}
	}
	out := make(map[string]any, len(names))
	for _, k := range slices.Sorted(maps.Keys(names)) {
		if v := m.merge(p.member(k), member(b, k), member(o, k), member(t, k)); !isAbsent(v) {
			out[k] = v
		}
	}
	return out
}

func member(obj map[string]any, name string) any {
	if v, ok := obj[name]; ok {
		return v
	}
	return absent
}
