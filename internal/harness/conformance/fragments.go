package conformance

import (
	"encoding/json"
	"fmt"

	"github.com/promptd/promptd/bundle"
	"github.com/promptd/promptd/internal/canonjson"
	"github.com/promptd/promptd/prompt"
)

// library is a set of fragments as the server would store them: each
// version's create body pinned and hashed as promptstore does it.
type library struct {
	setup  []FragmentSetup
	stored map[string][]*prompt.FragmentVersion
	envs   map[string]map[string]int
}

// newLibrary publishes defs in order (a fragment may include those before it).
func newLibrary(defs ...FragmentSetup) *library {
	l := &library{setup: defs, stored: map[string][]*prompt.FragmentVersion{}, envs: map[string]map[string]int{}}
	for _, d := range defs {
		for i, body := range d.Versions {
			var req struct {
				Fragment  map[string]json.RawMessage `json:"fragment"`
				Variables json.RawMessage            `json:"variables"`
				Fragments json.RawMessage            `json:"fragments"`
			}
			if err := json.Unmarshal(body, &req); err != nil {
				panic(err)
			}
			content := req.Fragment
			if req.Variables != nil {
				content["variables"] = req.Variables
			}
			if req.Fragments != nil {
				content["fragments"] = req.Fragments
			}
			raw, _ := json.Marshal(content)
			pinned, err := prompt.PinFragment(raw, d.Name, l.source)
			if err != nil {
				panic(fmt.Sprintf("fragment %s v%d: %v", d.Name, i+1, err))
			}
			_, canon, err := prompt.ParseFragment(pinned)
			if err != nil {
				panic(fmt.Sprintf("fragment %s v%d: %v", d.Name, i+1, err))
			}
			l.stored[d.Name] = append(l.stored[d.Name], &prompt.FragmentVersion{Name: d.Name, Version: i + 1,
				ContentHash: canonjson.Hash(canon), Body: canon})
		}
		l.envs[d.Name] = d.Envs
	}
	return l
}

func (l *library) source(name string, version int, env string) (*prompt.FragmentVersion, error) {
	if version == 0 {
		version = l.envs[name][env]
	}
	vs := l.stored[name]
	if version < 1 || version > len(vs) {
		return nil, nil
	}
	return vs[version-1], nil
}

// version is a bundle version of config with its fragments pinned.
func (l *library) version(config string) bundle.Version {
	pinned, err := prompt.PinConfig([]byte(config), l.source)
	if err != nil {
		panic(fmt.Sprintf("case config %s: %v", config, err))
	}
	return version(string(pinned))
}

// bundle is a format-2 bundle of agent "support", env "prod" at version
// 1, config pinned.
func (l *library) bundle(config string) bundle.Bundle {
	return bundle.Bundle{Format: bundle.Format, Cursor: "42", Agents: map[string]bundle.Agent{"support": {
		Versions: map[int]bundle.Version{1: l.version(config)},
		Envs:     map[string]bundle.Env{"prod": {Version: 1, Revision: 3, Revoked: []int{}}}}}}
}

func (l *library) setupOf() *Setup { return &Setup{Fragments: l.setup} }

func frag(name string, envs map[string]int, versions ...string) FragmentSetup {
	out := FragmentSetup{Name: name, Envs: envs}
	for _, v := range versions {
		out.Versions = append(out.Versions, json.RawMessage(v))
	}
	return out
}

