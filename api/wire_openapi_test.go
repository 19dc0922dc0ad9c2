package api_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/promptd/promptd/wire"
)

// wireSchemas names, for every struct type of package wire, the schema of
// api/openapi.yaml it is; nested shapes (a release's steps, a board's
// claim rule) are checked through the member that holds them.
var wireSchemas = map[string]struct {
	t      reflect.Type
	schema string // "" for a nested shape
}{
	"LeaseInfo":         {reflect.TypeFor[wire.LeaseInfo](), "LeaseInfo"},
	"SessionSummary":    {reflect.TypeFor[wire.SessionSummary](), "SessionSummary"},
	"Session":           {reflect.TypeFor[wire.Session](), "Session"},
	"SessionDetail":     {reflect.TypeFor[wire.SessionDetail](), "SessionDetail"},
	"TurnInput":         {reflect.TypeFor[wire.TurnInput](), "TurnInput"},
	"Turn":              {reflect.TypeFor[wire.Turn](), "Turn"},
	"Appended":          {reflect.TypeFor[wire.Appended](), "Appended"},
	"Release":           {reflect.TypeFor[wire.Release](), "Release"},
	"Guard":             {reflect.TypeFor[wire.Guard](), "ReleaseGuard"},
	"ReleaseStats":      {reflect.TypeFor[wire.ReleaseStats](), "ReleaseStats"},
	"ArmStats":          {reflect.TypeFor[wire.ArmStats](), "ArmStats"},
	"Board":             {reflect.TypeFor[wire.Board](), "Board"},
	"BoardSummary":      {reflect.TypeFor[wire.BoardSummary](), "BoardSummary"},
	"Record":            {reflect.TypeFor[wire.Record](), "Record"},
	"Claim":             {reflect.TypeFor[wire.Claim](), "Claim"},
	"Heartbeat":         {reflect.TypeFor[wire.Heartbeat](), "Heartbeat"},
	"Env":               {reflect.TypeFor[wire.Env](), "Env"},
	"Move":              {reflect.TypeFor[wire.Move](), "Move"},
	"EnvRollback":       {reflect.TypeFor[wire.EnvRollback](), "EnvRollback"},
	"Step":              {reflect.TypeFor[wire.Step](), ""},
	"Transition":        {reflect.TypeFor[wire.Transition](), ""},
	"Overrides":         {reflect.TypeFor[wire.Overrides](), ""},
	"GuardConfig":       {reflect.TypeFor[wire.GuardConfig](), ""},
	"Difference":        {reflect.TypeFor[wire.Difference](), ""},
	"TokenArms":         {reflect.TypeFor[wire.TokenArms](), ""},
	"BoardDefinition":   {reflect.TypeFor[wire.BoardDefinition](), ""},
	"ClaimRule":         {reflect.TypeFor[wire.ClaimRule](), ""},
	"Quota":             {reflect.TypeFor[wire.Quota](), ""},
	"Intent":            {reflect.TypeFor[wire.Intent](), "Intent"},
	"RegisteredIntent":  {reflect.TypeFor[wire.RegisteredIntent](), "RegisteredIntent"},
	"IntentScope":       {reflect.TypeFor[wire.IntentScope](), "IntentScope"},
	"IntentRecordScope": {reflect.TypeFor[wire.IntentRecordScope](), ""},
	"IntentRef":         {reflect.TypeFor[wire.IntentRef](), "IntentRef"},
	"Batch":             {reflect.TypeFor[wire.Batch](), "BoardBatch"},
	"BatchItemResult":   {reflect.TypeFor[wire.BatchItemResult](), "BoardBatchItemResult"},
	"BatchItemConflict": {reflect.TypeFor[wire.BatchItemConflict](), ""},
	"BatchSummary":      {reflect.TypeFor[wire.BatchSummary](), "BoardBatchSummary"},
}

// The Go shapes the server encodes and the Go client decodes are the
// schemas: the same member names at every depth, none the schema requires
// left out when empty, and a pointer the server may send as null only
// where the schema allows null. Every struct type of package wire is in
// wireSchemas (a new one without an entry fails).
func TestWire_everyShapeIsItsSchema_atEveryDepth(t *testing.T) {
	schemas := spec(t)["components"].(map[string]any)["schemas"].(map[string]any)
	for name := range wireStructs(t) {
		if _, ok := wireSchemas[name]; !ok {
			t.Errorf("wire.%s has no entry in wireSchemas", name)
		}
	}
	for name, w := range wireSchemas {
		if w.schema == "" {
			continue
		}
		s, ok := schemas[w.schema].(map[string]any)
		if !ok {
			t.Errorf("wire.%s: no schema %s", name, w.schema)
			continue
		}
		for _, p := range shapeProblems(schemas, w.t, s, w.schema) {
			t.Errorf("wire.%s: %s", name, p)
		}
	}
}

