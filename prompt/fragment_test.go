package prompt_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/promptd/promptd/internal/canonjson"
	"github.com/promptd/promptd/prompt"
)

// lib is an in-memory FragmentSource: name -> versions' pinned bodies.
type lib map[string][]string

func (l lib) source(name string, version int, env string) (*prompt.FragmentVersion, error) {
	if env != "" {
		version = len(l[name]) // every env names the latest here
	}
	vs := l[name]
	if version < 1 || version > len(vs) {
		return nil, nil
	}
	canon, err := canonjson.Canonical([]byte(vs[version-1]))
	if err != nil {
		return nil, err
	}
	return &prompt.FragmentVersion{Name: name, Version: version, ContentHash: canonjson.Hash(canon), Body: canon}, nil
}

func pinParse(t *testing.T, l lib, config string) *prompt.Config {
	t.Helper()
	pinned, err := prompt.PinConfig([]byte(config), l.source)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := prompt.ParseConfig(pinned)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPinConfig_isIdempotent_andHashCoversTheText(t *testing.T) {
	l := lib{"safety": {`{"text": "Be safe, {{who}}.", "variables": {"who": {"default": "all"}}}`, `{"text": "v2"}`}}
	config := `{"system": "{{> s}}", "fragments": {"s": {"name": "safety", "version": 1}}}`
	once, err := prompt.PinConfig([]byte(config), l.source)
	if err != nil {
		t.Fatal(err)
	}
	twice, err := prompt.PinConfig(once, l.source)
	if err != nil || string(once) != string(twice) {
		t.Fatalf("re-pinning changed it:\n%s\n%s (%v)", once, twice, err)
	}
	if !strings.Contains(string(once), `"text":"Be safe, {{who}}."`) || !strings.Contains(string(once), `"variables":{"who":{"default":"all"}}`) {
		t.Fatalf("pinned %s", once)
	}
	byEnv, _ := prompt.PinConfig([]byte(`{"system": "{{> s}}", "fragments": {"s": {"name": "safety", "env": "prod"}}}`), l.source)
	if !strings.Contains(string(byEnv), `"env":"prod"`) || !strings.Contains(string(byEnv), `"version":2`) {
		t.Fatalf("by env %s", byEnv)
	}
}

func TestRenderWith_onePass_depthAndLiterals(t *testing.T) {
	text := func(s string) *string { return &s }
	inner := prompt.FragmentRef{Name: "inner", Version: 1, ContentHash: "h", Text: text("[{{x}}]")}
	outer := prompt.FragmentRef{Name: "outer", Version: 1, ContentHash: "h", Text: text("<{{> i}}>"), Fragments: map[string]prompt.FragmentRef{"i": inner}}
	frags := map[string]prompt.FragmentRef{"o": outer, "m": {Name: "msgs", ContentHash: "h", Messages: []prompt.ChatMessage{{Role: "user", Content: "x"}}}}
	got := prompt.RenderWith("{{> o}} {{ >\to }} {{>missing}} {{> m}} {{{> o}}", map[string]string{"x": "{{> o}}"}, frags)
	if want := "<[{{> o}}]> <[{{> o}}]> {{>missing}} {{> m}} {<[{{> o}}]>"; got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	// A chain deeper than MaxFragmentDepth stops including (publish refuses it).
	chain := map[string]prompt.FragmentRef{}
	for i := 0; i < 6; i++ {
		chain = map[string]prompt.FragmentRef{"c": {Name: fmt.Sprint("c", i), ContentHash: "h", Text: text(fmt.Sprint(i, "{{> c}}")), Fragments: chain}}
	}
	if got := prompt.RenderWith("{{> c}}", nil, chain); got != "5432{{> c}}" {
		t.Fatalf("deep chain %q", got)
	}
}

func TestParseConfig_refusesIncludesOfUndeclaredAliases_loadKeepsThemLiteral(t *testing.T) {
	_, _, err := prompt.ParseConfig([]byte(`{"system": "{{> safety}}"}`))
	var ie *prompt.InvalidError
	if err == nil || !asInvalid(err, &ie) || ie.Field != "config.fragments.safety" {
		t.Fatalf("publish: %v", err)
	}
	c, _, err := prompt.Load([]byte(`{"system": "{{> safety}} {{x}}", "variables": {"x": {}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.SystemMessage(map[string]string{"x": "X"}); got != "{{> safety}} X" {
		t.Fatalf("stored before fragments: %q", got)
	}
}

func asInvalid(err error, ie **prompt.InvalidError) bool {
	e, ok := err.(*prompt.InvalidError)
	*ie = e
	return ok
}

func ExamplePinConfig() {
	src := func(name string, version int, env string) (*prompt.FragmentVersion, error) {
		body := []byte(`{"text":"Never share secrets of {{company}}.","variables":{"company":{"default":"ACME"}}}`)
		return &prompt.FragmentVersion{Name: name, Version: 3, ContentHash: canonjson.Hash(body), Body: body}, nil
	}
	pinned, _ := prompt.PinConfig([]byte(`{"system": "You help. {{> safety}}", "fragments": {"safety": {"name": "safety", "env": "prod"}}}`), src)
	c, _, _ := prompt.ParseConfig(pinned)
	vars, _ := c.Bind(nil)
	fmt.Println(c.Fragments["safety"].Version)
	fmt.Println(c.SystemMessage(vars))
	// Output:
	// 3
	// You help. Never share secrets of ACME.
}
