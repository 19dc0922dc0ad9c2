package jsonmerge

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
)

// gen makes the property test's cases (see property_test.go): random
// documents, random edits and the documents they make.
type gen struct{ r *rand.Rand }

var scalars = []any{json.Number("1"), json.Number("1.50"), json.Number("-2"), json.Number("3e2"), "x", "y", "", true, false, nil}

func (g *gen) scalar() any { return scalars[g.r.IntN(len(scalars))] }

func (g *gen) scalars() []any {
	out := []any{}
	for range 1 + g.r.IntN(2) {
		out = append(out, g.scalar())
	}
	return out
}

// leaf is a scalar or an unkeyed array (of scalars, possibly empty, or of
// objects without a name).
func (g *gen) leaf() any {
	switch g.r.IntN(10) {
	case 0:
		return []any{}
	case 1, 2:
		return g.scalars()
	case 3:
		return []any{map[string]any{"role": g.scalar()}}
	}
	return g.scalar()
}

func (g *gen) object(depth int) map[string]any {
	obj := map[string]any{}
	for _, i := range g.r.Perm(5)[:g.r.IntN(4)+btoi(depth == 0)] {
		obj[string(rune('a'+i))] = g.value(depth + 1)
	}
	return obj
}

func (g *gen) value(depth int) any {
	if depth < 3 {
		switch g.r.IntN(5) {
		case 0:
			return g.object(depth)
		case 1:
			arr := []any{}
			for i := range 1 + g.r.IntN(3) {
				e := g.object(depth + 1)
				e["name"] = "k" + strconv.Itoa(i)
				arr = append(arr, e)
			}
			return arr
		}
	}
	return g.leaf()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// node is a place in the base document an edit can start from.
type node struct {
	path Path
	kind kind
}

type kind int

const (
	leafNode kind = iota
	objectNode
	arrayNode // keyed; its elements are objectNodes
)

// walk lists the nodes of v at p (members in sorted order, so a seed
// always makes the same case).
func walk(v any, p Path, nodes []node) []node {
	switch v := v.(type) {
	case map[string]any:
		nodes = append(nodes, node{p, objectNode})
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if k != "name" || len(p) == 0 || p[len(p)-1].Key == "" {
				nodes = walk(v[k], p.member(k), nodes)
			}
		}
		return nodes
	case []any:
		if len(v) > 0 && isNamed(v[0]) {
			nodes = append(nodes, node{p, arrayNode})
			for _, e := range v {
				nodes = walk(e, p.element("name", e.(map[string]any)["name"].(string)), nodes)
			}
			return nodes
		}
	}
	return append(nodes, node{p, leafNode})
}

func isNamed(v any) bool {
	obj, _ := v.(map[string]any)
	_, ok := obj["name"].(string)
	return ok
}

type op int

const (
	opSet op = iota
	opDelete
	opAddMember
	opAddElement
)

type edit struct {
	op    op
	path  Path
	value any
}

func (e edit) String() string {
	if e.op == opDelete {
		return "delete " + e.path.String()
	}
	return fmt.Sprintf("%s %s %s", [...]string{"set", "delete", "add", "add"}[e.op], e.path, canon(e.value))
}

// sideEdits is one side: its edits and the document they make.
type sideEdits struct {
	doc   any
	edits []edit
}

