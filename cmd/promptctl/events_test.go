package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/promptd/promptd/api/client"
)

// syncBuf is a buffer written by the follower and read by the test.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestEvents_listsTheFeed_andFollowPrintsNewEventsUntilInterrupted(t *testing.T) {
	s := startPromptd(t)
	ctx := context.Background()
	if _, err := s.admin.CreateVersion(ctx, "support", client.CreateVersionRequest{Config: map[string]any{"system": "v1"}}); err != nil {
		t.Fatal(err)
	}
	var r result
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if r = s.ctl(t, "events", "--since", "0"); strings.Contains(r.stdout, "version.created") {
			break
		}
	}
	if r.code != 0 || !strings.Contains(r.stdout, "SEQ") || !strings.Contains(r.stdout, "agents/support/versions/1") ||
		!strings.Contains(r.stderr, "next: --since 1") {
		t.Fatalf("events: %v", r)
	}

	fctx, cancel := context.WithCancel(ctx)
	out, errb := &syncBuf{}, &syncBuf{}
	env := map[string]string{"PROMPTD_URL": s.p.URL, "PROMPTD_TOKEN": adminSecret}
	done := make(chan int, 1)
	go func() {
		done <- run(fctx, []string{"events", "-w", "--actions", "pointer.*", "--output", "json"}, func(k string) string { return env[k] }, out, errb)
	}()
	time.Sleep(300 * time.Millisecond) // the stream opens at the head: new events only
	if _, err := s.admin.PutEnv(ctx, "support", "prod", client.PutEnvRequest{Version: 1}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(out.String(), "pointer.switched"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("follow printed nothing: stdout %q stderr %q", out, errb)
		}
	}
	if strings.Contains(out.String(), "version.created") {
		t.Fatalf("follow printed an event outside --actions or before it started: %q", out)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("interrupted follow exited %d: %q", code, errb)
	}
}
