// Package jsonin checks untrusted JSON before anything parses it: one pass
// over the bytes, no recursion and no allocation beyond the keys of the
// objects it is inside, so a hostile document costs time linear in its size
// and memory bounded by the depth limit.
//
// A document passes Check when it is exactly one RFC 8259 JSON value whose
// nesting is at most the depth limit, whose strings are valid UTF-8 (raw
// bytes and \u escapes alike: a lone surrogate is refused, never replaced
// by U+FFFD), without control characters, and whose objects name no key
// twice. What passes can then be given to encoding/json, or to a canonical
// form, knowing that no two different documents it accepted decode to the
// same value by accident of replacement or of "last duplicate wins".
package jsonin

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DefaultMaxDepth is the nesting limit promptd applies to request bodies:
// an object or array inside 63 others is the deepest accepted.
const DefaultMaxDepth = 64

// Kinds of refusal that callers may test with errors.Is; the other
// refusals are syntax errors.
var (
	ErrDuplicateKey = errors.New("duplicate object key")
	ErrTooDeep      = errors.New("nested too deeply")
	ErrInvalidText  = errors.New("invalid text in a string")
)

// Error says where a document is refused. Path names the member in the
// form a client can find ("turns[2].content", "config.tools[0]"); it is
// empty for the document itself.
type Error struct {
	Path   string
	Offset int // byte offset of the problem
	Reason string
	Kind   error // ErrDuplicateKey, ErrTooDeep, ErrInvalidText or nil
}

func (e *Error) Unwrap() error { return e.Kind }

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Reason + " (at byte " + strconv.Itoa(e.Offset) + ")"
	}
	return e.Path + ": " + e.Reason + " (at byte " + strconv.Itoa(e.Offset) + ")"
}

// frame is one open object or array.
type frame struct {
	obj   bool
	index int      // arrays: the element being read
	key   []byte   // objects: the member being read (decoded)
	keys  [][]byte // objects: the keys read so far (duplicates)
	set   map[string]struct{}
	shape *shape // what the value is decoded into (CheckFor); nil: anything
}

// smallObject is how many keys an object is checked for duplicates by a
// linear scan before a map is built.
const smallObject = 16

func (f *frame) addKey(k []byte) bool {
	if f.set != nil {
		if _, dup := f.set[string(k)]; dup {
			return false
		}
		f.set[string(k)] = struct{}{}
		return true
	}
	for _, seen := range f.keys {
		if bytes.Equal(seen, k) {
			return false
		}
	}
	f.keys = append(f.keys, k)
	if len(f.keys) > smallObject {
		f.set = make(map[string]struct{}, 2*len(f.keys))
		for _, seen := range f.keys {
			f.set[string(seen)] = struct{}{}
		}
	}
	return true
}

// push opens an object or array, reusing the storage of frames closed
// before, so a document of many small objects allocates nothing per object.
func (s *scanner) push(obj bool) {
	sh := s.root
	if n := len(s.stack); n > 0 {
		top := &s.stack[n-1]
		sh = top.shape.child(top.key)
	}
	if sh != nil && sh.object() != obj {
		sh = nil // the wrong kind of value: encoding/json's type error
	}
	if len(s.stack) < cap(s.stack) {
		s.stack = s.stack[:len(s.stack)+1]
		f := &s.stack[len(s.stack)-1]
		*f = frame{obj: obj, keys: f.keys[:0], shape: sh}
		return
	}
	s.stack = append(s.stack, frame{obj: obj, shape: sh})
}

type scanner struct {
	b     []byte
	i     int
	max   int
	stack []frame
	root  *shape // the shape of the document (CheckFor)
}

// Check reports whether doc is one strict JSON value (see the package
// comment) nested at most maxDepth deep (maxDepth <= 0 means
// DefaultMaxDepth). The error is an *Error.
func Check(doc []byte, maxDepth int) error {
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	s := &scanner{b: doc, max: maxDepth}
	return s.run()
}

func (s *scanner) fail(reason string) *Error {
	return &Error{Path: s.path(), Offset: s.i, Reason: reason}
}

func (s *scanner) failKind(kind error, reason string) *Error {
	e := s.fail(reason)
	e.Kind = kind
	return e
}

