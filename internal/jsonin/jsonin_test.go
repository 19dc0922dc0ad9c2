package jsonin

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestCheck_acceptsStrictJSON(t *testing.T) {
	for _, doc := range []string{
		`{}`, `[]`, `0`, `-0.5e+10`, `"x"`, `true`, `null`,
		` {"a": [1, 2, {"b": "c"}], "d": "é\u00e9\ud83d\ude00😀", "e": {}} `,
		`{"a":1,"A":2}`, `"\"\\\/\b\f\n\r\t"`,
		`{"k` + strings.Repeat("x", 10) + `": [[[[[]]]]]}`,
	} {
		if err := Check([]byte(doc), 0); err != nil {
			t.Errorf("Check(%s) = %v, want nil", doc, err)
		}
		if !json.Valid([]byte(doc)) {
			t.Errorf("control: encoding/json refuses %s", doc)
		}
	}
}

func TestCheck_refusesWithPath(t *testing.T) {
	for _, tc := range []struct{ doc, path, reason string }{
		{`{"turns":[{"content":"ok"},{"content":"a` + "\xff" + `b"}]}`, "turns[1].content", "invalid UTF-8"},
		{`{"metadata":{"x":"\ud800"}}`, "metadata.x", "lone high surrogate"},
		{`{"metadata":{"x":"\udc00"}}`, "metadata.x", "lone low surrogate"},
		{`{"a":"\ud800\u0041"}`, "a", "not followed by a low surrogate"},
		{`{"a":1,"b":{"c":1,"c":2}}`, "b", `duplicate key "c"`},
		{`{"a":1,"\u0061":2}`, "", `duplicate key "a"`},
		{`{"a":"x` + "\x01" + `"}`, "a", "control character"},
		{`{"a":[1,2,}`, "a[2]", "invalid character"},
		{`{"a":01}`, "a", "expected ','"},
		{`{"a":1} x`, "", "unexpected data"},
		{`{"a":`, "a", "unexpected end"},
		{``, "", "empty"},
		{`{"a":tru}`, "a", "invalid literal"},
		{`{"a":"\x"}`, "a", "invalid escape"},
	} {
		err := Check([]byte(tc.doc), 0)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Check(%q) = %v, want an *Error", tc.doc, err)
			continue
		}
		if e.Path != tc.path || !strings.Contains(e.Reason, tc.reason) {
			t.Errorf("Check(%q) = path %q reason %q; want path %q, reason containing %q", tc.doc, e.Path, e.Reason, tc.path, tc.reason)
		}
	}
}

func TestCheck_depthLimit(t *testing.T) {
	ok := strings.Repeat("[", 64) + strings.Repeat("]", 64)
	if err := Check([]byte(ok), 64); err != nil {
		t.Fatalf("64 levels: %v", err)
	}
	deep := strings.Repeat("[", 65) + strings.Repeat("]", 65)
	if err := Check([]byte(deep), 64); err == nil || !strings.Contains(err.Error(), "deeper than 64") {
		t.Fatalf("65 levels: %v, want refused", err)
	}
	// 3 MiB of '[': refused at the 65th byte, without reading the rest.
	huge := []byte(strings.Repeat("[", 3<<20))
	err := Check(huge, 64)
	var e *Error
	if !errors.As(err, &e) || e.Offset != 64 {
		t.Fatalf("3 MiB of '[': %v, want refused at offset 64", err)
	}
}

func TestCheck_allocatesLittleForHostileInput(t *testing.T) {
	doc := []byte(`{"a":[` + strings.Repeat(`1,`, 1<<20) + `1]}`)
	allocs := testing.AllocsPerRun(3, func() {
		if err := Check(doc, 0); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 10 {
		t.Fatalf("%v allocations for a 2 MiB array, want a handful", allocs)
	}
}

// FuzzCheck: whatever Check accepts, encoding/json accepts too and decodes
// without replacing anything (re-encoding the decoded strings gives valid
// UTF-8); whatever encoding/json refuses, Check refuses.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,"x",{"b":null}]}`, `"\ud83d\ude00"`, `[1e5,-0.1]`, "\"\xff\"", `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		err := Check(doc, 16)
		valid := json.Valid(doc)
		if err == nil && !valid {
			t.Fatalf("Check accepts what encoding/json refuses: %q", doc)
		}
		if err == nil {
			var v any
			dec := json.NewDecoder(bytes.NewReader(doc))
			dec.UseNumber()
			if uerr := dec.Decode(&v); uerr != nil {
				t.Fatalf("accepted but does not decode: %q: %v", doc, uerr)
			}
			if strings.ContainsRune(string(mustMarshal(t, v)), '\uFFFD') && !strings.Contains(string(doc), "\uFFFD") && !strings.Contains(strings.ToLower(string(doc)), `\ufffd`) {
				t.Fatalf("accepted a document encoding/json decodes with a replacement character: %q", doc)
			}
		}
	})
}

func mustMarshal(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDepthGuard_failsAtTheByteThatGoesTooDeep(t *testing.T) {
	g := &DepthGuard{R: strings.NewReader(strings.Repeat("[", 3<<20)), Max: 64}
	n, err := io.Copy(io.Discard, g)
	if !errors.Is(err, ErrTooDeep) || n > 64*1024 {
		t.Fatalf("read %d bytes, err %v; want refused within the first buffer", n, err)
	}
	// Brackets inside strings, escaped quotes: not nesting.
	doc := `{"a":"` + strings.Repeat("[", 100) + `\"[[["}`
	if _, err := io.Copy(io.Discard, &DepthGuard{R: strings.NewReader(doc), Max: 2}); err != nil {
		t.Fatalf("brackets in a string: %v", err)
	}
}
