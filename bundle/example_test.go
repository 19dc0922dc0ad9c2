package bundle_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/promptd/promptd/bundle"
	"github.com/promptd/promptd/prompt"
)

// A bundle (as GET /v1/bundle answers it) is evaluated locally: the
// release buckets user-1 into the candidate, and the assembled answer is
// the server's.
func Example() {
	config := []byte(`{"model":{"name":"gpt-4o"},"system":"You are the candidate."}`)
	_, canon, _ := prompt.Load(config)
	b := &bundle.Bundle{Cursor: "7", Agents: map[string]bundle.Agent{"support": {
		Versions: map[int]bundle.Version{
			1: {ContentHash: prompt.ContentHash([]byte(`{"system":"You are the baseline."}`)), Config: json.RawMessage(`{"system":"You are the baseline."}`)},
			2: {ContentHash: prompt.ContentHash(canon), Config: canon}},
		Envs: map[string]bundle.Env{"prod": {Version: 1, Revision: 2, Revoked: []int{},
			Release: &bundle.Release{ID: "rel_1", State: "running", BaselineVersion: 1, CandidateVersion: 2, BasisPoints: 1000, Stickiness: "user"}}},
	}}}
	e, err := bundle.New(b)
	if err != nil {
		panic(err)
	}
	body, res, err := e.Assemble(bundle.Request{Agent: "support", Env: "prod", UserID: "user-1", Format: prompt.FormatOpenAI})
	if err != nil {
		panic(err)
	}
	fmt.Print(string(body))
	fmt.Println(res.Release.ReleaseHeader())

	// A session whose pin the caller does not know is the server's.
	_, err = e.Resolve(bundle.Request{Agent: "support", Env: "prod", SessionID: "s-1"})
	fmt.Println(errors.Is(err, bundle.ErrAskServer))
	// Output:
	// {"model":"gpt-4o","messages":[{"role":"system","content":"You are the candidate."}]}
	// id="rel_1", arm=candidate, bucket=771, reason=bucket
	// true
}
