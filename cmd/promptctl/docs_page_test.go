package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// docs/cli.md is generated from promptctl's help and nothing else keeps it
// true: these tests render `promptctl help NAME` for every command and
// subcommand (every entry of docs, every command, every subcommand a doc
// lists) and check that the page's section of that name ("## release",
// "### release start") holds its synopsis and every flag the help prints
// (the flag's line and its usage) and its description, and documents no
// flag the help does not print. A failure names the section and what is missing.
//
// DOCS_PAGE_CLI_MD points the check at another copy of the page (to see
// it fail on an edited one).

// cliPage is docs/cli.md, or $DOCS_PAGE_CLI_MD.
func cliPage(t *testing.T) (path, page string) {
	t.Helper()
	path = os.Getenv("DOCS_PAGE_CLI_MD")
	if path == "" {
		path = filepath.Join("..", "..", "docs", "cli.md")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, string(b)
}

func TestDocsPage_cliMdHasEveryCommandsSynopsisAndFlags(t *testing.T) {
	path, page := cliPage(t)
	gaps, err := docsPageGaps(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gaps {
		t.Errorf("%s: %s", path, g)
	}
	if len(gaps) > 0 {
		t.Log("regenerate the section from `promptctl help NAME` (go run ./cmd/promptctl help NAME)")
	}
}

// TestDocsPage_control: the check sees a flag line removed from the page,
// a synopsis changed, a description gone stale, a section missing and a
// flag the CLI does not have.
func TestDocsPage_control(t *testing.T) {
	_, page := cliPage(t)
	if gaps, err := docsPageGaps(page); err != nil || len(gaps) > 0 {
		t.Skipf("the page itself is out of date (TestDocsPage_cliMdHasEveryCommandsSynopsisAndFlags): %v %q", err, gaps)
	}
	for _, c := range []struct {
		name, old, new, want string
	}{
		{"a flag line removed", "  -rebase\n", "", `section "apply": missing flag -rebase`},
		{"a synopsis changed", "usage: promptctl envs set AGENT ENV VERSION", "usage: promptctl envs set AGENT ENV", `section "envs set": missing the synopsis`},
		{"a description stale", "the bootstrap tokens of PROMPTD_TOKENS first", "the tokens", `section "tokens list": missing the description`},
		{"a section missing", "### tokens list\n", "### tokens lists\n", `no section "tokens list"`},
		{"a flag the CLI lacks", "  -force\n", "  -forcefully\n    \tno such flag\n  -force\n", `section "pull": documents flag -forcefully`},
	} {
		if !strings.Contains(page, c.old) {
			t.Fatalf("%s: the page has no %q to change", c.name, c.old)
		}
		gaps, err := docsPageGaps(strings.Replace(page, c.old, c.new, 1))
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, g := range gaps {
			found = found || strings.Contains(g, c.want)
		}
		if !found {
			t.Errorf("%s: want a gap containing %q, got %q", c.name, c.want, gaps)
		}
	}
}

// docsPageGaps lists what page lacks (or has wrongly) for every name
// promptctl documents.
func docsPageGaps(page string) ([]string, error) {
	sections := pageSections(page)
	var gaps []string
	top, err := renderHelp(nil)
	if err != nil {
		return nil, err
	}
	for _, l := range strings.Split(top, "\n") {
		if strings.HasPrefix(l, "usage: ") || strings.HasPrefix(l, "       promptctl ") || strings.HasPrefix(l, "  ") {
			if !strings.Contains(page, l+"\n") {
				gaps = append(gaps, fmt.Sprintf("missing the line %q of `promptctl help`", l))
			}
		}
	}
	for _, name := range documentedNames() {
		args := strings.Fields(name)
		if name == "help" {
			args = []string{"help"} // promptctl help help
		}
		out, err := renderHelp(args)
		if err != nil {
			return nil, err
		}
		syn, flags := parseHelp(out)
		body, ok := sections[name]
		if !ok {
			gaps = append(gaps, fmt.Sprintf("no section %q (a heading `## %s` or `### %s` with its help)", name, name, name))
			continue
		}
		if !strings.Contains(body, syn+"\n") {
			gaps = append(gaps, fmt.Sprintf("section %q: missing the synopsis\n%s", name, syn))
		}
		if text := strings.TrimSpace(helpDoc(name).text); !strings.Contains(body, text+"\n") {
			gaps = append(gaps, fmt.Sprintf("section %q: missing the description\n%s", name, text))
		}
		names := map[string]bool{}
		for _, f := range flags {
			names[f.name] = true
			if !strings.Contains(body, f.text) {
				gaps = append(gaps, fmt.Sprintf("section %q: missing flag -%s:\n%s", name, f.name, strings.TrimRight(f.text, "\n")))
			}
		}
		_, listed := parseHelp(body)
		for _, f := range listed {
			if !names[f.name] {
				gaps = append(gaps, fmt.Sprintf("section %q: documents flag -%s, which `promptctl help %s` does not list", name, f.name, name))
			}
		}
	}
	return gaps, nil
}

// documentedNames: every docs entry, every command, every subcommand a
// doc lists, and the one subcommand of a command whose synopsis names it
// ("sessions get", rendered from the "sessions" doc), sorted.
func documentedNames() []string {
	set := map[string]bool{}
	for n, d := range docs {
		set[n] = true
		for _, s := range d.subs {
			set[s] = true
		}
	}
	for n := range commands {
		set[n] = true
	}
	for n := range commands {
		// A command whose one form is a subcommand without a doc of its
		// own ("promptctl sessions get ID"): its help is the command's.
		if f := strings.Fields(synopsis(n)); len(f) > 2 && f[1] == n && isWord(f[2]) {
			set[n+" "+f[2]] = true
		}
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// helpDoc is the doc help.go renders for name (a subcommand without one
// of its own: its command's).
func helpDoc(name string) doc {
	d, ok := docs[name]
	if !ok {
		d = docs[strings.Fields(name)[0]]
	}
	return d
}

func isWord(s string) bool {
	for _, r := range s {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return s != ""
}

// renderHelp is `promptctl help ARGS...`'s stdout.
func renderHelp(args []string) (string, error) {
	var out, errb bytes.Buffer
	full := append([]string{"help"}, args...)
	if code := run(context.Background(), full, func(string) string { return "" }, &out, &errb); code != exitOK {
		return "", fmt.Errorf("promptctl %s: exit %d: %s", strings.Join(full, " "), code, errb.String())
	}
	return out.String(), nil
}

type helpFlag struct {
	name string
	text string // its lines as PrintDefaults prints them, each ending in \n
}

// parseHelp splits a help text (or a page section holding one) into its
// synopsis (the usage line and its continuations) and the flags listed
// under "flags:".
func parseHelp(s string) (synopsis string, flags []helpFlag) {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "usage: ") {
			syn := []string{l}
			for _, c := range lines[i+1:] {
				if !strings.HasPrefix(c, "       ") {
					break
				}
				syn = append(syn, c)
			}
			synopsis = strings.Join(syn, "\n")
			break
		}
	}
	in := false
	for _, l := range lines {
		switch {
		case l == "flags:":
			in = true
		case !in:
		case strings.HasPrefix(l, "  -"):
			name, _, _ := strings.Cut(strings.TrimPrefix(l, "  -"), " ")
			name, _, _ = strings.Cut(name, "\t")
			flags = append(flags, helpFlag{name: name, text: l + "\n"})
		case strings.HasPrefix(l, "    \t") && len(flags) > 0:
			flags[len(flags)-1].text += l + "\n"
		default:
			in = false
		}
	}
	return synopsis, flags
}

// pageSections maps each "## NAME" and "### NAME" heading of page to the
// text up to the next such heading.
func pageSections(page string) map[string]string {
	sections := map[string]string{}
	name, body := "", []string{}
	flush := func() {
		if name != "" {
			sections[name] = strings.Join(body, "\n") + "\n"
		}
	}
	for _, l := range strings.Split(page, "\n") {
		if h, ok := strings.CutPrefix(l, "## "); ok {
			flush()
			name, body = h, nil
			continue
		}
		if h, ok := strings.CutPrefix(l, "### "); ok {
			flush()
			name, body = h, nil
			continue
		}
		body = append(body, l)
	}
	flush()
	return sections
}
