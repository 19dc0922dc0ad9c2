package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/promptd/promptd/prompt"
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
			Release: &prompt.Trace{ID: "rel_1", Arm: "candidate", Bucket: &b, Percent: "12.5"}},
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

// The answer cache renders a body once per (snapshot, env, pin), never
// caches an answer that names a release bucket or a re-pin, and starts
// over when it holds more than its bound.
func TestAnswerCache_rendersOncePerSnapshotEnvAndPin(t *testing.T) {
	snap := &promptstore.Snapshot{Version: &promptstore.Version{Agent: "a", Version: 3, Config: json.RawMessage(`{"system":"s"}`), ContentHash: "sha256:ab"}}
	other := &promptstore.Snapshot{Version: &promptstore.Version{Agent: "a", Version: 3, Config: json.RawMessage(`{"system":"s"}`), ContentHash: "sha256:ab"}}
	mk := func(s *promptstore.Snapshot, env string, pinned bool) *promptstore.Prompt {
		return &promptstore.Prompt{Resolution: promptstore.Resolution{Agent: "a", Env: env, Version: 3, Pinned: pinned}, Snapshot: s}
	}
	c := newAnswerCache(1 << 20)
	var scratch []byte
	get := func(p *promptstore.Prompt) *promptAnswer {
		t.Helper()
		a, err := c.get(p, &scratch)
		if err != nil {
			t.Fatal(err)
		}
		body, etag, _ := promptBody(nil, p)
		if !bytes.Equal(a.body, body) || a.etag[0] != etag || a.length[0] != strconv.Itoa(len(body)) {
			t.Fatalf("answer %s %v %v, want %s %s", a.body, a.etag, a.length, body, etag)
		}
		return a
	}
	first := get(mk(snap, "prod", false))
	if get(mk(snap, "prod", false)) != first {
		t.Fatal("the same answer was rendered twice")
	}
	for _, p := range []*promptstore.Prompt{mk(snap, "dev", false), mk(snap, "prod", true), mk(other, "prod", false)} {
		if get(p) == first {
			t.Fatalf("%+v shares the answer of another env, pin or snapshot", p.Resolution)
		}
	}
	b, from := 12, 2
	withRelease := mk(snap, "prod", false)
	withRelease.Release = &prompt.Trace{ID: "rel_1", Arm: "baseline", Bucket: &b, Percent: "10"}
	repinned := mk(snap, "prod", true)
	repinned.RepinnedFrom = &from
	for _, p := range []*promptstore.Prompt{withRelease, repinned} {
		n := len(c.m)
		if get(p); len(c.m) != n {
			t.Fatalf("cached an answer with release %v, repinned_from %v", p.Release, p.RepinnedFrom)
		}
	}
	small := newAnswerCache(20 * len(first.body))
	for i := 0; i < 50; i++ {
		if _, err := small.get(mk(snap, fmt.Sprint("e", i), false), &scratch); err != nil {
			t.Fatal(err)
		}
		if small.bytes > small.maxBytes || len(small.m) == 0 {
			t.Fatalf("bounded cache holds %d answers, %d bytes", len(small.m), small.bytes)
		}
	}
}
