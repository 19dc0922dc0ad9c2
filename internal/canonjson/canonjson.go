// Package canonjson is promptd's canonical JSON: object keys sorted (by
// UTF-8 bytes), no insignificant whitespace, no HTML escaping, numbers
// exactly as written, duplicate keys rejected. Content hashes are computed
// over it. The server (promptstore) and the Go client share this one
// implementation, so a client computes the same content_hash as promptd.
package canonjson

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"unicode/utf8"
)

// Canonical returns the canonical JSON of a JSON document: object keys
// sorted (by UTF-8 bytes), no insignificant whitespace, no HTML escaping,
// numbers exactly as written. Duplicate object keys and trailing data are
// errors, so two different documents never share a canonical form by
// accident of parsing.
func Canonical(doc []byte) ([]byte, error) {
	v, err := parseJSON(doc)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(len(doc))
	writeCanonical(&buf, v)
	return buf.Bytes(), nil
}

// Hash is "sha256:" + hex of canonical JSON: a content_hash.
func Hash(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// jsonValue is a parsed JSON value keeping numbers as written:
// nil, bool, json.Number, string, []jsonValue or *jsonObject.
type jsonValue = any

type jsonObject struct {
	keys []string
	vals map[string]jsonValue
}

// ErrDuplicateKey is returned for an object that names a key twice.
var ErrDuplicateKey = errors.New("duplicate object key")

func parseJSON(doc []byte) (jsonValue, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

func parseValue(dec *json.Decoder) (jsonValue, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := &jsonObject{vals: map[string]jsonValue{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k := kt.(string)
				if _, dup := obj.vals[k]; dup {
					return nil, fmt.Errorf("%w %q", ErrDuplicateKey, k)
				}
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				obj.keys = append(obj.keys, k)
				obj.vals[k] = v
			}
			_, err := dec.Token() // '}'
			return obj, err
		case '[':
			arr := []jsonValue{}
			for dec.More() {
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.Token() // ']'
			return arr, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return t, nil // nil, bool, json.Number, string
	}
}

func writeCanonical(buf *bytes.Buffer, v jsonValue) {
	switch x := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		buf.WriteString(strconv.FormatBool(x))
	case json.Number:
		buf.WriteString(string(x))
	case string:
		writeString(buf, x)
	case []jsonValue:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeCanonical(buf, e)
		}
		buf.WriteByte(']')
	case *jsonObject:
		keys := append([]string(nil), x.keys...)
		sort.Strings(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, k)
			buf.WriteByte(':')
			writeCanonical(buf, x.vals[k])
		}
		buf.WriteByte('}')
	}
}

// writeString escapes like encoding/json without HTML escaping: quote,
// backslash and control characters; invalid UTF-8 becomes U+FFFD.
func writeString(buf *bytes.Buffer, s string) {
	const hexd = "0123456789abcdef"
	buf.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				buf.WriteByte('\\')
				buf.WriteByte(c)
			case c == '\n':
				buf.WriteString(`\n`)
			case c == '\r':
				buf.WriteString(`\r`)
			case c == '\t':
				buf.WriteString(`\t`)
			case c < 0x20:
				buf.WriteString(`\u00`)
				buf.WriteByte(hexd[c>>4])
				buf.WriteByte(hexd[c&0xf])
			default:
				buf.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf.WriteString(`\ufffd`)
		} else if r == '\u2028' || r == '\u2029' {
			fmt.Fprintf(buf, `\u%04x`, r)
		} else {
			buf.WriteString(s[i : i+size])
		}
		i += size
	}
	buf.WriteByte('"')
}

// Pretty returns the canonical document indented by two spaces (sorted
// keys), the form diffs are computed on.
func Pretty(canonical []byte) []byte {
	var out bytes.Buffer
	if err := json.Indent(&out, canonical, "", "  "); err != nil {
		return canonical
	}
	out.WriteByte('\n')
	return out.Bytes()
}
