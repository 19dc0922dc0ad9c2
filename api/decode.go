package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
)

// validator is a request body that checks itself after decoding.
type validator interface{ validate() error }

// decode reads the request body (within the route's body limit) into dst,
// strictly, then validates it: the one way handlers read bodies.
//
//   - not JSON, trailing data, not an object, a duplicate key: 400 invalid_json
//   - an unknown member, a value of the wrong type (a fraction or an
//     out-of-range number for an integer): 400 invalid_field naming it
//   - then dst.validate(), when dst has one.
func decode(c echo.Context, dst any) error {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err // *http.MaxBytesError: 413 body_too_large
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return Errorf(CodeInvalidJSON, "the request body is empty; a JSON object is required")
	}
	return decodeObject(body, "", dst)
}

// decodeOptional is decode for routes whose body may be left out (POST
// .../pause): an empty body is the empty object.
func decodeOptional(c echo.Context, dst any) error {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	return decodeObject(body, "", dst)
}

// decodeObject decodes one JSON object into dst; prefix names the object's
// place in the body ("items[3].") for errors.
func decodeObject(raw []byte, prefix string, dst any) error {
	keys, err := objectKeys(raw)
	if err != nil {
		if prefix == "" {
			return Errorf(CodeInvalidJSON, "the request body is not a valid JSON object: %v", err)
		}
		return invalidField(strings.TrimSuffix(prefix, "."), "must be a JSON object: %v", err)
	}
	allowed := jsonFields(reflect.TypeOf(dst).Elem())
	for _, k := range keys {
		if !allowed[k] {
			return invalidField(prefix+k, "unknown field %q", k)
		}
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := prefix + te.Field
			return invalidField(field, "%s must be %s, not %s", field, kindName(te.Type), te.Value)
		}
		return Errorf(CodeInvalidJSON, "the request body does not decode: %v", err)
	}
	if v, ok := dst.(validator); ok {
		return v.validate()
	}
	return nil
}

// errNotObject: a JSON value that is not an object.
var errNotObject = errors.New("not an object")

// objectKeys checks that raw is exactly one JSON object without duplicate
// keys and returns its keys.
func objectKeys(raw []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errNotObject
	}
	var keys []string
	seen := map[string]bool{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k := kt.(string)
		if seen[k] {
			return nil, fmt.Errorf("duplicate key %q", k)
		}
		seen[k] = true
		keys = append(keys, k)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON object")
	}
	return keys, nil
}

var fieldsCache sync.Map // reflect.Type -> map[string]bool

// jsonFields lists the JSON member names of a struct type.
func jsonFields(t reflect.Type) map[string]bool {
	if f, ok := fieldsCache.Load(t); ok {
		return f.(map[string]bool)
	}
	names := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names[name] = true
	}
	fieldsCache.Store(t, names)
	return names
}

func kindName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer in range"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return t.String()
}

func invalidField(field, format string, args ...any) *Error {
	return Errorf(CodeInvalidField, format, args...).With("field", field)
}

// isObject reports whether raw is a JSON object (decode checked its syntax).
func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// param is a path parameter, unescaped. Echo matches on the escaped path
// when the request had escapes the default encoding would not produce
// (%2F, %7B, ...), and then leaves the parameter escaped.
func param(c echo.Context, name string) (string, error) {
	v := c.Param(name)
	if c.Request().URL.RawPath == "" {
		return v, nil
	}
	u, err := url.PathUnescape(v)
	if err != nil {
		return "", Errorf(CodeInvalidID, "%s: bad escape in the path", name).With("field", name)
	}
	return u, nil
}

// pathID is an identifier path parameter (agent, env), validated: 400
// invalid_id naming the parameter.
func pathID(c echo.Context, name string) (string, error) {
	v, err := param(c, name)
	if err != nil {
		return "", err
	}
	if err := locks.ValidateID(name, v); err != nil {
		return "", err
	}
	return v, nil
}

// pathIDAs is pathID for a parameter whose errors name another field
// (the path's :id is a session_id).
func pathIDAs(c echo.Context, name, field string) (string, error) {
	v, err := param(c, name)
	if err != nil {
		return "", err
	}
	if err := locks.ValidateID(field, v); err != nil {
		return "", err
	}
	return v, nil
}

// pathVersion is a version path parameter: a positive integer below 2^31
// written in plain digits, else 400 invalid_field naming the parameter.
func pathVersion(c echo.Context, name string) (int, error) {
	v, err := param(c, name)
	if err != nil {
		return 0, err
	}
	n, ok := positive(v, promptstore.MaxVersion-1)
	if !ok {
		return 0, invalidField(name, "%s must be a version number, 1..%d", name, promptstore.MaxVersion-1)
	}
	return n, nil
}

// positive parses plain decimal digits without a leading zero as 1..max.
func positive(s string, max int64) (int, bool) {
	if s == "" || len(s) > 19 || s[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > max {
		return 0, false
	}
	return int(n), true
}

// List limits (API.md, Conventions: Lists).
const (
	defaultLimit = 50
	maxLimit     = 500
	maxCursor    = 256
)

// pageOf reads ?limit= (default 50, 1..500) and ?cursor=.
func pageOf(c echo.Context) (promptstore.Page, error) {
	p := promptstore.Page{Limit: defaultLimit, Cursor: c.QueryParam("cursor")}
	if v := c.QueryParam("limit"); v != "" || c.QueryParams().Has("limit") {
		n, ok := positive(v, maxLimit)
		if !ok {
			return p, invalidField("limit", "limit must be an integer, 1..%d", maxLimit)
		}
		p.Limit = n
	}
	if len(p.Cursor) > maxCursor {
		return p, invalidField("cursor", "cursor is longer than %d bytes", maxCursor)
	}
	return p, nil
}
