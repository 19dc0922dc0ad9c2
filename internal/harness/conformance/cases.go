package conformance

import (
	"encoding/json"
	"fmt"

	"github.com/promptd/promptd/bundle"
	"github.com/promptd/promptd/prompt"
)

// version is a bundle version of a config written as JSON: its
// canonical form and content hash.
func version(config string) bundle.Version {
	_, canon, err := prompt.Load([]byte(config))
	if err != nil {
		panic(fmt.Sprintf("case config %s: %v", config, err))
	}
	return bundle.Version{ContentHash: prompt.ContentHash(canon), Config: canon}
}

// one is a bundle of agent "support" with env "prod" at pointer, the
// given versions, revocations and release.
func one(versions map[int]string, pointer int, revoked []int, rel *bundle.Release) bundle.Bundle {
	vs := map[int]bundle.Version{}
	for n, c := range versions {
		vs[n] = version(c)
	}
	if revoked == nil {
		revoked = []int{}
	}
	return bundle.Bundle{Cursor: "42", Agents: map[string]bundle.Agent{"support": {Versions: vs,
		Envs: map[string]bundle.Env{"prod": {Version: pointer, Revision: 3, Revoked: revoked, Release: rel}}}}}
}

// newRelease is a release of baseline 1 and candidate 2 at bp basis points.
func newRelease(id string, bp int, state, stickiness string, o *bundle.Overrides) *bundle.Release {
	if o == nil {
		o = &bundle.Overrides{Candidate: []string{}, Baseline: []string{}}
	}
	return &bundle.Release{ID: id, State: state, Revision: 2, BaselineVersion: 1, CandidateVersion: 2, BasisPoints: bp,
		Stickiness: stickiness, Overrides: o}
}

const (
	v1 = `{"system": "You are the baseline."}`
	v2 = `{"system": "You are the candidate."}`
)

var twoVersions = map[int]string{1: v1, 2: v2}

func vars(kv ...string) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = json.RawMessage(kv[i+1])
	}
	return m
}

func req(mod ...func(*Request)) Request {
	r := Request{Agent: "support", Env: "prod"}
	for _, m := range mod {
		m(&r)
	}
	return r
}

func user(u string) func(*Request)   { return func(r *Request) { r.UserID = u } }
func format(f string) func(*Request) { return func(r *Request) { r.Format = f } }
func withVars(v map[string]json.RawMessage) func(*Request) {
	return func(r *Request) { r.Variables = v }
}
func pinned(session string, v int) func(*Request) {
	return func(r *Request) { r.SessionID, r.PinnedVersion = session, v }
}

func hashes(releaseID string, keys ...string) []string {
	out := []string{}
	for _, k := range keys {
		out = append(out, prompt.OverrideID(releaseID, k))
	}
	return out
}

// turns is a history with a tool-calling exchange: user, assistant with
// tool_calls, two tool answers, user.
func turns() []prompt.Message {
	return []prompt.Message{
		{Role: "user", Content: json.RawMessage(`"Where are orders 1 and 2?"`)},
		{Role: "assistant", Content: json.RawMessage(`null`), ToolCalls: json.RawMessage(`[{"id":"call_1","type":"function","function":{"name":"lookup_order","arguments":"{\"id\":\"1\"}"}},{"id":"call_2","type":"function","function":{"name":"lookup_order","arguments":"{\"id\":\"2\"}"}}]`)},
		{Role: "tool", ToolCallID: "call_1", Content: json.RawMessage(`"shipped"`)},
		{Role: "tool", ToolCallID: "call_2", Content: json.RawMessage(`"packed"`)},
		{Role: "user", Name: "ada", Content: json.RawMessage(`"Thanks <3 & bye"`)},
	}
}

// full is a config with every part: tools, skills, memory, chat
// messages, model keys besides name, variables.
const full = `{"system": "You are {{persona}} for {{company}}.",
 "tools": [{"type": "function", "function": {"name": "lookup_order", "description": "Find an order", "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}}],
 "skills": [{"name": "refunds", "instructions": "Refunds within {{refund_days}} days."}, {"name": "tone", "instructions": "Be brief."}],
 "memory": ["Customer prefers email.", "Plan: {{plan}}"],
 "messages": [{"role": "user", "content": "Example: where is order A-1?"}, {"role": "assistant", "content": "Order A-1 shipped, {{persona}} here."}],
 "model": {"name": "gpt-4o", "temperature": 0.2, "max_completion_tokens": 256, "top_p": 1.0},
 "variables": {"persona": {"required": true}, "company": {"default": "ACME"}, "refund_days": {"default": "30"}, "plan": {"default": "free"}}}`

