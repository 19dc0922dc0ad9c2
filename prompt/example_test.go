package prompt_test

import (
	"encoding/json"
	"fmt"

	"github.com/promptd/promptd/prompt"
)

// A config is validated, bound and assembled in process, exactly as the
// server assembles it, and put into the OpenAI request shape.
func Example() {
	cfg, _, err := prompt.ParseConfig([]byte(`{"system": "You are {{persona}}.",
		"messages": [{"role": "user", "content": "Hi, I am {{name}}."}],
		"model": {"name": "gpt-4o", "temperature": 0.2},
		"variables": {"persona": {"default": "a helpful agent"}, "name": {"required": true}}}`))
	if err != nil {
		panic(err)
	}
	vars, err := cfg.Bind(map[string]json.RawMessage{"name": json.RawMessage(`"Ada"`)})
	if err != nil {
		panic(err)
	}
	body, _ := prompt.Assemble(cfg, 1, "sha256:...", vars, nil).Body(prompt.FormatOpenAI)
	fmt.Print(string(body))

	// Bucketing: a pure function of the release id and the caller.
	rel := &prompt.Release{ID: "rel_1", BaselineVersion: 1, CandidateVersion: 2, BasisPoints: 1000}
	version, trace := prompt.Decide(rel, nil, "user-1", "")
	fmt.Println(version, trace.Arm, *trace.Bucket, trace.Reason)
	// Output:
	// {"model":"gpt-4o","temperature":0.2,"messages":[{"role":"system","content":"You are a helpful agent."},{"role":"user","content":"Hi, I am Ada."}]}
	// 2 candidate 771 bucket
}
