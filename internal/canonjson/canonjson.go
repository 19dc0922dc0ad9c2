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
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/promptd/promptd/internal/jsonin"
)

// MaxDepth is the deepest nesting of objects and arrays Canonical accepts.
const MaxDepth = jsonin.DefaultMaxDepth

// Errors Canonical returns (wrapped in a *jsonin.Error naming the place);
// test with errors.Is.
var (
	ErrDuplicateKey = jsonin.ErrDuplicateKey
	ErrTooDeep      = jsonin.ErrTooDeep
)

// Canonical returns the canonical JSON of a JSON document: object keys
// sorted (by UTF-8 bytes), no insignificant whitespace, no HTML escaping,
// numbers exactly as written. Duplicate object keys and trailing data are
// errors, so two different documents never share a canonical form by
// accident of parsing.
//
// The document is checked strictly first (jsonin.Check): nested at most
// MaxDepth deep, valid UTF-8 without lone surrogates, so no two documents
// share a canonical form because one had bytes replaced by U+FFFD. The
// canonical form is then written from the bytes themselves, without a
// parsed tree: the memory it takes beyond its answer is the members of the
// objects it is inside, whatever the document holds.
func Canonical(doc []byte) ([]byte, error) {
	if err := jsonin.Check(doc, MaxDepth); err != nil {
		return nil, err
	}
	c := &canon{doc: doc}
	c.out.Grow(len(doc))
	c.value(c.ws(0))
	return c.out.Bytes(), nil
}

// Hash is "sha256:" + hex of canonical JSON: a content_hash.
func Hash(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// member is one object member: its key (decoded) and where its value is.
type member struct {
	key   []byte // decoded, for sorting
	raw   []byte // as written, between the quotes
	value int
}

// canon writes the canonical form of a document jsonin.Check accepted.
type canon struct {
	doc     []byte
	out     bytes.Buffer
	members []member // a stack: the members of every object being written
}

func (c *canon) ws(i int) int {
	for i < len(c.doc) {
		switch c.doc[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// value writes the value at i and returns where it ends.
func (c *canon) value(i int) int {
	switch c.doc[i] {
	case '{':
		return c.object(i)
	case '[':
		c.out.WriteByte('[')
		i = c.ws(i + 1)
		for n := 0; c.doc[i] != ']'; n++ {
			if n > 0 {
				c.out.WriteByte(',')
			}
			i = c.ws(c.value(i))
			if c.doc[i] == ',' {
				i = c.ws(i + 1)
			}
		}
		c.out.WriteByte(']')
		return i + 1
	case '"':
		end := stringEnd(c.doc, i)
		writeString(&c.out, c.doc[i+1:end-1])
		return end
	}
	end := i
	for end < len(c.doc) && !delimiter(c.doc[end]) {
		end++
	}
	c.out.Write(c.doc[i:end]) // a number as written, or a literal
	return end
}

func (c *canon) object(i int) int {
	base := len(c.members)
	i = c.ws(i + 1)
	for c.doc[i] != '}' {
		kend := stringEnd(c.doc, i)
		raw := c.doc[i+1 : kend-1]
		key := raw
		if bytes.IndexByte(raw, '\\') >= 0 {
			key = []byte(jsonin.Unescape(raw))
		}
		i = c.ws(kend)
		i = c.ws(i + 1) // ':'
		c.members = append(c.members, member{key: key, raw: raw, value: i})
		i = c.ws(skip(c.doc, i))
		if c.doc[i] == ',' {
			i = c.ws(i + 1)
		}
	}
	top := len(c.members)
	slices.SortFunc(c.members[base:top], func(a, b member) int { return bytes.Compare(a.key, b.key) })
	c.out.WriteByte('{')
	for j := base; j < top; j++ {
		if j > base {
			c.out.WriteByte(',')
		}
		m := c.members[j] // nested objects grow the stack above top
		writeString(&c.out, m.raw)
		c.out.WriteByte(':')
		c.value(m.value)
	}
	c.out.WriteByte('}')
	c.members = c.members[:base]
	return i + 1
}

func delimiter(b byte) bool {
	switch b {
	case ',', ']', '}', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// stringEnd returns the index after the closing quote of the string that
// starts at i.
func stringEnd(doc []byte, i int) int {
	for i++; ; i++ {
		switch doc[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
}

// skip returns where the value at i ends, without writing it.
func skip(doc []byte, i int) int {
	switch doc[i] {
	case '"':
		return stringEnd(doc, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch doc[i] {
			case '"':
				i = stringEnd(doc, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for i < len(doc) && !delimiter(doc[i]) {
		i++
	}
	return i
}

// writeString writes the string whose body (between the quotes, escapes
// as written) is raw, escaped like encoding/json without HTML escaping:
// quote, backslash and control characters, U+2028 and U+2029.
func writeString(buf *bytes.Buffer, raw []byte) {
	if bytes.IndexByte(raw, '\\') < 0 && bytes.IndexByte(raw, 0xE2) < 0 {
		// Nothing to decode and nothing to escape: Check refused raw
		// control characters, and U+2028/U+2029 start with 0xE2.
		buf.WriteByte('"')
		buf.Write(raw)
		buf.WriteByte('"')
		return
	}
	s := jsonin.Unescape(raw)
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
		if r == '\u2028' || r == '\u2029' {
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
