package client_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promptd/promptd/api/client"
	"github.com/promptd/promptd/bundle"
)

// counting is a RoundTripper that counts requests by path.
type counting struct {
	mu  sync.Mutex
	n   map[string]int
	all atomic.Int64
}

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[r.URL.Path]++
	c.mu.Unlock()
	c.all.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func (c *counting) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

// localServer is a promptd with agent "loc" in env prod: a template
// config (variables, skills, memory, chat messages, a model), v1 on the
// pointer and a running release of v2 at 30 %.
func localServer(t *testing.T) (*server, string) {
	t.Helper()
	s := startPromptd(t)
	ctx := ctxT(t)
	agent := unique("loc")
	conf := func(text string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"system": text + " You are {{persona}} for {{company}}.",
			"skills":    []any{map[string]any{"name": "refunds", "instructions": "Within {{days}} days; {{ not a var }} stays."}},
			"memory":    []any{"Prefers email."},
			"messages":  []any{map[string]any{"role": "user", "content": "Hi from {{company}}"}, map[string]any{"role": "assistant", "content": "Hello!"}},
			"model":     map[string]any{"name": "gpt-4o", "temperature": 0.2},
			"variables": map[string]any{"persona": map[string]any{"required": true}, "company": map[string]any{"default": "ACME"}, "days": map[string]any{"default": "30"}}})
		return b
	}
	for i, text := range []string{"v1.", "v2."} {
		if _, err := s.admin.CreateVersion(ctx, agent, client.CreateVersionRequest{BaseVersion: i, Config: conf(text)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.admin.PutEnv(ctx, agent, "prod", client.PutEnvRequest{Version: 1, ExpectedRevision: 0}); err != nil {
		t.Fatal(err)
	}
	if err := s.admin.Do(ctx, "POST", "/v1/agents/"+agent+"/envs/prod/releases", map[string]any{"candidate_version": 2, "percent": 30}, nil); err != nil {
		t.Fatal(err)
	}
	return s, agent
}

// After the first fetch, local resolves and assembles make no network
// call, and every answer is byte for byte the server's own (plain and
// openai formats), for 200 callers on both arms of a release.
func TestLocalPrompts_afterWarmUp_noNetworkCall_andTheServersBytes(t *testing.T) {
	s, agent := localServer(t)
	ctx := ctxT(t)
	tr := &counting{}
	rt := client.New(s.p.URL, runtimeSecret, client.WithHTTPClient(&http.Client{Transport: tr}))
	lp, err := rt.NewLocalPrompts(ctx, client.LocalOptions{Agents: []string{agent}, FlushEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Close(ctx)
	// warm: the stream is up and its first connect re-fetched (304)
	deadline := time.Now().Add(10 * time.Second)
	for !(lp.Stats().Streaming && lp.Stats().NotModified >= 1) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	before := tr.snapshot()
	arms := map[string]int{}
	type answer struct {
		user, format string
		body         []byte
	}
	var answers []answer
	for i := 0; i < 200; i++ {
		user := fmt.Sprint("user-", i)
		res, err := lp.Resolve(ctx, bundle.Request{Agent: agent, Env: "prod", UserID: user})
		if err != nil {
			t.Fatal(err)
		}
		arms[res.Release.Arm]++
		for _, format := range []string{"plain", "openai"} {
			body, _, err := lp.Assemble(ctx, bundle.Request{Agent: agent, Env: "prod", UserID: user, Format: format,
				Variables: map[string]json.RawMessage{"persona": json.RawMessage(`"a {{company}} helper"`)}})
			if err != nil {
				t.Fatal(err)
			}
			answers = append(answers, answer{user, format, body})
		}
	}
	after := tr.snapshot()
	for path, n := range after {
		if n != before[path] {
			t.Errorf("%d requests to %s during 600 local resolves and assembles, want 0", n-before[path], path)
		}
	}
	if arms["candidate"] == 0 || arms["baseline"] == 0 {
		t.Errorf("arms %v: want both", arms)
	}
	// the server's answers to the same requests
	for _, a := range answers {
		var raw []byte
		body := map[string]any{"user_id": a.user, "format": a.format, "variables": map[string]string{"persona": "a {{company}} helper"}}
		if err := s.rt.Do(ctx, "POST", "/v1/agents/"+agent+"/envs/prod/assemble", body, &raw); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(bytes.TrimSpace(raw), bytes.TrimSpace(a.body)) {
			t.Fatalf("%s %s: local\n%s\nserver\n%s", a.user, a.format, a.body, raw)
		}
	}
	t.Logf("600 local answers, 0 requests; arms %v; every answer equal to the server's bytes", arms)
}

// A switch and a percent change reach the local answers through the
// change feed; a bundle too old to know a session's pin is the server's
// to answer; with promptd gone the last bundle keeps serving, and a new
// LocalPrompts starts from the disk copy.
func TestLocalPrompts_followsChanges_thenServesItsLastBundleAndItsDiskCopy(t *testing.T) {
	s, agent := localServer(t)
	ctx := ctxT(t)
	path := filepath.Join(t.TempDir(), "bundle.json")
	lp, err := s.rt.NewLocalPrompts(ctx, client.LocalOptions{Agents: []string{agent}, CachePath: path, FlushEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Close(ctx)
	version := func(l *client.LocalPrompts, user string) int {
		res, err := l.Resolve(ctx, bundle.Request{Agent: agent, Env: "prod", UserID: user})
		if err != nil {
			t.Fatal(err)
		}
		return res.Version
	}
	within := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not seen locally within 5 s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// promote the release: everyone on v2
	var rel struct{ ID string }
	if err := s.admin.Do(ctx, "GET", "/v1/agents/"+agent+"/envs/prod", nil, &struct{}{}); err != nil {
		t.Fatal(err)
	}
	var list struct{ Items []struct{ ID string } }
	if err := s.admin.Do(ctx, "GET", "/v1/agents/"+agent+"/envs/prod/releases", nil, &list); err != nil || len(list.Items) == 0 {
		t.Fatal(err, list)
	}
	rel.ID = list.Items[0].ID
	if err := s.admin.Do(ctx, "PATCH", "/v1/releases/"+rel.ID, map[string]any{"percent": 100, "expected_revision": 1}, nil); err != nil {
		t.Fatal(err)
	}
	within("percent 100", func() bool {
		for i := 0; i < 20; i++ {
			if version(lp, fmt.Sprint("u", i)) != 2 {
				return false
			}
		}
		return true
	})
	if err := s.admin.Do(ctx, "POST", "/v1/releases/"+rel.ID+"/rollback", map[string]any{"reason": "test"}, nil); err != nil {
		t.Fatal(err)
	}
	within("rollback", func() bool { return version(lp, "u1") == 1 })

	// a session pinned to v1, which the bundle answers; revoked: the server
	var sess struct {
		SessionID     string `json:"session_id"`
		PinnedVersion int    `json:"pinned_version"`
	}
	if err := s.rt.Do(ctx, "POST", "/v1/sessions", map[string]any{"agent": agent, "env": "prod", "user_id": "u1"}, &sess); err != nil {
		t.Fatal(err)
	}
	res, err := lp.Resolve(ctx, bundle.Request{Agent: agent, Env: "prod", UserID: "u1", SessionID: sess.SessionID, PinnedVersion: sess.PinnedVersion})
	if err != nil || !res.Pinned || res.Version != 1 || lp.Stats().ServerAnswers != 0 {
		t.Fatalf("pinned session: %+v %v (server answers %d)", res, err, lp.Stats().ServerAnswers)
	}
	res, err = lp.Resolve(ctx, bundle.Request{Agent: agent, Env: "prod", UserID: "u1", SessionID: sess.SessionID, PinnedVersion: 2})
	if err != nil || lp.Stats().ServerAnswers != 1 || res.Version != 1 {
		t.Fatalf("a pin on a version the env revoked goes to the server, which re-pins: %+v %v (server answers %d)", res, err, lp.Stats().ServerAnswers)
	}

	// promptd gone: the last bundle serves; a fresh process starts from
	// disk (once the copy of the bundle in use is written: it is written
	// after the bundle is installed)
	within("the disk copy of the bundle in use", func() bool {
		var onDisk struct{ Cursor string }
		raw, err := os.ReadFile(path)
		return err == nil && json.Unmarshal(raw, &onDisk) == nil && onDisk.Cursor == lp.Stats().Cursor
	})
	s.p.Kill()
	if v := version(lp, "u1"); v != 1 {
		t.Fatalf("after promptd died: v%d", v)
	}
	fresh, err := client.New(s.p.URL, runtimeSecret, client.WithRetries(0)).NewLocalPrompts(ctx, client.LocalOptions{CachePath: path, FlushEvery: -1})
	if err != nil {
		t.Fatalf("a cold start with the disk copy while promptd is down: %v", err)
	}
	defer fresh.Close(ctx)
	if v := version(fresh, "u1"); v != 1 {
		t.Fatalf("cold start from disk: v%d", v)
	}
	// control: without a disk copy a cold start has nothing to serve
	_, err = client.New(s.p.URL, runtimeSecret, client.WithRetries(0)).NewLocalPrompts(ctx, client.LocalOptions{CachePath: path + ".none", FlushEvery: -1})
	if err == nil || !strings.Contains(err.Error(), "disk copy") {
		t.Fatalf("cold start without promptd or a disk copy: %v", err)
	}
}

// Local resolves are counted as exposures and sent in batches; the
// server's counts per version and arm equal what was resolved.
func TestLocalPrompts_exposures_countedOnceEach(t *testing.T) {
	s, agent := localServer(t)
	ctx := ctxT(t)
	lp, err := s.rt.NewLocalPrompts(ctx, client.LocalOptions{Agents: []string{agent}, FlushEvery: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	want := map[string]int64{}
	for i := 0; i < n; i++ {
		res, err := lp.Resolve(ctx, bundle.Request{Agent: agent, Env: "prod", UserID: fmt.Sprint("x", i)})
		if err != nil {
			t.Fatal(err)
		}
		want[fmt.Sprintf("v%d/%s", res.Version, res.Release.Arm)]++
	}
	if err := lp.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st := lp.Stats(); st.Exposures != n || st.Dropped != 0 {
		t.Fatalf("stats %+v, want %d exposures sent", st, n)
	}
	var page struct {
		Items []struct {
			Version int
			Arm     string
			Count   int64
		}
	}
	if err := s.admin.Do(ctx, "GET", "/v1/agents/"+agent+"/envs/prod/exposures", nil, &page); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, it := range page.Items {
		got[fmt.Sprintf("v%d/%s", it.Version, it.Arm)] += it.Count
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("exposures %s: server %d, resolved %d (server %v)", k, got[k], v, got)
		}
	}
	t.Logf("%d local resolves: resolved %v, server counted %v", n, want, got)
}
