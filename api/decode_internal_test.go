package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/promptd/promptd/release/guard"
	"github.com/promptd/promptd/wire"
)

// requestTypes are the types request bodies (or members of them) are
// decoded into, by the type expression the handlers declare them with.
// TestDecode_requestTypes_areAllListed keeps it complete.
var requestTypes = map[string]reflect.Type{
	"acquireLeasesRequest":  reflect.TypeFor[acquireLeasesRequest](),
	"batchRequest":          reflect.TypeFor[batchRequest](),
	"intentFenceRequest":    reflect.TypeFor[intentFenceRequest](),
	"registerIntentRequest": reflect.TypeFor[registerIntentRequest](),
	"appendRequest":         reflect.TypeFor[appendRequest](),
	"assembleRequest":       reflect.TypeFor[assembleRequest](),
	"claimRequest":          reflect.TypeFor[claimRequest](),
	"closeRequest":          reflect.TypeFor[closeRequest](),
	"createRecordRequest":   reflect.TypeFor[createRecordRequest](),
	"createReleaseRequest":  reflect.TypeFor[createReleaseRequest](),
	"createSessionRequest":  reflect.TypeFor[createSessionRequest](),
	"createTokenRequest":    reflect.TypeFor[createTokenRequest](),
	"createVersionRequest":  reflect.TypeFor[createVersionRequest](),
	"createDraftRequest":    reflect.TypeFor[createDraftRequest](),
	"updateDraftRequest":    reflect.TypeFor[updateDraftRequest](),
	"publishDraftRequest":   reflect.TypeFor[publishDraftRequest](),
	"previewRequest":        reflect.TypeFor[previewRequest](),
	"createFragmentRequest": reflect.TypeFor[createFragmentRequest](),
	"putFragmentEnvRequest": reflect.TypeFor[putFragmentEnvRequest](),
	"createWebhookRequest":  reflect.TypeFor[createWebhookRequest](),
	"envRollbackRequest":    reflect.TypeFor[envRollbackRequest](),
	"exposureItem":          reflect.TypeFor[exposureItem](),
	"guard.Input":           reflect.TypeFor[guard.Input](),
	"heartbeatRequest":      reflect.TypeFor[heartbeatRequest](),
	"importItem":            reflect.TypeFor[importItem](),
	"itemsRequest":          reflect.TypeFor[itemsRequest](),
	"leaseRequest":          reflect.TypeFor[leaseRequest](),
	"loginRequest":          reflect.TypeFor[loginRequest](),
	"outcomeItem":           reflect.TypeFor[outcomeItem](),
	"patchRecordRequest":    reflect.TypeFor[patchRecordRequest](),
	"patchReleaseRequest":   reflect.TypeFor[patchReleaseRequest](),
	"patchWebhookRequest":   reflect.TypeFor[patchWebhookRequest](),
	"putBoardRequest":       reflect.TypeFor[putBoardRequest](),
	"putEnvRequest":         reflect.TypeFor[putEnvRequest](),
	"putProtectionRequest":  reflect.TypeFor[putProtectionRequest](),
	"putStateRequest":       reflect.TypeFor[putStateRequest](),
	"releaseRequest":        reflect.TypeFor[releaseRequest](),
	"renewRequest":          reflect.TypeFor[renewRequest](),
	"revokeRequest":         reflect.TypeFor[revokeRequest](),
	"rotateSecretRequest":   reflect.TypeFor[rotateSecretRequest](),
	"stepRequest":           reflect.TypeFor[stepRequest](),
	"transitionRequest":     reflect.TypeFor[transitionRequest](),
	"wire.TurnInput":        reflect.TypeFor[wire.TurnInput](),
}

// decodedTypes finds, in the package's source, the type of every variable
// whose address is given to decode, decodeOptional or decodeObject.
func decodedTypes(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	found := map[string]string{} // type -> where
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "decode.go" { // decode.go: the decoder itself
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			vars := map[string]string{} // the latest declaration of a name, in source order
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.ValueSpec:
					if n.Type != nil {
						var b strings.Builder
						_ = printer.Fprint(&b, fset, n.Type)
						for _, id := range n.Names {
							vars[id.Name] = b.String()
						}
					}
				case *ast.CallExpr:
					id, ok := n.Fun.(*ast.Ident)
					if !ok || (id.Name != "decode" && id.Name != "decodeOptional" && id.Name != "decodeObject") || len(n.Args) == 0 {
						return true
					}
					where := fset.Position(n.Pos()).String()
					u, ok := n.Args[len(n.Args)-1].(*ast.UnaryExpr)
					if !ok || u.Op != token.AND {
						t.Errorf("%s: %s is given something other than &variable", where, id.Name)
						return true
					}
					v, ok := u.X.(*ast.Ident)
					if !ok || vars[v.Name] == "" {
						t.Errorf("%s: %s(&%s): the variable's type is not declared with var", where, id.Name, v.Name)
						return true
					}
					found[vars[v.Name]] = where
				}
				return true
			})
		}
	}
	return found
}