// path renders the member being read.
func (s *scanner) path() string {
	var b strings.Builder
	for i := range s.stack {
		f := &s.stack[i]
		if f.obj {
			if f.key == nil && i == len(s.stack)-1 {
				break // between members: the object itself
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.Write(f.key)
		} else {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(f.index))
			b.WriteByte(']')
		}
	}
	return b.String()
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) run() error {
	for {
		// A value is expected.
		s.ws()
		if s.i >= len(s.b) {
			if len(s.stack) == 0 && s.i == 0 {
				return s.fail("empty document")
			}
			return s.fail("unexpected end of the document")
		}
		switch c := s.b[s.i]; {
		case c == '{' || c == '[':
			if len(s.stack) >= s.max {
				return s.failKind(ErrTooDeep, "nested deeper than "+strconv.Itoa(s.max)+" levels")
			}
			s.i++
			s.push(c == '{')
			s.ws()
			if c == '{' {
				if s.i < len(s.b) && s.b[s.i] == '}' {
					s.i++
					s.stack = s.stack[:len(s.stack)-1]
					break
				}
				if err := s.member(); err != nil {
					return err
				}
				continue
			}
			if s.i < len(s.b) && s.b[s.i] == ']' {
				s.i++
				s.stack = s.stack[:len(s.stack)-1]
				break
			}
			continue
		case c == '"':
			if _, err := s.str(false); err != nil {
				return err
			}
		case c == 't':
			if err := s.literal("true"); err != nil {
				return err
			}
		case c == 'f':
			if err := s.literal("false"); err != nil {
				return err
			}
		case c == 'n':
			if err := s.literal("null"); err != nil {
				return err
			}
		case c == '-' || (c >= '0' && c <= '9'):
			if err := s.number(); err != nil {
				return err
			}
		default:
			return s.fail("invalid character " + strconv.QuoteRune(rune(c)) + " where a value was expected")
		}
		// A value ended: close what it ends, or go on to the next one.
		next, err := s.after()
		if err != nil || !next {
			return err
		}
	}
}

// after consumes what follows a complete value: commas, closing brackets,
// the next member's key. It reports whether another value follows.
func (s *scanner) after() (bool, error) {
	for {
		s.ws()
		if len(s.stack) == 0 {
			if s.i != len(s.b) {
				return false, s.fail("unexpected data after the JSON value")
			}
			return false, nil
		}
		if s.i >= len(s.b) {
			return false, s.fail("unexpected end of the document")
		}
		top := &s.stack[len(s.stack)-1]
		c := s.b[s.i]
		switch {
		case c == ',':
			s.i++
			if top.obj {
				s.ws()
				return true, s.member()
			}
			top.index++
			return true, nil
		case top.obj && c == '}', !top.obj && c == ']':
			s.i++
			s.stack = s.stack[:len(s.stack)-1]
		default:
			if top.obj {
				return false, s.fail("expected ',' or '}' after an object member")
			}
			return false, s.fail("expected ',' or ']' after an array element")
		}
	}
}

// member reads `"key" :` of the innermost object.
func (s *scanner) member() error {
	top := &s.stack[len(s.stack)-1]
	top.key = nil
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return s.fail("expected a string key")
	}
	k, err := s.str(true)
	if err != nil {
		return err
	}
	top = &s.stack[len(s.stack)-1]
	if !top.addKey(k) {
		return s.failKind(ErrDuplicateKey, "duplicate key "+strconv.Quote(string(k)))
	}
	top.key = k
	if sh := top.shape; sh != nil && sh.kind == structShape {
		if _, ok := sh.fields[string(k)]; !ok {
			return s.failKind(ErrUnknownMember, "unknown member "+strconv.Quote(string(k))+" (member names match exactly, case included)")
		}
	}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != ':' {
		return s.fail("expected ':' after an object key")
	}
	s.i++
	return nil
}

func (s *scanner) literal(word string) error {
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		return s.fail("invalid literal (true, false or null expected)")
	}
	s.i += len(word)
	return nil
}

func (s *scanner) digits() int {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i - start
}

func (s *scanner) number() error {
	if s.b[s.i] == '-' {
		s.i++
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if s.digits() == 0 {
		return s.fail("invalid number")
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return s.fail("invalid number: digits expected after '.'")
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return s.fail("invalid number: digits expected in the exponent")
		}
	}
	return nil
}