// typedVars is a config with one variable of each type, rendered into
// the system message, a memory item and a chat message.
const typedVars = `{"system": "seats={{seats}} trial={{trial}} plan={{plan}} regions={{regions}} name={{name}}",
 "memory": ["discount {{discount}}"],
 "messages": [{"role": "user", "content": "{{regions}} / {{plan}}"}],
 "variables": {"seats": {"type": "number", "required": true, "description": "licensed seats"},
  "discount": {"type": "number", "default": 0.25},
  "trial": {"type": "boolean", "default": false},
  "plan": {"type": "enum", "values": ["free", "pro", "enterprise"], "default": "free"},
  "regions": {"type": "string_list", "default": ["eu"]},
  "name": {"type": "string", "default": "Ada"}}}`

// template is a one-version bundle whose system is tmpl, with the
// variables x, other and name declared (x and name without default).
func template(tmpl string) bundle.Bundle {
	c, _ := json.Marshal(map[string]any{"system": tmpl, "variables": map[string]any{
		"x": map[string]any{}, "name": map[string]any{}, "other": map[string]any{"default": "OTHER"}}})
	return one(map[int]string{1: string(c)}, 1, nil, nil)
}

// Cases are the vectors without their answers.
func Cases() []Vector {
	rel := func(bp int) *bundle.Release { return newRelease("rel_1", bp, "running", "user", nil) }
	ov := func(candidate, baseline []string) *bundle.Overrides {
		return &bundle.Overrides{Candidate: candidate, Baseline: baseline}
	}
	session := func(s string, v int, u string) func(*Request) {
		return func(r *Request) { r.SessionID, r.PinnedVersion, r.UserID = s, v, u }
	}
	hist := func(max int, h []prompt.Message) func(*Request) {
		return func(r *Request) { r.History, r.MaxHistoryTurns = h, max }
	}
	fullVars := withVars(vars("persona", `"a support agent"`))
	typedBundle := one(map[int]string{1: typedVars}, 1, nil, nil)
	vs := []Vector{
		// The env pointer.
		{Name: "pointer/plain", Bundle: one(twoVersions, 2, nil, nil), Request: req()},
		{Name: "pointer/with-user", Bundle: one(twoVersions, 1, nil, nil), Request: req(user("user-1"))},
		{Name: "error/unknown-agent", Bundle: one(twoVersions, 1, nil, nil), Request: Request{Agent: "nobody", Env: "prod"}},
		{Name: "error/unknown-env", Bundle: one(twoVersions, 1, nil, nil), Request: Request{Agent: "support", Env: "staging"}},
		{Name: "error/invalid-user-id", Bundle: one(twoVersions, 1, nil, nil), Request: req(user("a\u0001b"))},

		// A release by user: rel_1:user-1 is bucket 771, user-2 8669, alice@example.com 34.
		{Name: "release/user-1-candidate", Bundle: one(twoVersions, 1, nil, rel(1000)), Request: req(user("user-1"))},
		{Name: "release/user-2-baseline", Bundle: one(twoVersions, 1, nil, rel(1000)), Request: req(user("user-2"))},
		{Name: "release/alice-candidate", Bundle: one(twoVersions, 1, nil, rel(1000)), Request: req(user("alice@example.com"))},
		{Name: "release/no-key-baseline", Description: "neither user nor session: the baseline, bucket null",
			Bundle: one(twoVersions, 1, nil, rel(5000)), Request: req()},
		{Name: "release/percent-0", Bundle: one(twoVersions, 1, nil, rel(0)), Request: req(user("alice@example.com"))},
		{Name: "release/percent-100", Bundle: one(twoVersions, 1, nil, rel(10000)), Request: req(user("user-2"))},
		{Name: "release/bucket-equals-basis-points", Description: "bucket 771 at 771 basis points: baseline (candidate iff bucket < basis points)",
			Bundle: one(twoVersions, 1, nil, rel(771)), Request: req(user("user-1"))},
		{Name: "release/bucket-below-basis-points", Bundle: one(twoVersions, 1, nil, rel(772)), Request: req(user("user-1"))},
		{Name: "release/decimal-percent", Description: "1250 basis points: percent 12.5",
			Bundle: one(twoVersions, 1, nil, rel(1250)), Request: req(user("user-1"))},
		{Name: "release/paused-keeps-arms", Bundle: one(twoVersions, 1, nil, newRelease("rel_1", 1000, "paused", "user", nil)), Request: req(user("user-1"))},
		{Name: "release/session-stickiness-without-session", Description: "session stickiness and no session: no key, the baseline",
			Bundle: one(twoVersions, 1, nil, newRelease("rel_7f3a", 10000, "running", "session", nil)), Request: req(user("user-1"))},
		{Name: "release/session-stickiness-pinned", Description: "rel_7f3a:session-42 is bucket 6397 whatever the user",
			Bundle: one(twoVersions, 1, nil, newRelease("rel_7f3a", 7000, "running", "session", nil)), Request: req(session("session-42", 2, "user-1"))},

		// Overrides: hashed "<release_id>:<key>", ahead of bucketing.
		{Name: "override/candidate-at-0", Bundle: one(twoVersions, 1, nil, newRelease("rel_1", 0, "running", "user", ov(hashes("rel_1", "user-2"), []string{}))),
			Request: req(user("user-2")), Setup: overrides(OverrideIDs{Candidate: []string{"user-2"}})},
		{Name: "override/baseline-at-100", Bundle: one(twoVersions, 1, nil, newRelease("rel_1", 10000, "running", "user", ov([]string{}, hashes("rel_1", "user-1")))),
			Request: req(user("user-1")), Setup: overrides(OverrideIDs{Baseline: []string{"user-1"}})},
		{Name: "override/others-bucket", Bundle: one(twoVersions, 1, nil, newRelease("rel_1", 1000, "running", "user", ov(hashes("rel_1", "user-2"), hashes("rel_1", "bob")))),
			Request: req(user("user-1")), Setup: overrides(OverrideIDs{Candidate: []string{"user-2"}, Baseline: []string{"bob"}})},
		{Name: "override/revoked-candidate", Description: "an override onto a revoked candidate serves the baseline",
			Bundle:  one(twoVersions, 1, []int{2}, newRelease("rel_1", 0, "running", "user", ov(hashes("rel_1", "user-2"), []string{}))),
			Request: req(user("user-2")), Setup: overrides(OverrideIDs{Candidate: []string{"user-2"}})},

		// Revocations.
		{Name: "revoked/candidate-serves-baseline", Bundle: one(twoVersions, 1, []int{2}, rel(10000)), Request: req(user("user-2"))},

		// Session pins (the caller passes the pin from the session).
		{Name: "pin/served-without-release", Bundle: one(twoVersions, 2, nil, nil), Request: req(session("s-1", 1, "user-1"))},
		{Name: "pin/baseline-during-release", Bundle: one(twoVersions, 1, nil, rel(10000)), Request: req(session("s-1", 1, "user-1"))},
		{Name: "pin/candidate-during-release", Bundle: one(twoVersions, 1, nil, rel(0)), Request: req(session("s-1", 2, "user-1"))},
		{Name: "pin/revoked-asks-server", Description: "a revoked pin is re-pinned by the server (a write)",
			Bundle: one(map[int]string{1: v1, 2: v2, 3: `{"system": "three"}`}, 3, []int{2}, nil), Request: req(session("s-1", 2, "user-1"))},
		{Name: "pin/unknown-asks-server", Description: "a session whose pin the caller does not know",
			Bundle: one(twoVersions, 1, nil, nil), Request: req(func(r *Request) { r.SessionID = "s-1" })},
		{Name: "pin/version-not-in-bundle-asks-server", Bundle: one(map[int]string{2: v2}, 2, nil, nil), Request: req(session("s-1", 1, "user-1"))},

		// Templates.
		{Name: "template/spaces-and-tabs", Bundle: template("a {{x}} b {{ x }} c {{\tname\t}}"), Request: req(withVars(vars("x", `"X"`, "name", `"N"`)))},
		{Name: "template/empty-braces-literal", Bundle: template("{{ }} and {{}} stay, {{x}} goes"), Request: req(withVars(vars("x", `"X"`, "name", `"N"`)))},
		{Name: "template/digit-first-literal", Bundle: template("{{1a}} {{ 1a }} {{x}}"), Request: req(withVars(vars("x", `"X"`, "name", `"N"`)))},
		{Name: "template/triple-braces", Bundle: template("{{{x}}} and {{{{name}}}}"), Request: req(withVars(vars("x", `"X"`, "name", `"N"`)))},
		{Name: "template/unclosed", Bundle: template("{{x} {{x }} } {{x"), Request: req(withVars(vars("x", `"X"`, "name", `"N"`)))},
		{Name: "template/two-names-literal", Bundle: template("{{ x name }} {{x}}"), Request: req(withVars(vars("x", `"X"`, "name", `"N"`)))},
		{Name: "template/unicode", Bundle: template("こんにちは {{name}} 🎉 — {{x}}\u2028end"), Request: req(withVars(vars("x", `"é\u2029"`, "name", `"Zoë ✓"`)))},
		{Name: "template/value-not-expanded-again", Description: "one pass: a value that looks like a placeholder is text",
			Bundle: template("{{x}} / {{other}}"), Request: req(withVars(vars("x", `"{{other}}"`, "name", `"N"`)))},
		{Name: "template/html-and-escapes", Bundle: template("<b>{{x}}</b> & \"q\" \\ \t\n"), Request: req(withVars(vars("x", `"<&>"`, "name", `"\u0001"`)))},
		{Name: "variables/defaults-and-extras", Description: "a default fills a missing value, an explicit value wins, extras are ignored",
			Bundle: one(map[int]string{1: full}, 1, nil, nil), Request: req(withVars(vars("persona", `"Ada"`, "plan", `"pro"`, "extra", `42`)))},
		{Name: "variables/null-takes-default", Bundle: one(map[int]string{1: full}, 1, nil, nil), Request: req(withVars(vars("persona", `"Ada"`, "company", `null`)))},
		{Name: "error/missing-variable", Bundle: one(map[int]string{1: full}, 1, nil, nil), Request: req(withVars(vars("company", `"X"`)))},
		{Name: "error/invalid-variable-number", Bundle: one(map[int]string{1: full}, 1, nil, nil), Request: req(withVars(vars("persona", `42`)))},
		{Name: "error/invalid-variable-object", Bundle: one(map[int]string{1: full}, 1, nil, nil), Request: req(withVars(vars("persona", `"a"`, "plan", `{"a":1}`)))},

		// Typed variables: each type's rendering, defaults of each type,
		// and each wrong value a 422 naming its variable.
		{Name: "variables/typed-defaults", Description: "a number, boolean, enum, list and string default, rendered",
			Bundle: typedBundle, Request: req(withVars(vars("seats", `12`)))},
		{Name: "variables/typed-values", Description: "numbers in ECMAScript's Number::toString form (1.50 -> 1.5, 1e3 -> 1000), lists joined by \", \"",
			Bundle: typedBundle, Request: req(withVars(vars("seats", `1e3`, "discount", `1.50`, "trial", `true`, "plan", `"enterprise"`,
				"regions", `["eu", "us-east", "ap"]`, "name", `"Zoë"`)))},
		{Name: "variables/typed-number-forms", Description: "-0 -> 0, 0.0000001 -> 1e-7, 1e21 -> 1e+21",
			Bundle: typedBundle, Request: req(withVars(vars("seats", `-0`, "discount", `0.0000001`, "trial", `false`)))},
		{Name: "variables/typed-big-number", Description: "a number is a double: 12345678901234567890 -> 12345678901234567000, 1e21 -> 1e+21",
			Bundle: typedBundle, Request: req(withVars(vars("seats", `12345678901234567890`, "discount", `1e21`)))},
		{Name: "variables/typed-empty-list-and-null", Description: "an empty list renders empty; null takes the default",
			Bundle: typedBundle, Request: req(withVars(vars("seats", `1`, "regions", `[]`, "plan", `null`)))},
		{Name: "error/typed-missing-required", Bundle: typedBundle, Request: req(withVars(vars("plan", `"pro"`)))},
		{Name: "error/typed-number-as-string", Bundle: typedBundle, Request: req(withVars(vars("seats", `"12"`)))},
		{Name: "error/typed-number-as-boolean", Bundle: typedBundle, Request: req(withVars(vars("seats", `true`)))},
		{Name: "error/typed-number-out-of-range", Bundle: typedBundle, Request: req(withVars(vars("seats", `1e400`)))},
		{Name: "error/typed-boolean-as-string", Bundle: typedBundle, Request: req(withVars(vars("seats", `1`, "trial", `"true"`)))},
		{Name: "error/typed-enum-unknown-value", Bundle: typedBundle, Request: req(withVars(vars("seats", `1`, "plan", `"gold"`)))},
		{Name: "error/typed-list-as-string", Bundle: typedBundle, Request: req(withVars(vars("seats", `1`, "regions", `"eu, us"`)))},
		{Name: "error/typed-list-with-null", Bundle: typedBundle, Request: req(withVars(vars("seats", `1`, "regions", `["eu", null]`)))},
		{Name: "error/typed-list-with-number", Bundle: typedBundle, Request: req(withVars(vars("seats", `1`, "regions", `["eu", 1]`)))},
		{Name: "error/typed-string-as-list", Bundle: typedBundle, Request: req(withVars(vars("seats", `1`, "name", `["Ada"]`)))},

		// Assembly order and history.
		{Name: "assemble/skills-memory-messages-order", Bundle: one(map[int]string{1: full}, 1, nil, nil), Request: req(fullVars)},
		{Name: "history/all-turns-after-config-messages", Bundle: one(map[int]string{1: full}, 1, nil, nil),
			Request: req(fullVars, session("s-1", 1, "user-1"), hist(0, turns()))},
		{Name: "history/cut-drops-orphan-tool-turns", Description: "the newest 3 turns start with tool turns whose assistant turn was cut: they go too",
			Bundle: one(map[int]string{1: full}, 1, nil, nil), Request: req(fullVars, session("s-1", 1, "user-1"), hist(3, turns()))},
		{Name: "history/cut-keeps-tool-calls-with-answers", Bundle: one(map[int]string{1: full}, 1, nil, nil),
			Request: req(fullVars, session("s-1", 1, "user-1"), hist(4, turns()))},
		{Name: "history/max-1-keeps-config-messages", Bundle: one(map[int]string{1: full}, 1, nil, nil),
			Request: req(fullVars, session("s-1", 1, "user-1"), hist(1, turns()))},
		{Name: "error/max-history-turns-out-of-range", Bundle: one(map[int]string{1: full}, 1, nil, nil),
			Request: req(fullVars, session("s-1", 1, "user-1"), hist(10001, turns()))},

		// Formats.
		{Name: "format/openai-with-tools-and-model-keys", Bundle: one(map[int]string{1: full}, 1, nil, nil), Request: req(fullVars, format("openai"))},
		{Name: "format/openai-with-history", Bundle: one(map[int]string{1: full}, 1, nil, nil),
			Request: req(fullVars, format("openai"), session("s-1", 1, "user-1"), hist(0, turns()))},
		{Name: "format/openai-without-tools", Bundle: one(map[int]string{1: `{"system": "s", "model": {"name": "gpt-4o-mini"}}`}, 1, nil, nil), Request: req(format("openai"))},
		{Name: "format/openai-release-candidate", Bundle: one(map[int]string{1: `{"system": "b", "model": {"name": "m1"}}`, 2: `{"system": "c", "model": {"name": "m2", "seed": 7}}`}, 1, nil, rel(1000)),
			Request: req(user("user-1"), format("openai"))},
		{Name: "format/openai-extra-keys-at-the-top-level", Description: "model.extra holds a provider's own keys: the openai body has them beside the known ones, sorted together",
			Bundle: one(map[int]string{1: `{"system": "s", "model": {"name": "m", "temperature": 0.5, "extra": {"top_k": 40, "a_first": true}}}`}, 1, nil, nil), Request: req(format("openai"))},
		{Name: "error/openai-extra-shadows-a-model-key", Description: "a stored config whose extra repeats a key set beside it: invalid_config naming the extra key",
			Bundle: one(map[int]string{1: `{"system": "s", "model": {"name": "m", "seed": 1, "extra": {"seed": 2}}}`}, 1, nil, nil), Request: req(format("openai"))},
		{Name: "error/openai-extra-sets-a-reserved-key", Bundle: one(map[int]string{1: `{"system": "s", "model": {"name": "m", "extra": {"stream": true}}}`}, 1, nil, nil), Request: req(format("openai"))},
		{Name: "error/openai-extra-not-an-object", Bundle: one(map[int]string{1: `{"system": "s", "model": {"name": "m", "extra": [1]}}`}, 1, nil, nil), Request: req(format("openai"))},
		{Name: "format/plain-explicit", Bundle: one(map[int]string{1: full}, 1, nil, nil), Request: req(fullVars, format("plain"))},
		{Name: "format/plain-without-model", Bundle: one(twoVersions, 1, nil, nil), Request: req()},
		{Name: "error/openai-without-model", Bundle: one(twoVersions, 1, nil, nil), Request: req(format("openai"))},
		{Name: "error/openai-model-without-name", Bundle: one(map[int]string{1: `{"system": "s", "model": {"temperature": 1}}`}, 1, nil, nil), Request: req(format("openai"))},
		{Name: "error/unknown-format", Bundle: one(twoVersions, 1, nil, nil), Request: req(format("xml"))},
	}
	return append(vs, fragmentCases()...)
}

func overrides(ids OverrideIDs) *Setup {
	return &Setup{Overrides: map[string]map[string]OverrideIDs{"support": {"prod": ids}}}
}
