package jsonin

import (
	"encoding"
	"encoding/json"
	"errors"
	"reflect"
	"sync"
)

// ErrUnknownMember: an object member that the Go type the object is
// decoded into has no field for, its name compared exactly (case
// included), where encoding/json would drop it or match it to a field of
// another spelling.
var ErrUnknownMember = errors.New("unknown object member")

// CheckFor is Check for a document that is then decoded into a value of
// type t with encoding/json: it also refuses, at every depth, an object
// member that the struct the object is decoded into has no field for
// (names match exactly: "Agents" or "AGENTS" is not "agents"), with an
// *Error of kind ErrUnknownMember whose Path names the member
// ("scopes.agent"). It follows t through pointers, struct fields (embedded
// structs included, as encoding/json does), slices, arrays and map values;
// a value of a type that decodes itself (json.Unmarshaler, such as
// json.RawMessage, or encoding.TextUnmarshaler) or of an interface type is
// not looked into: its decoder is the one to be strict. A value whose JSON
// kind does not fit its type is left to encoding/json's type error.
func CheckFor(doc []byte, maxDepth int, t reflect.Type) error {
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	s := &scanner{b: doc, max: maxDepth, root: shapeOf(t)}
	return s.run()
}

// Decode is CheckFor (with DefaultMaxDepth) followed by json.Unmarshal of
// doc into dst, a non-nil pointer. A type error is encoding/json's.
func Decode(doc []byte, dst any) error {
	if err := CheckFor(doc, 0, reflect.TypeOf(dst)); err != nil {
		return err
	}
	return json.Unmarshal(doc, dst)
}

// shape is what CheckFor knows of the type a JSON object or array is
// decoded into; a nil *shape accepts anything.
type shape struct {
	kind   shapeKind
	fields map[string]*shape // structs: each member's shape, by its exact name
	elem   *shape            // lists and maps: the elements' shape
}

type shapeKind uint8

const (
	structShape shapeKind = iota + 1
	listShape
	mapShape
)

// object reports whether s is the shape of a JSON object.
func (s *shape) object() bool { return s.kind == structShape || s.kind == mapShape }

// child is the shape of the value of member key (objects) or of the
// elements (arrays).
func (s *shape) child(key []byte) *shape {
	if s == nil {
		return nil
	}
	if s.kind == structShape {
		return s.fields[string(key)]
	}
	return s.elem
}

var (
	shapes          sync.Map // reflect.Type -> *shape (nil stored as a typed nil)
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func shapeOf(t reflect.Type) *shape {
	if t == nil {
		return nil
	}
	if s, ok := shapes.Load(t); ok {
		return s.(*shape)
	}
	s := compile(t, map[reflect.Type]*shape{})
	shapes.Store(t, s)
	return s
}

// decodesItself: encoding/json hands values of t to their own decoder.
func decodesItself(t reflect.Type) bool {
	return t.Implements(jsonUnmarshaler) || t.Implements(textUnmarshaler) ||
		(t.Kind() != reflect.Pointer && (reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler)))
}

func compile(t reflect.Type, seen map[reflect.Type]*shape) *shape {
	for t.Kind() == reflect.Pointer {
		if decodesItself(t) {
			return nil
		}
		t = t.Elem()
	}
	if decodesItself(t) {
		return nil
	}
	if s, ok := seen[t]; ok {
		return s
	}
	switch t.Kind() {
	case reflect.Struct:
		s := &shape{kind: structShape, fields: map[string]*shape{}}
		seen[t] = s
		for name, ft := range members(t) {
			s.fields[name] = compile(ft, seen)
		}
		return s
	case reflect.Slice, reflect.Array:
		if e := compile(t.Elem(), seen); e != nil {
			return &shape{kind: listShape, elem: e}
		}
	case reflect.Map:
		if e := compile(t.Elem(), seen); e != nil {
			return &shape{kind: mapShape, elem: e}
		}
	}
	return nil
}

// members lists the JSON members of struct type t and their types, by
// encoding/json's rules: exported fields, named by their tag or their Go
// name, "-" left out, the fields of an untagged embedded struct promoted,
// a shallower field hiding a deeper one of the same name, and of two at
// the same depth the tagged one (neither, or both tagged: the name is
// dropped, as encoding/json drops it).
func members(t reflect.Type) map[string]reflect.Type {
	type field struct {
		typ    reflect.Type
		depth  int
		tagged bool
		n      int // how many fields at this depth have the name
	}
	best := map[string]*field{}
	visited := map[reflect.Type]bool{}
	level := []reflect.Type{t}
	for depth := 0; len(level) > 0; depth++ {
		var next []reflect.Type
		for _, st := range level {
			if visited[st] {
				continue
			}
			visited[st] = true
			for i := range st.NumField() {
				sf := st.Field(i)
				ft := sf.Type
				if sf.Anonymous {
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if !sf.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name := tag
				for j := 0; j < len(tag); j++ {
					if tag[j] == ',' {
						name = tag[:j]
						break
					}
				}
				if sf.Anonymous && name == "" && ft.Kind() == reflect.Struct {
					next = append(next, ft)
					continue
				}
				if !sf.IsExported() {
					continue
				}
				tagged := name != ""
				if !tagged {
					name = sf.Name
				}
				f := best[name]
				switch {
				case f == nil:
					best[name] = &field{typ: sf.Type, depth: depth, tagged: tagged, n: 1}
				case f.depth < depth:
					// hidden by a shallower field
				case tagged && !f.tagged:
					*f = field{typ: sf.Type, depth: depth, tagged: true, n: 1}
				case tagged == f.tagged:
					f.n++
				}
			}
		}
		level = next
	}
	out := make(map[string]reflect.Type, len(best))
	for name, f := range best {
		if f.n == 1 {
			out[name] = f.typ
		}
	}
	return out
}
