package api

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/promptd/promptd/promptstore"
)

// The hand-written resolve body is byte for byte what encodeJSON makes of
// promptResponse, and its ETag changes with everything but the config
// bytes (which the content hash stands for).
func TestPromptBody_equalsEncodeJSON(t *testing.T) {
	b, rep := 1234, 2
	prompts := []*promptstore.Prompt{
		{Resolution: promptstore.Resolution{Agent: "a.b-c_1", Env: "prod", Version: 7},
			Snapshot: &promptstore.Snapshot{Version: &promptstore.Version{Config: json.RawMessage(`{"system":"<&> ` + "\u2028" + ` x"}`), ContentHash: "sha256:ab"}}},
		{Resolution: promptstore.Resolution{Agent: "a", Env: "e", Version: 3, Pinned: true, RepinnedFrom: &rep,
			Release: &promptstore.Trace{ID: "rel_1", Arm: "candidate", Bucket: &b, Percent: "12.5"}},
			Snapshot: &promptstore.Snapshot{Version: &promptstore.Version{Config: json.RawMessage(`{"a":[1,2.50],"system":"s"}`), ContentHash: "sha256:cd"}}},
	}
	etags := map[string]bool{}
	for _, p := range prompts {
		got, etag, err := promptBody(nil, p)
		if err != nil {
			t.Fatal(err)
		}
		want, err := encodeJSON(promptResponse{Agent: p.Agent, Env: p.Env, Version: p.Version, ContentHash: p.Snapshot.ContentHash,
			Config: p.Snapshot.Config, Release: p.Release, Pinned: p.Pinned, RepinnedFrom: p.RepinnedFrom})
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
		etags[etag] = true
	}
	p := *prompts[1]
	p.Pinned = false
	if _, etag, _ := promptBody(nil, &p); etags[etag] || len(etags) != 2 {
		t.Fatal("the ETag does not follow the body")
	}
}