// side makes up to 4 edits on a copy of base, none of whose paths is a
// prefix of another; added element keys start with prefix.
func (g *gen) side(base map[string]any, nodes []node, prefix string) sideEdits {
	s := sideEdits{doc: clone(base)}
	want := g.r.IntN(5)
	pick := func(ok func(node) bool) (node, bool) {
		var of []node
		for _, n := range nodes {
			if ok(n) {
				of = append(of, n)
			}
		}
		if len(of) == 0 {
			return node{}, false
		}
		return of[g.r.IntN(len(of))], true
	}
	for try := 0; len(s.edits) < want && try < 20; try++ {
		var e edit
		switch o := op(g.r.IntN(4)); o {
		case opSet:
			n, ok := pick(func(n node) bool { return n.kind == leafNode })
			e = edit{op: o, path: n.path, value: g.leaf()}
			if old, _ := lookup(base, n.path); !ok || canon(old) == canon(e.value) {
				continue
			}
		case opAddMember:
			n, ok := pick(func(n node) bool { return n.kind == objectNode })
			e = edit{op: o, path: n.path.member("n" + strconv.Itoa(1+g.r.IntN(2))), value: g.scalar()}
			if _, exists := lookup(base, e.path); !ok || exists {
				continue
			}
			if g.r.IntN(4) == 0 {
				e.value = g.scalars()
			}
		case opAddElement:
			n, ok := pick(func(n node) bool { return n.kind == arrayNode })
			if !ok {
				continue
			}
			key := prefix + strconv.Itoa(len(s.edits))
			e = edit{op: o, path: n.path.element("name", key), value: map[string]any{"name": key, "v": g.scalar()}}
		case opDelete:
			n, ok := pick(func(n node) bool { return len(n.path) > 0 }) // any member or element
			if !ok {
				continue
			}
			e = edit{op: o, path: n.path}
		}
		if slices.ContainsFunc(s.edits, func(f edit) bool { return isPrefix(f.path, e.path) || isPrefix(e.path, f.path) }) {
			continue
		}
		switch e.op {
		case opSet, opAddMember:
			setAt(s.doc, e.path, e.value)
		case opDelete:
			deleteAt(s.doc, e.path)
		case opAddElement:
			arr, _ := lookup(s.doc, e.path[:len(e.path)-1])
			setAt(s.doc, e.path[:len(e.path)-1], slices.Insert(arr.([]any), g.r.IntN(len(arr.([]any))+1), e.value))
		}
		s.edits = append(s.edits, e)
	}
	return s
}

// The documents, as decoded trees.

func nameOf(e any) string { return e.(map[string]any)["name"].(string) }

func isPrefix(p, q Path) bool { return len(p) <= len(q) && slices.Equal(p, q[:len(p)]) }

// lookup returns the value at p in doc, and whether there is one.
func lookup(doc any, p Path) (any, bool) {
	for _, s := range p {
		switch v := doc.(type) {
		case map[string]any:
			if s.Key != "" {
				return nil, false
			}
			var ok bool
			if doc, ok = v[s.Member]; !ok {
				return nil, false
			}
		case []any:
			i := slices.IndexFunc(v, func(e any) bool { obj, _ := e.(map[string]any); return s.Key != "" && obj[s.Key] == s.Value })
			if i < 0 {
				return nil, false
			}
			doc = v[i]
		default:
			return nil, false
		}
	}
	return doc, true
}

// setAt sets the value at p (p not the root), whose parent exists.
func setAt(doc any, p Path, v any) {
	parent, _ := lookup(doc, p[:len(p)-1])
	s := p[len(p)-1]
	if s.Key == "" {
		parent.(map[string]any)[s.Member] = v
		return
	}
	arr := parent.([]any)
	arr[slices.IndexFunc(arr, func(e any) bool { return nameOf(e) == s.Value })] = v
}

// deleteAt deletes the value at p (p not the root), which exists.
func deleteAt(doc any, p Path) {
	parent, _ := lookup(doc, p[:len(p)-1])
	s := p[len(p)-1]
	if s.Key == "" {
		delete(parent.(map[string]any), s.Member)
		return
	}
	setAt(doc, p[:len(p)-1], slices.DeleteFunc(slices.Clone(parent.([]any)), func(e any) bool { return nameOf(e) == s.Value }))
}

func clone(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = clone(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = clone(e)
		}
		return out
	}
	return v
}

// sortKeyed returns v with the elements of every array of named objects
// sorted by name.
func sortKeyed(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = sortKeyed(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = sortKeyed(e)
		}
		if !slices.ContainsFunc(out, func(e any) bool { return !isNamed(e) }) {
			slices.SortFunc(out, func(a, b any) int { return cmp.Compare(nameOf(a), nameOf(b)) })
		}
		return out
	}
	return v
}

// canon is the canonical JSON of v by encoding/json (members sorted,
// numbers as written), written independently of the package's encode.
func canon(v any) string { return string(marshal(v)) }

func marshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(errors.Join(errors.New("marshal"), err))
	}
	return bytes.TrimSpace(buf.Bytes())
}