// Every type a handler decodes a body into is in requestTypes, so the
// strictness table below covers it (a new request type cannot be
// forgotten).
func TestDecode_requestTypes_areAllListed(t *testing.T) {
	found := decodedTypes(t)
	if len(found) < 20 {
		t.Fatalf("found only %d decoded types: %v", len(found), found)
	}
	for typ, where := range found {
		if requestTypes[typ] == nil {
			t.Errorf("%s: %s is decoded but not in requestTypes", where, typ)
		}
	}
	for typ := range requestTypes {
		if _, ok := found[typ]; !ok {
			t.Errorf("requestTypes lists %s, which nothing decodes", typ)
		}
	}
}

// strictCase is a body that must be refused with 400 invalid_field naming
// field.
type strictCase struct{ body, field string }

// strictCases generates, for the struct type t at path prefix (wrap puts
// an object in its place in a whole body), an unknown member and a member
// in the wrong case, then goes into every member that holds a struct: as
// itself, through a pointer, as the elements of a slice or an array, as
// the values of a map.
func strictCases(t reflect.Type, prefix string, wrap func(string) string, depth int) []strictCase {
	out := []strictCase{{wrap(`{"zz_unknown": 1}`), prefix + "zz_unknown"}}
	if depth > 6 {
		return out
	}
	for _, f := range reflect.VisibleFields(t) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || f.Anonymous || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if up := strings.ToUpper(name); up != name {
			out = append(out, strictCase{wrap(fmt.Sprintf(`{%q: null}`, up)), prefix + up})
		} else if low := strings.ToLower(name); low != name {
			out = append(out, strictCase{wrap(fmt.Sprintf(`{%q: null}`, low)), prefix + low})
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft == reflect.TypeFor[json.RawMessage]() {
			continue
		}
		inner := func(open, close, path string) {
			elem := ft.Elem()
			for elem.Kind() == reflect.Pointer {
				elem = elem.Elem()
			}
			if elem.Kind() != reflect.Struct {
				return
			}
			w := func(s string) string { return wrap(fmt.Sprintf(`{%q: %s%s%s}`, name, open, s, close)) }
			out = append(out, strictCases(elem, prefix+name+path, w, depth+1)...)
		}
		switch ft.Kind() {
		case reflect.Struct:
			w := func(s string) string { return wrap(fmt.Sprintf(`{%q: %s}`, name, s)) }
			out = append(out, strictCases(ft, prefix+name+".", w, depth+1)...)
		case reflect.Slice, reflect.Array:
			inner("[", "]", "[0].")
		case reflect.Map:
			inner(`{"k": `, "}", ".k.")
		}
	}
	return out
}

// Every request type, and every object nested in one, refuses a member
// it does not have, names matched exactly (case included), with 400
// invalid_field naming the member's path.
func TestDecode_everyRequestType_refusesUnknownAndMiscasedMembersAtEveryDepth(t *testing.T) {
	names := make([]string, 0, len(requestTypes))
	for n := range requestTypes {
		names = append(names, n)
	}
	sort.Strings(names)
	nested := 0
	for _, n := range names {
		typ := requestTypes[n]
		for _, c := range strictCases(typ, "", func(s string) string { return s }, 0) {
			if strings.Contains(c.field, ".") || strings.Contains(c.field, "[") {
				nested++
			}
			err := decodeObject([]byte(c.body), "", reflect.New(typ).Interface())
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeInvalidField || e.Fields["field"] != c.field {
				t.Errorf("%s: decode %s = %v (%+v), want invalid_field at %q", n, c.body, err, e, c.field)
			}
		}
	}
	if nested < 10 {
		t.Fatalf("only %d nested cases: the generator found too few nested objects", nested)
	}
}
