package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v4"

	"github.com/promptd/promptd/api"
	vocab "github.com/promptd/promptd/problem"
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
func spec(t testing.TB) map[string]any {
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

// compiled is the schema at a JSON pointer of the spec ("#/components/schemas/Env"),
// compiled once.
func compiled(t testing.TB, pointer string) *jsonschema.Schema {
	t.Helper()
	spec(t)
	schemaMu.Lock()
	defer schemaMu.Unlock()
	sch, ok := schemas[pointer]
	if !ok {
		var err error
		if sch, err = specCompiler.Compile("urn:promptd:openapi" + pointer); err != nil {
			t.Fatalf("compile %s: %v", pointer, err)
		}
		schemas[pointer] = sch
	}
	return sch
}

// conforms checks a JSON body against a schema of components/schemas.
func conforms(t *testing.T, schema string, body []byte) {
	t.Helper()
	sch := compiled(t, "#/components/schemas/"+schema)
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
	s := api.New(api.Config{Runtime: bareRuntime(t)})
	registered := map[string]bool{}
	for _, r := range s.Echo().Routes() {
		registered[r.Method+" "+pathParam.ReplaceAllString(strings.Replace(r.Path, "/*", "/{path}", 1), "{$1}")] = true // /ui/*: a path of several segments
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
	schema := spec(t)["components"].(map[string]any)["schemas"].(map[string]any)["Problem"].(map[string]any)
	var codes []string
	for _, c := range schema["properties"].(map[string]any)["code"].(map[string]any)["enum"].([]any) {
		codes = append(codes, c.(string))
	}
	for code := range vocab.Codes {
		if !slices.Contains(codes, code) {
			t.Errorf("code %s is missing from the Problem schema", code)
		}
	}
	if len(codes) != len(vocab.Codes) {
		t.Errorf("Problem lists %d codes, the table has %d", len(codes), len(vocab.Codes))
	}
}

func TestOpenAPI_isServedWithoutToken(t *testing.T) {
	s := api.New(api.Config{Runtime: bareRuntime(t)})
	rec := get(t, s.Handler(), "/openapi.yaml")
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/yaml" ||
		!bytes.Equal(rec.Body.Bytes(), api.OpenAPI()) || !strings.HasPrefix(rec.Body.String(), "openapi: 3.1") {
		t.Fatalf("GET /openapi.yaml = %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
}

// walkSchemas calls f with every schema-like object of the document (one
// with a "type") and its JSON path, skipping examples.
func walkSchemas(v any, path string, f func(path string, s map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v["type"]; ok {
			f(path, v)
		}
		for k, c := range v {
			if k == "example" || k == "examples" {
				continue
			}
			walkSchemas(c, path+"/"+k, f)
		}
	case []any:
		for i, c := range v {
			walkSchemas(c, fmt.Sprintf("%s/%d", path, i), f)
		}
	}
}

func hasType(s map[string]any, want string) bool {
	switch t := s["type"].(type) {
	case string:
		return t == want
	case []any:
		return slices.Contains(t, any(want))
	}
	return false
}

// Arrays without items and objects without any member schema make
// generated clients useless (openapi-typescript: unknown[] and
// Record<string, never>).
func TestOpenAPI_everySchema_saysWhatItHolds(t *testing.T) {
	walkSchemas(spec(t), "#", func(path string, s map[string]any) {
		if hasType(s, "array") && s["items"] == nil && s["prefixItems"] == nil {
			t.Errorf("%s: an array without items", path)
		}
		if hasType(s, "object") {
			described := false
			for _, k := range []string{"properties", "additionalProperties", "patternProperties", "allOf", "oneOf", "anyOf", "$ref"} {
				described = described || s[k] != nil
			}
			if !described {
				t.Errorf("%s: an object without properties or additionalProperties", path)
			}
		}
	})
}

func TestOpenAPI_configsMessagesAndMetadata_areTyped(t *testing.T) {
	schemas := spec(t)["components"].(map[string]any)["schemas"].(map[string]any)
	prop := func(schema, name string) map[string]any {
		p, _ := schemas[schema].(map[string]any)["properties"].(map[string]any)[name].(map[string]any)
		if p == nil {
			t.Fatalf("%s has no property %s", schema, name)
		}
		return p
	}
	for _, s := range []string{"Version", "Prompt", "CreateVersionRequest", "ImportItem"} {
		if ref := prop(s, "config")["$ref"]; ref != "#/components/schemas/PromptConfig" {
			t.Errorf("%s.config is %v, not the PromptConfig", s, prop(s, "config"))
		}
	}
	for _, name := range []string{"system", "tools", "skills", "memory", "model", "variables", "messages"} {
		prop("PromptConfig", name)
	}
	if ref := prop("PromptConfig", "tools")["items"].(map[string]any)["$ref"]; ref != "#/components/schemas/Tool" {
		t.Errorf("PromptConfig.tools items are %v", ref)
	}
	for _, name := range []string{"name", "description", "parameters"} {
		prop("FunctionDefinition", name)
	}
	if prop("ModelSettings", "name")["type"] != "string" || schemas["ModelSettings"].(map[string]any)["additionalProperties"] != true {
		t.Errorf("ModelSettings = %v", schemas["ModelSettings"])
	}
	if schemas["Metadata"].(map[string]any)["additionalProperties"] != true {
		t.Errorf("Metadata = %v", schemas["Metadata"])
	}
	msg := schemas["Message"].(map[string]any)
	if len(msg["oneOf"].([]any)) != 4 || msg["discriminator"].(map[string]any)["propertyName"] != "role" {
		t.Errorf("Message is not a oneOf by role: %v", msg)
	}
	for _, m := range []string{"SystemMessage", "UserMessage", "ToolMessage"} {
		if ref := prop(m, "content")["$ref"]; ref != "#/components/schemas/MessageContent" {
			t.Errorf("%s.content is %v", m, prop(m, "content"))
		}
	}
	if ref := prop("AssistantMessage", "tool_calls")["items"].(map[string]any)["$ref"]; ref != "#/components/schemas/ToolCall" {
		t.Errorf("AssistantMessage.tool_calls items are %v", ref)
	}
}