// Control: a member the schema lacks, a required one left out when empty
// and a nullable pointer where the schema forbids null are each found.
func TestWire_shapeCheck_findsWhatDiffers(t *testing.T) {
	schemas := spec(t)["components"].(map[string]any)["schemas"].(map[string]any)
	type extra struct {
		wire.Appended
		Extra int `json:"extra"`
	}
	type omits struct {
		Revision int64   `json:"revision,omitempty"`
		Seqs     []int64 `json:"seqs"`
	}
	type nullable struct {
		Revision *int64  `json:"revision"`
		Seqs     []int64 `json:"seqs"`
	}
	for _, tc := range []struct {
		t    reflect.Type
		want string
	}{
		{reflect.TypeFor[extra](), "extra"},
		{reflect.TypeFor[omits](), "required"},
		{reflect.TypeFor[nullable](), "null"},
	} {
		ps := shapeProblems(schemas, tc.t, schemas["Appended"].(map[string]any), "Appended")
		if !slices.ContainsFunc(ps, func(p string) bool { return strings.Contains(p, tc.want) }) {
			t.Errorf("%v: problems %q, want one naming %q", tc.t, ps, tc.want)
		}
	}
}

// wireStructs are the struct types declared in package wire's source.
func wireStructs(t *testing.T) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, "../wire", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.TYPE {
					continue
				}
				for _, sp := range g.Specs {
					ts := sp.(*ast.TypeSpec)
					if _, isStruct := ts.Type.(*ast.StructType); isStruct && ts.Name.IsExported() {
						out[ts.Name.Name] = true
					}
				}
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("found only %d struct types in ../wire: %v", len(out), out)
	}
	return out
}

// object is a schema's properties, required members and whether it may
// be null, through $ref, allOf (every part's members, required in any) and
// oneOf/anyOf (every branch's members, required in all).
func object(schemas map[string]any, s map[string]any) (props map[string]any, required map[string]bool, null bool) {
	props, required = map[string]any{}, map[string]bool{}
	if ref, ok := s["$ref"].(string); ok {
		p, r, n := object(schemas, schemas[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any))
		maps.Copy(props, p)
		maps.Copy(required, r)
		null = n
	}
	switch ty := s["type"].(type) {
	case string:
		null = null || ty == "null"
	case []any:
		null = null || slices.Contains(ty, any("null"))
	}
	maps.Copy(props, mapOf(s["properties"]))
	for _, r := range sliceOf(s["required"]) {
		required[r.(string)] = true
	}
	for _, part := range sliceOf(s["allOf"]) {
		p, r, n := object(schemas, part.(map[string]any))
		maps.Copy(props, p)
		maps.Copy(required, r)
		null = null || n
	}
	for _, key := range []string{"oneOf", "anyOf"} {
		var all map[string]bool
		for _, b := range sliceOf(s[key]) {
			p, r, n := object(schemas, b.(map[string]any))
			maps.Copy(props, p)
			null = null || n
			if n && len(p) == 0 {
				continue // the null branch
			}
			if all == nil {
				all = r
				continue
			}
			for k := range all {
				if !r[k] {
					delete(all, k)
				}
			}
		}
		maps.Copy(required, all)
	}
	return props, required, null
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func sliceOf(v any) []any {
	s, _ := v.([]any)
	return s
}

// member is one JSON member of a Go struct (embedded structs promoted).
type member struct {
	name      string
	omitempty bool
	t         reflect.Type
}

func members(t reflect.Type) []member {
	var out []member
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			out = append(out, members(f.Type)...)
			continue
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, member{name: name, omitempty: strings.Contains(opts, "omitempty"), t: f.Type})
	}
	return out
}

var leafTypes = []reflect.Type{reflect.TypeFor[wire.Time](), reflect.TypeFor[json.RawMessage](), reflect.TypeFor[json.Number]()}

// shapeProblems compares the Go type t with schema s, at every depth.
func shapeProblems(schemas map[string]any, t reflect.Type, s map[string]any, path string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if slices.Contains(leafTypes, t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		items := s
		if ref, ok := s["$ref"].(string); ok {
			items = schemas[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any)
		}
		if it := mapOf(items["items"]); it != nil {
			return shapeProblems(schemas, t.Elem(), it, path+"[]")
		}
		return nil
	case reflect.Map:
		if ap := mapOf(s["additionalProperties"]); ap != nil {
			return shapeProblems(schemas, t.Elem(), ap, path+"{}")
		}
		return nil
	case reflect.Struct:
	default:
		return nil
	}
	props, required, _ := object(schemas, s)
	var out []string
	seen := map[string]bool{}
	for _, m := range members(t) {
		seen[m.name] = true
		ps := mapOf(props[m.name])
		if ps == nil {
			out = append(out, path+"."+m.name+": not a property of the schema (extra member)")
			continue
		}
		if required[m.name] && m.omitempty {
			out = append(out, path+"."+m.name+": required by the schema, but left out when empty")
		}
		if m.t.Kind() == reflect.Pointer && !m.omitempty {
			if _, _, null := object(schemas, ps); !null {
				out = append(out, path+"."+m.name+": may be sent as null, which the schema does not allow")
			}
		}
		out = append(out, shapeProblems(schemas, m.t, ps, path+"."+m.name)...)
	}
	var missing []string
	for name := range props {
		if !seen[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	for _, name := range missing {
		out = append(out, path+"."+name+": a property of the schema the Go shape lacks")
	}
	return out
}
