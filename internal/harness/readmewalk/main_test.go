package main

import (
	"strings"
	"testing"
)

// TestMatch_placeholdersBlanksAndEllipsis: the placeholder rule of the docs' walkthroughs.
func TestMatch_placeholdersBlanksAndEllipsis(t *testing.T) {
	lines := func(s string) []string { return strings.Split(s, "\n") }
	cases := []struct {
		expected, actual string
		ok               bool
	}{
		{"a  b   c", "a b c   ", true},
		{"release <release id>: 10% -> 50%", "release rel_034c6d: 10% -> 50%", true},
		{"at <time> by admin", "at 2026-12-01 18:41:46Z by admin", true},
		{"at <time> by admin", "at 2026-12-01 18:41:46Z by root", false},
		{"one\n...\nfour", "one\ntwo\nthree\nfour", true},
		{"one\n...\nfour", "one\nfour", true},
		{"one\n...\nfour", "one\nfive", false},
		{"one", "one\ntwo", false},
		{"one\ntwo", "one", false},
		{"a.b*c", "aXb*c", false}, // literal text is literal
	}
	for _, c := range cases {
		if why := match(lines(c.expected), lines(c.actual)); (why == "") != c.ok {
			t.Errorf("match(%q, %q) = %q, want ok=%v", c.expected, c.actual, why, c.ok)
		}
	}
}

// TestExtract_needsAnOutputBlockAfterEachWalkthrough.
func TestExtract_needsAnOutputBlockAfterEachWalkthrough(t *testing.T) {
	src := "x\n<!-- walkthrough -->\n```sh\necho hi\n```\n\n```text\nhi\n```\n"
	bs, err := extract("R.md", src)
	if err != nil || len(bs) != 1 || bs[0].file != "R.md" || bs[0].script != "echo hi\n" || strings.Join(bs[0].expected, "|") != "hi" {
		t.Fatalf("extract: %+v, %v", bs, err)
	}
	if _, err := extract("R.md", "<!-- walkthrough -->\n```sh\necho hi\n```\n"); err == nil || !strings.Contains(err.Error(), "R.md:2") {
		t.Fatalf("a block without its output: %v", err)
	}
}
