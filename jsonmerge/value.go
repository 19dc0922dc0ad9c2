package jsonmerge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting Merge accepts: an object or array inside
// 63 others is the deepest.
const MaxDepth = 64

// Errors Merge returns for input it refuses (wrapped, naming the input);
// test with errors.Is.
var (
	ErrInvalidJSON  = errors.New("not one valid JSON value")
	ErrTooDeep      = errors.New("nested too deeply")
	ErrDuplicateKey = errors.New("duplicate object key")
)

// A decoded value is map[string]any, []any, string, json.Number, bool,
// nil, or absent: the value of a member or element a side does not have.
type absentValue struct{}

var absent any = absentValue{}

func isAbsent(v any) bool { _, ok := v.(absentValue); return ok }

// parse decodes a document that is exactly one JSON value.
func parse(doc []byte) (any, error) {
	if !utf8.Valid(doc) {
		return nil, fmt.Errorf("%w: invalid UTF-8", ErrInvalidJSON)
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	v, err := decode(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the value", ErrInvalidJSON)
	}
	return v, nil
}

// decode reads the value that starts at the decoder's next token, inside
// depth containers.
func decode(dec *json.Decoder, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidJSON, err)
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	if depth == MaxDepth {
		return nil, fmt.Errorf("%w: deeper than %d levels", ErrTooDeep, MaxDepth)
	}
	var v any
	if delim == '{' {
		obj := map[string]any{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return nil, fmt.Errorf("%w: %v", ErrInvalidJSON, err)
			}
			name, _ := tok.(string) // the decoder refuses any other token here
			if _, dup := obj[name]; dup {
				return nil, fmt.Errorf("%w: %q", ErrDuplicateKey, name)
			}
			if obj[name], err = decode(dec, depth+1); err != nil {
				return nil, err
			}
		}
		v = obj
	} else {
		arr := []any{}
		for dec.More() {
			e, err := decode(dec, depth+1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, e)
		}
		v = arr
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return nil, fmt.Errorf("%w: %v", ErrInvalidJSON, err)
	}
	return v, nil
}

// encode returns the canonical JSON of a decoded value (nil for absent):
// compact, members sorted, numbers as written, no HTML escaping.
func encode(v any) []byte {
	if isAbsent(v) {
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("jsonmerge: encoding a decoded value: " + err.Error()) // only decoded values get here
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// equal reports whether a and b have the same canonical form.
func equal(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, av := range a {
			if bv, ok := b[k]; !ok || !equal(av, bv) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		return ok && slices.EqualFunc(a, b, equal)
	default: // comparable: string, json.Number, bool, nil, absent
		return a == b
	}
}
