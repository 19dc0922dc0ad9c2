package jsonmerge

import (
	"slices"
	"strings"
)

// keyValue is the string at key k of element e: k is a member name, or a
// dotted path of member names ("function.name": the name of the element's
// function object). "" when there is none.
func keyValue(e any, k string) string {
	obj, _ := e.(map[string]any)
	if v, ok := obj[k].(string); ok {
		return v
	}
	head, rest, nested := strings.Cut(k, ".")
	if !nested {
		return ""
	}
	return keyValue(obj[head], rest)
}

// key returns the first of the keys by which all of arrays are keyed.
func (m *merger) key(arrays ...[]any) (string, bool) {
	for _, k := range m.keys {
		if k != "" && keyedBy(k, arrays) {
			return k, true
		}
	}
	return "", false
}

// keyedBy reports whether every element of each array is an object whose
// member k is a non-empty string, unique within its array.
func keyedBy(k string, arrays [][]any) bool {
	for _, arr := range arrays {
		seen := make(map[string]bool, len(arr))
		for _, e := range arr {
			v := keyValue(e, k)
			if v == "" || seen[v] {
				return false
			}
			seen[v] = true
		}
	}
	return true
}

// elements is a keyed array: its key values in order, and its elements.
type elements struct {
	order []string
	byKey map[string]any
}

func index(k string, arr []any) elements {
	es := elements{byKey: make(map[string]any, len(arr))}
	for _, e := range arr {
		v := keyValue(e, k)
		es.order = append(es.order, v)
		es.byKey[v] = e
	}
	return es
}

func (es elements) get(v string) any {
	if e, ok := es.byKey[v]; ok {
		return e
	}
	return absent
}

// mergeKeyed merges arrays keyed by k; b is absent or an []any.
func (m *merger) mergeKeyed(p Path, k string, b any, o, t []any) any {
	ba, _ := b.([]any)
	be, oe, te := index(k, ba), index(k, o), index(k, t)
	order, ok := arrange(be.order, oe.order, te.order)
	if !ok {
		m.conflict(p, b, o, t)
		return o
	}
	out := make([]any, 0, len(order))
	for _, v := range order {
		if e := m.merge(p.element(k, v), be.get(v), oe.get(v), te.get(v)); !isAbsent(e) {
			out = append(out, e)
		}
	}
	return out
}

// arrange returns the order of the merged array's keys: all of o's and t's,
// and of b's at least those that one side kept. ok is false when both sides moved the
// base elements and disagree on the order of those all three have.
func arrange(b, o, t []string) (order []string, ok bool) {
	inB, inO, inT := set(b), set(o), set(t)
	oMoved := !slices.Equal(only(o, inB), only(b, inO))
	tMoved := !slices.Equal(only(t, inB), only(b, inT))
	spine := b
	switch {
	case oMoved && tMoved:
		if !slices.Equal(only(only(o, inB), inT), only(only(t, inB), inO)) {
			return nil, false
		}
		spine = o
	case oMoved:
		spine = o
	case tMoved:
		spine = t
	}
	return place(spine, o, t), true
}

// place returns spine with the keys of o and then t that it lacks, each
// inserted after the nearest key before it on its side that spine has (at
// the start if none): ours' before theirs' at one place, each side's in
// its own order, a key both have where ours has it.
func place(spine, o, t []string) []string {
	at := make(map[string]int, len(spine))
	for i, k := range spine {
		at[k] = i
	}
	after := make([][]string, len(spine)+1) // after[0]: the start; after[i+1]: after spine[i]
	placed := map[string]bool{}
	for _, side := range [][]string{o, t} {
		anchor := 0
		for _, k := range side {
			if i, ok := at[k]; ok {
				anchor = i + 1
			} else if !placed[k] {
				placed[k] = true
				after[anchor] = append(after[anchor], k)
			}
		}
	}
	out := slices.Clone(after[0])
	for i, k := range spine {
		out = append(append(out, k), after[i+1]...)
	}
	return out
}

func set(keys []string) map[string]bool {
	s := make(map[string]bool, len(keys))
	for _, k := range keys {
		s[k] = true
	}
	return s
}

// only returns the keys that are in s, in order.
func only(keys []string, s map[string]bool) []string {
	var out []string
	for _, k := range keys {
		if s[k] {
			out = append(out, k)
		}
	}
	return out
}
