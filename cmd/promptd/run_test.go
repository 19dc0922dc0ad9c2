package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer collects run's log output while run writes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// addr returns the address of the "listening" line, once logged.
func (b *lockedBuffer) addr() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range strings.Split(b.buf.String(), "\n") {
		var line struct{ Msg, Addr string }
		if json.Unmarshal([]byte(l), &line) == nil && line.Msg == "listening" {
			return line.Addr
		}
	}
	return ""
}

func TestRun_inProcess_servesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &lockedBuffer{}
	vars := map[string]string{"PROMPTD_ADDR": "127.0.0.1:0", "PROMPTD_DATA_DIR": filepath.Join(t.TempDir(), "d")}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"promptd"}, env(vars), out) }()

	deadline := time.Now().Add(10 * time.Second)
	var addr string
	for addr == "" {
		select {
		case err := <-done:
			t.Fatalf("run returned early: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no listening line within 10s")
		}
		addr = out.addr()
	}
	if code, body := httpGet(t, "http://"+addr+"/readyz"); code != 200 || !strings.Contains(body, `"mode":"normal"`) {
		t.Errorf("/readyz = %d %s", code, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("run did not return within 5s of cancellation")
	}
}

func TestRun_badConfig_fails(t *testing.T) {
	err := run(context.Background(), []string{"promptd"}, env(map[string]string{"PROMPTD_REDIS_TIMEOUT": "x"}), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "PROMPTD_REDIS_TIMEOUT") {
		t.Fatalf("run = %v", err)
	}
}

func TestRun_help_listsVariables(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"promptd", "-h"}, env(nil), &out); err != nil {
		t.Fatal(err)
	}
	for _, v := range configVars {
		if !strings.Contains(out.String(), v) {
			t.Errorf("help lacks %s", v)
		}
	}
	if err := run(context.Background(), []string{"promptd", "serve"}, env(nil), &out); err == nil {
		t.Error("an unknown argument was accepted")
	}
}