// fragmentCases are the vectors of configs that pin fragments.
func fragmentCases() []Vector {
	lib := newLibrary(
		frag("safety", map[string]int{"prod": 2},
			`{"fragment": {"text": "Never share secrets."}}`,
			`{"fragment": {"text": "Never share secrets of {{company}}."}, "variables": {"company": {"default": "ACME"}}}`),
		frag("tone", nil, `{"fragment": {"text": "Tone: {{tone}}."}, "variables": {"tone": {"type": "enum", "values": ["calm", "firm"], "default": "calm"}}}`),
		frag("policy", nil, `{"fragment": {"text": "Policy: {{> safety}} {{> tone}} Refunds up to {{limit}} EUR."},
			"variables": {"limit": {"type": "number", "default": 50}},
			"fragments": {"safety": {"name": "safety", "version": 2}, "tone": {"name": "tone", "version": 1}}}`),
		frag("examples", nil, `{"fragment": {"messages": [{"role": "user", "content": "Where is my order?"}, {"role": "assistant", "content": "{{> tone}} Let me look, {{customer}}."}]},
			"variables": {"customer": {"required": true}}, "fragments": {"tone": {"name": "tone", "version": 1}}}`),
	)
	everywhere := lib.bundle(`{"system": "You help. {{> safety}}",
		"skills": [{"name": "refunds", "instructions": "{{> policy}}"}],
		"memory": ["Remember: {{> safety}}"],
		"messages": [{"role": "user", "content": "Rules? {{> tone}}"}],
		"fragments": {"safety": {"name": "safety", "version": 1}, "policy": {"name": "policy", "version": 1}, "tone": {"name": "tone", "version": 1}}}`)
	byEnv := lib.bundle(`{"system": "{{> safety}}", "fragments": {"safety": {"name": "safety", "env": "prod"}}}`)
	ownWins := lib.bundle(`{"system": "{{> tone}} / {{> safety}}", "variables": {"tone": {"type": "enum", "values": ["calm", "firm"], "default": "firm"}, "company": {"default": "Initech"}},
		"fragments": {"tone": {"name": "tone", "version": 1}, "safety": {"name": "safety", "version": 2}}}`)
	messages := lib.bundle(`{"system": "You help.", "model": {"name": "gpt-4o-mini"}, "messages": [{"role": "system", "content": "Examples follow."}, {"fragment": "examples"}, {"role": "user", "content": "Now: {{> safety}}"}],
		"fragments": {"examples": {"name": "examples", "version": 1}, "safety": {"name": "safety", "version": 1}}}`)
	nested := lib.bundle(`{"system": "{{> policy}}", "model": {"name": "gpt-4o"}, "fragments": {"policy": {"name": "policy", "version": 1}}}`)
	future := nested
	future.Format = bundle.Format + 1
	return []Vector{
		{Name: "fragment/text-in-system-skills-memory-messages", Description: "a text fragment included in every template; one nested (policy includes safety v2 and tone)",
			Bundle: everywhere, Request: req(), Setup: lib.setupOf()},
		{Name: "fragment/env-reference-pinned-at-publish", Description: "safety by env prod: v2 when published, with its variable's default",
			Bundle: byEnv, Request: req(), Setup: lib.setupOf()},
		{Name: "fragment/variables-given", Bundle: byEnv, Request: req(withVars(vars("company", `"Globex"`))), Setup: lib.setupOf()},
		{Name: "fragment/config-declaration-wins", Description: "the config declares tone and company: its defaults, not the fragments'",
			Bundle: ownWins, Request: req(), Setup: lib.setupOf()},
		{Name: "fragment/messages-fragment-inserted", Bundle: messages, Request: req(withVars(vars("customer", `"Ada"`))), Setup: lib.setupOf()},
		{Name: "error/fragment-required-variable-missing", Bundle: messages, Request: req(), Setup: lib.setupOf()},
		{Name: "fragment/nested-typed-variable", Description: "a number declared by a nested fragment renders as every number does",
			Bundle: nested, Request: req(withVars(vars("limit", `2.50`, "tone", `"firm"`))), Setup: lib.setupOf()},
		{Name: "error/fragment-typed-variable-wrong-type", Bundle: nested, Request: req(withVars(vars("limit", `"ten"`))), Setup: lib.setupOf()},
		{Name: "error/fragment-enum-variable-not-a-value", Bundle: nested, Request: req(withVars(vars("tone", `"loud"`))), Setup: lib.setupOf()},
		{Name: "fragment/value-holding-an-include-is-text", Description: "one pass: a variable's value {{> safety}} is not expanded",
			Bundle: byEnv, Request: req(withVars(vars("company", `"{{> safety}} {{company}}"`))), Setup: lib.setupOf()},
		{Name: "fragment/openai-format", Bundle: messages, Request: req(withVars(vars("customer", `"Ada"`)), format("openai")), Setup: lib.setupOf()},
		{Name: "fragment/openai-nested", Bundle: nested, Request: req(format("openai")), Setup: lib.setupOf()},
		{Name: "format/unknown-bundle-format-asks-server", Description: "a bundle of a format newer than the evaluator: every answer is the server's",
			Bundle: future, Request: req(), Setup: lib.setupOf()},
	}
}