// str reads a string starting at its opening quote. For a key (keep) it
// returns the decoded text (the document's own bytes when nothing is
// escaped).
func (s *scanner) str(keep bool) ([]byte, error) {
	s.i++ // opening quote
	start := s.i
	escaped := false
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			raw := s.b[start:s.i]
			s.i++
			if !keep {
				return nil, nil
			}
			if !escaped {
				if raw == nil {
					raw = s.b[start:start] // "": a key, not "no key"
				}
				return raw, nil
			}
			return []byte(Unescape(raw)), nil
		case c == '\\':
			escaped = true
			if err := s.escape(); err != nil {
				return nil, err
			}
		case c < 0x20:
			return nil, s.failKind(ErrInvalidText, "control character in a string (escape it)")
		case c < utf8.RuneSelf:
			s.i++
		default:
			r, n := utf8.DecodeRune(s.b[s.i:])
			if r == utf8.RuneError && n <= 1 {
				return nil, s.failKind(ErrInvalidText, "invalid UTF-8 in a string")
			}
			s.i += n
		}
	}
	return nil, s.fail("unterminated string")
}

// escape checks one escape sequence at s.i (the backslash).
func (s *scanner) escape() error {
	if s.i+1 >= len(s.b) {
		return s.fail("unterminated string")
	}
	switch s.b[s.i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.i += 2
		return nil
	case 'u':
	default:
		return s.fail("invalid escape sequence")
	}
	r, ok := hex4(s.b, s.i+2)
	if !ok {
		return s.fail("invalid \\u escape")
	}
	switch {
	case r >= 0xDC00 && r <= 0xDFFF:
		return s.failKind(ErrInvalidText, "lone low surrogate \\u escape (not valid UTF-16, not Unicode text)")
	case r >= 0xD800 && r <= 0xDBFF:
		j := s.i + 6
		if j+1 >= len(s.b) || s.b[j] != '\\' || s.b[j+1] != 'u' {
			return s.failKind(ErrInvalidText, "lone high surrogate \\u escape (not valid UTF-16, not Unicode text)")
		}
		lo, ok := hex4(s.b, j+2)
		if !ok || lo < 0xDC00 || lo > 0xDFFF {
			return s.failKind(ErrInvalidText, "high surrogate \\u escape not followed by a low surrogate")
		}
		s.i += 12
		return nil
	}
	s.i += 6
	return nil
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// Unescape decodes the body of a string (between its quotes) that Check
// accepted.
func Unescape(raw []byte) string {
	var b strings.Builder
	b.Grow(len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			b.WriteByte(c)
			i++
			continue
		}
		switch raw[i+1] {
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, _ := hex4(raw, i+2)
			if r >= 0xD800 && r <= 0xDBFF {
				lo, _ := hex4(raw, i+8)
				r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
				i += 6
			}
			b.WriteRune(r)
			i += 6
			continue
		default: // " \ /
			b.WriteByte(raw[i+1])
		}
		i += 2
	}
	return b.String()
}

// DepthGuard wraps a reader of JSON text and fails the read that takes the
// nesting past max (with an *Error of kind ErrTooDeep), so a body of a
// million '[' is refused at its 65th byte, before it is read whole. It
// tracks only strings and brackets: the full check is Check, once the
// document is read.
type DepthGuard struct {
	R     io.Reader
	Max   int
	depth int
	off   int
	str   bool // inside a string
	esc   bool // after a backslash inside a string
}

// Read reads from R and scans what it read.
func (g *DepthGuard) Read(p []byte) (int, error) {
	n, err := g.R.Read(p)
	max := g.Max
	if max <= 0 {
		max = DefaultMaxDepth
	}
	for i, c := range p[:n] {
		switch {
		case g.esc:
			g.esc = false
		case g.str:
			switch c {
			case '\\':
				g.esc = true
			case '"':
				g.str = false
			}
		case c == '"':
			g.str = true
		case c == '{' || c == '[':
			g.depth++
			if g.depth > max {
				return i, &Error{Offset: g.off + i, Kind: ErrTooDeep,
					Reason: "nested deeper than " + strconv.Itoa(max) + " levels"}
			}
		case c == '}' || c == ']':
			g.depth--
		}
	}
	g.off += n
	return n, err
}
