package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/internal/jsonin"
	"github.com/promptd/promptd/promptstore"
)

// validator is a request body that checks itself after decoding.
type validator interface{ validate() error }

// maxBodyDepth is how deeply a request body may nest objects and arrays.
const maxBodyDepth = jsonin.DefaultMaxDepth

// ctxBody holds the request body once readBody has read and checked it.
const ctxBody = "promptd.body"

// readBody is the one way request bodies enter promptd: it reads the body
// once (within the route's body limit, so a body is never held beyond it,
// and with a depth guard, so a body nested too deeply is refused at the
// byte that goes too deep) and checks it with jsonin before anything parses
// or hashes it: one JSON value, nested at most maxBodyDepth deep, strict
// UTF-8 (an invalid byte or a lone surrogate is refused, never replaced),
// no control characters in strings, no key twice in an object. A refusal
// is 400 invalid_json naming the member (field). A body that stops before
// its end (the client gave up, or the read timeout cut it) is 400
// invalid_json, never an internal error. An empty body is returned as is:
// the caller decides what it means.
func readBody(c echo.Context) ([]byte, error) {
	b, _, err := readBodyRaw(c)
	return b, err
}

// bodyRead is what readBodyRaw found, kept for the request.
type bodyRead struct {
	body     []byte
	complete bool // the body was received whole (err is a refusal of its content)
	err      error
}

// readBodyRaw is readBody that also returns, for a body received whole but
// refused, its bytes (the Idempotency-Key binds such a request to them, so
// a repeat is answered with the stored 400).
func readBodyRaw(c echo.Context) ([]byte, *bodyRead, error) {
	if r, ok := c.Get(ctxBody).(*bodyRead); ok {
		if r.err != nil {
			return nil, r, r.err
		}
		return r.body, r, nil
	}
	r := &bodyRead{}
	r.body, r.err = io.ReadAll(&jsonin.DepthGuard{R: c.Request().Body, Max: maxBodyDepth})
	var tooLarge *http.MaxBytesError
	switch {
	case r.err == nil:
		r.complete = true
		if len(bytes.TrimSpace(r.body)) > 0 {
			if err := jsonin.Check(r.body, maxBodyDepth); err != nil {
				r.err = jsonRefused(err)
			}
		}
	case errors.As(r.err, &tooLarge):
		// 413 body_too_large
	case errors.Is(r.err, jsonin.ErrTooDeep):
		r.err = jsonRefused(r.err) // refused at the byte that went too deep, the rest unread
	default:
		r.err = &Error{Code: CodeInvalidJSON, Err: &clientGone{r.err},
			Detail: "the request body was not received whole (the client stopped sending it)"}
	}
	c.Set(ctxBody, r)
	if r.err != nil {
		return nil, r, r.err
	}
	return r.body, r, nil
}

// jsonRefused is the 400 invalid_json for a body jsonin refused.
func jsonRefused(err error) error {
	var e *jsonin.Error
	if !errors.As(err, &e) {
		return Errorf(CodeInvalidJSON, "the request body is not valid JSON")
	}
	p := &Error{Code: CodeInvalidJSON, Err: err, Detail: "the request body is not valid JSON: " + e.Error()}
	if e.Path != "" {
		p.With("field", e.Path)
	}
	return p
}

// clientGone marks an error caused by the client going away (a body cut
// short, a connection closed): an answer nobody reads, not a fault of
// promptd's, so it is never logged as an error.
type clientGone struct{ err error }

func (e *clientGone) Error() string { return "client gone: " + e.err.Error() }
func (e *clientGone) Unwrap() error { return e.err }

// decode reads the request body (readBody) into dst, strictly, then
// validates it: the one way handlers read bodies.
//
//   - what readBody refuses, an empty body, not an object: 400 invalid_json
//   - an unknown member, at any depth (names match exactly, case
//     included, so neither encoding/json's dropping of unknown members
//     nor its case-insensitive matching applies), a value of the wrong
//     type (a fraction or an out-of-range number for an integer): 400
//     invalid_field naming it by its path ("scopes.agent")
//   - then dst.validate(), when dst has one.
func decode(c echo.Context, dst any) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return Errorf(CodeInvalidJSON, "the request body is empty; a JSON object is required")
	}
	return decodeObject(body, "", dst)
}

// decodeOptional is decode for routes whose body may be left out (POST
// .../pause): an empty body is the empty object.
func decodeOptional(c echo.Context, dst any) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	return decodeObject(body, "", dst)
}

// decodeObject decodes one JSON object into dst; prefix names the object's
// place in the body ("items[3].") for errors. Every object in raw that
// decodes into a struct, however deep (struct members, pointers, slices,
// maps of structs), names only that struct's members, exactly
// (jsonin.CheckFor); a json.RawMessage member is not looked into: it is
// decoded later with decodeObject (steps, guard, items, turns) or is
// free-form (payload, metadata, config, whose own parser is strict).
func decodeObject(raw []byte, prefix string, dst any) error {
	if err := objectStart(raw); err != nil {
		if prefix == "" {
			return Errorf(CodeInvalidJSON, "the request body is not a valid JSON object: %v", err)
		}
		return invalidField(strings.TrimSuffix(prefix, "."), "must be a JSON object: %v", err)
	}
	if err := jsonin.CheckFor(raw, maxBodyDepth, reflect.TypeOf(dst)); err != nil {
		var e *jsonin.Error
		if errors.As(err, &e) && errors.Is(err, jsonin.ErrUnknownMember) {
			field := prefix + e.Path
			return invalidField(field, "unknown field %q (member names match exactly, case included)", field)
		}
		if prefix == "" {
			return jsonRefused(err)
		}
		return invalidField(strings.TrimSuffix(prefix, "."), "must be a valid JSON object: %v", err)
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

// objectStart refuses a document that is not an object before CheckFor
// reads it (CheckFor, which follows, refuses invalid JSON, duplicate keys
// and data after the value). It looks at one byte: a decode of every
// request body used to list the object's keys through encoding/json's
// Decoder, whose end-of-value detection allocates an error per member.
func objectStart(raw []byte) error {
	t := bytes.TrimLeft(raw, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return errNotObject
	}
	return nil
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
	if err := ident.Validate(name, v); err != nil {
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
	if err := ident.Validate(field, v); err != nil {
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

// List limits (api/openapi.yaml, Conventions: Lists).
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
