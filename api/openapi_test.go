package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v4"

	"github.com/promptd/promptd/api"
)

var (
	specOnce     sync.Once
	specDoc      map[string]any
	specCompiler *jsonschema.Compiler
	specErr      error
	schemaMu     sync.Mutex
	schemas      = map[string]*jsonschema.Schema{}
)

// spec is api/openapi.yaml as JSON values.
func spec(t *testing.T) map[string]any {
	t.Helper()
	specOnce.Do(func() {
		var doc any
		if specErr = yaml.Unmarshal(api.OpenAPI(), &doc); specErr != nil {
			return
		}
		raw, err := json.Marshal(doc)
		if specErr = err; err != nil {
			return
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if specErr = err; err != nil {
			return
		}
		specDoc = v.(map[string]any)
		specCompiler = jsonschema.NewCompiler()
		specErr = specCompiler.AddResource("urn:promptd:openapi", v)
	})
	if specErr != nil {
		t.Fatalf("openapi.yaml: %v", specErr)
	}
	return specDoc
}

// conforms checks a JSON body against a schema of components/schemas.
func conforms(t *testing.T, schema string, body []byte) {
	t.Helper()
	spec(t)
	schemaMu.Lock()
	sch, ok := schemas[schema]
	if !ok {
		var err error
		if sch, err = specCompiler.Compile("urn:promptd:openapi#/components/schemas/" + schema); err != nil {
			schemaMu.Unlock()
			t.Fatalf("compile %s: %v", schema, err)
		}
		schemas[schema] = sch
	}
	schemaMu.Unlock()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	if err := sch.Validate(v); err != nil {
		t.Errorf("body does not conform to %s: %v\n%s", schema, err, body)
	}
}

var pathParam = regexp.MustCompile(`:([A-Za-z_]+)`)

func TestOpenAPI_documentsExactlyTheRegisteredRoutes(t *testing.T) {
	paths := spec(t)["paths"].(map[string]any)
	documented := map[string]bool{}
	for p, item := range paths {
		for m := range item.(map[string]any) {
			switch m {
			case "get", "head", "put", "post", "delete", "patch":
				documented[strings.ToUpper(m)+" "+p] = true
			}
		}
	}
	s := api.New(api.Config{})
	registered := map[string]bool{}
	for _, r := range s.Echo().Routes() {
		registered[r.Method+" "+pathParam.ReplaceAllString(r.Path, "{$1}")] = true
	}
	for r := range registered {
		// A HEAD route answers as its GET without the body: the GET
		// documents it unless the spec lists the HEAD itself.
		if p, ok := strings.CutPrefix(r, "HEAD "); ok && documented["GET "+p] {
			continue
		}
		if !documented[r] {
			t.Errorf("route %s is not in openapi.yaml", r)
		}
	}
	for r := range documented {
		if !registered[r] {
			t.Errorf("openapi.yaml documents %s, which is not registered", r)
		}
	}
	if len(registered) < 17 {
		t.Errorf("only %d routes registered", len(registered))
	}
}

func TestOpenAPI_problemCodes_areTheStatusTable(t *testing.T) {
	problem := spec(t)["components"].(map[string]any)["schemas"].(map[string]any)["Problem"].(map[string]any)
	var codes []string
	for _, c := range problem["properties"].(map[string]any)["code"].(map[string]any)["enum"].([]any) {
		codes = append(codes, c.(string))
	}
	for code := range api.Statuses() {
		if !slices.Contains(codes, code) {
			t.Errorf("code %s is missing from the Problem schema", code)
		}
	}
	if len(codes) != len(api.Statuses()) {
		t.Errorf("Problem lists %d codes, the table has %d", len(codes), len(api.Statuses()))
	}
}

func TestOpenAPI_isServedWithoutToken(t *testing.T) {
	s := api.New(api.Config{})
	rec := get(t, s.Handler(), "/openapi.yaml")
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/yaml" ||
		!bytes.Equal(rec.Body.Bytes(), api.OpenAPI()) || !strings.HasPrefix(rec.Body.String(), "openapi: 3.1") {
		t.Fatalf("GET /openapi.yaml = %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
}
