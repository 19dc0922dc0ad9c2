package api_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/promptd/promptd/api"
)

// loadSpec parses api/openapi.yaml with kin-openapi.
func loadSpec() (*openapi3.T, error) {
	return openapi3.NewLoader().LoadFromData(api.OpenAPI())
}

func TestOpenAPI_isAValidOpenAPIDocument(t *testing.T) {
	doc, err := loadSpec()
	if err != nil {
		t.Fatalf("load openapi.yaml: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.yaml is not a valid OpenAPI document: %v", err)
	}
}

var (
	routerOnce sync.Once
	specRouter routers.Router
	routerErr  error
)

// router finds the operation of a test request. It matches any host: the
// spec's server is 127.0.0.1:8080, test requests go to example.com.
func router(t testing.TB) routers.Router {
	t.Helper()
	routerOnce.Do(func() {
		doc, err := loadSpec()
		if routerErr = err; err != nil {
			return
		}
		if routerErr = doc.Validate(context.Background()); routerErr != nil {
			return
		}
		doc.Servers = nil
		specRouter, routerErr = gorillamux.NewRouter(doc)
	})
	if routerErr != nil {
		t.Fatalf("openapi.yaml: %v", routerErr)
	}
	return specRouter
}

// checkResponse fails the test when an answer of the server does not match
// what the spec documents for its route: the status must be listed, the
// content type and body must match that response's schema and its headers
// their own (required ones present). A request to no documented route
// (unknown path or method) must still answer a problem of the spec; routes
// that tests register themselves are not checked.
//
// kin-openapi checks status, headers and content type; the body is checked
// with the spec's schemas compiled once (kin-openapi compiles a JSON Schema
// 2020-12 validator on every call, milliseconds per answer).
func checkResponse(t testing.TB, req *http.Request, rec *httptest.ResponseRecorder) {
	t.Helper()
	route, params, err := router(t).FindRoute(req)
	if err != nil {
		if rec.Code == http.StatusNotFound || rec.Code == http.StatusMethodNotAllowed {
			checkBody(t, req, rec, "#/components/schemas/Problem", true)
		}
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 rec.Code,
		Header:                 rec.Header(),
		Body:                   io.NopCloser(strings.NewReader(rec.Body.String())),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, ExcludeResponseBody: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(req.Context(), in); err != nil {
		t.Errorf("%s %s answered %d, which openapi.yaml does not document: %v\nbody: %.2000s",
			req.Method, req.URL.Path, rec.Code, err, rec.Body)
		return
	}
	ref := route.Operation.Responses.Status(rec.Code)
	if ref == nil || rec.Code == http.StatusNotModified || req.Method == http.MethodHead {
		return
	}
	ct := rec.Header().Get("Content-Type")
	var mediaType string
	for key, mt := range ref.Value.Content {
		if mt == ref.Value.Content.Get(ct) {
			mediaType = key
		}
	}
	switch {
	case len(ref.Value.Content) == 0:
		if rec.Body.Len() > 0 {
			t.Errorf("%s %s answered %d with a body, which openapi.yaml says has none: %.200s",
				req.Method, req.URL.Path, rec.Code, rec.Body)
		}
	case mediaType == "":
		t.Errorf("%s %s answered %d as %q, a content type openapi.yaml does not document for it",
			req.Method, req.URL.Path, rec.Code, ct)
	default:
		at := "#/paths/" + escapePointer(route.Path) + "/" + strings.ToLower(req.Method) + "/responses/" + strconv.Itoa(rec.Code)
		if ref.Ref != "" {
			at = ref.Ref // #/components/responses/...
		}
		checkBody(t, req, rec, at+"/content/"+escapePointer(mediaType)+"/schema", strings.HasSuffix(mediaType, "json"))
	}
}

// checkBody validates an answer's body against the schema at a pointer of
// the spec: JSON parsed, anything else as a string.
func checkBody(t testing.TB, req *http.Request, rec *httptest.ResponseRecorder, pointer string, isJSON bool) {
	t.Helper()
	var v any = rec.Body.String()
	if isJSON {
		var err error
		if v, err = jsonschema.UnmarshalJSON(bytes.NewReader(rec.Body.Bytes())); err != nil {
			t.Errorf("%s %s answered %d with a body that is not JSON: %v\nbody: %.500s", req.Method, req.URL.Path, rec.Code, err, rec.Body)
			return
		}
	}
	if err := compiled(t, pointer).Validate(v); err != nil {
		t.Errorf("%s %s answered %d with a body that is not the one of openapi.yaml (%s): %v\nbody: %.2000s",
			req.Method, req.URL.Path, rec.Code, pointer, err, rec.Body)
	}
}

// escapePointer escapes a JSON pointer token (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// failures records what checkResponse reports instead of failing the test.
type failures struct {
	testing.TB
	msgs []string
}

func (f *failures) Helper() {}
func (f *failures) Errorf(format string, args ...any) {
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}
func (f *failures) Fatalf(format string, args ...any) {
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
	goruntime.Goexit()
}

func TestCheckResponse_whenAnAnswerIsNotTheSpecs_failsTheTest(t *testing.T) {
	ok := func(rec *httptest.ResponseRecorder) {
		rec.Header().Set("X-Request-Id", "r-1")
		rec.Header().Set("Cache-Control", "no-store")
		rec.Header().Set("Content-Type", "application/json")
	}
	for _, tc := range []struct {
		name, method, path string
		answer             func(rec *httptest.ResponseRecorder)
		wantFailure        bool
	}{
		{"documented", "GET", "/healthz", func(rec *httptest.ResponseRecorder) {
			ok(rec)
			rec.WriteHeader(200)
			rec.WriteString(`{"status": "ok"}`)
		}, false},
		{"body off the schema", "GET", "/healthz", func(rec *httptest.ResponseRecorder) {
			ok(rec)
			rec.WriteHeader(200)
			rec.WriteString(`{"status": "up"}`)
		}, true},
		{"undocumented status", "GET", "/healthz", func(rec *httptest.ResponseRecorder) {
			ok(rec)
			rec.WriteHeader(418)
			rec.WriteString(`{"status": "ok"}`)
		}, true},
		{"required header missing", "GET", "/healthz", func(rec *httptest.ResponseRecorder) {
			ok(rec)
			rec.Header().Del("X-Request-Id")
			rec.WriteHeader(200)
			rec.WriteString(`{"status": "ok"}`)
		}, true},
		{"other content type", "GET", "/healthz", func(rec *httptest.ResponseRecorder) {
			ok(rec)
			rec.Header().Set("Content-Type", "text/plain")
			rec.WriteHeader(200)
			rec.WriteString(`ok`)
		}, true},
		{"a body where none is documented", "DELETE", "/v1/leases/ls_b3JkZXI6MQ", func(rec *httptest.ResponseRecorder) {
			ok(rec)
			rec.WriteHeader(204)
			rec.WriteString(`{}`)
		}, true},
		{"a problem code of another status", "GET", "/v1/agents", func(rec *httptest.ResponseRecorder) {
			ok(rec)
			rec.Header().Set("Content-Type", "application/problem+json")
			rec.WriteHeader(400)
			rec.WriteString(`{"type": "urn:promptd:problem:internal", "title": "Internal", "status": 400, "detail": "", "code": "internal"}`)
		}, true},
		{"an unrouted path answering no problem", "GET", "/nope", func(rec *httptest.ResponseRecorder) {
			ok(rec)
			rec.WriteHeader(404)
			rec.WriteString(`not found`)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			tc.answer(rec)
			f := &failures{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				checkResponse(f, httptest.NewRequest(tc.method, tc.path, nil), rec)
			}()
			<-done
			if got := len(f.msgs) > 0; got != tc.wantFailure {
				t.Errorf("failed = %v, want %v: %q", got, tc.wantFailure, f.msgs)
			}
		})
	}
}
