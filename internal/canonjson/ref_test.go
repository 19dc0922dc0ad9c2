package canonjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// The tree-based implementation Canonical had before it worked on the
// bytes: the reference its output must match, byte for byte.

var errRefDuplicate = errors.New("duplicate object key")

func refCanonical(doc []byte) ([]byte, error) {
	v, err := refParseJSON(doc)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	refWriteCanonical(&buf, v)
	return buf.Bytes(), nil
}

// jsonValue is a parsed JSON value keeping numbers as written:
// nil, bool, json.Number, string, []jsonValue or *jsonObject.
type jsonValue = any

type jsonObject struct {
	keys []string
	vals map[string]jsonValue
}

func refParseJSON(doc []byte) (jsonValue, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	v, err := refParseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

func refParseValue(dec *json.Decoder) (jsonValue, error) {
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
					return nil, fmt.Errorf("%w %q", errRefDuplicate, k)
				}
				v, err := refParseValue(dec)
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
				v, err := refParseValue(dec)
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

func refWriteCanonical(buf *bytes.Buffer, v jsonValue) {
	switch x := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		buf.WriteString(strconv.FormatBool(x))
	case json.Number:
		buf.WriteString(string(x))
	case string:
		refWriteString(buf, x)
	case []jsonValue:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			refWriteCanonical(buf, e)
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
			refWriteString(buf, k)
			buf.WriteByte(':')
			refWriteCanonical(buf, x.vals[k])
		}
		buf.WriteByte('}')
	}
}

// writeString escapes like encoding/json without HTML escaping: quote,
// backslash and control characters; invalid UTF-8 becomes U+FFFD.
func refWriteString(buf *bytes.Buffer, s string) {
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

// FuzzCanonical_matchesTheTreeImplementation: for every document Canonical
// accepts, the output is the old tree-based implementation's, byte for
// byte, so no content hash changes.
func FuzzCanonical_matchesTheTreeImplementation(f *testing.F) {
	for _, s := range []string{`{"b":0.50,"a":"<x>"}`, `{"a":{"z":[1,{"y":"\u2028","x":"\n\t\u0001"}],"b":true},"\u00e9":null}`,
		`["\"\\\/\b\f\r", -0, 1e5, {}, []]`, `{"\u0062":1,"a":2}`, `"😀\ud83d\ude00"`, `{"aa":1,"a":2,"a\u0000":3}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		got, err := Canonical(doc)
		if err != nil {
			return
		}
		want, rerr := refCanonical(doc)
		if rerr != nil {
			t.Fatalf("accepted %q, the reference refuses it: %v", doc, rerr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%q:\n got %s\nwant %s", doc, got, want)
		}
	})
}

func TestCanonical_allocatesOnlyItsAnswer(t *testing.T) {
	doc := []byte(`{"items":[` + strings.Repeat(`{"b":[1,2],"a":"x"},`, 50000) + `{}]}`)
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	out, err := Canonical(doc)
	runtime.ReadMemStats(&ms1)
	if err != nil {
		t.Fatal(err)
	}
	if got := ms1.TotalAlloc - ms0.TotalAlloc; got > uint64(3*len(doc)) {
		t.Fatalf("%d bytes allocated for a %d-byte document (answer %d bytes)", got, len(doc), len(out))
	}
	ref, _ := refCanonical(doc)
	if !bytes.Equal(out, ref) {
		t.Fatal("output differs from the reference")
	}
}
