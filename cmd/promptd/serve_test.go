package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// call makes an HTTP request to a running promptd.
func call(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// openMain starts a Main on port 0 and stops it when the test ends.
func openMain(t *testing.T, cfg Config, logs io.Writer) *Main {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	m := NewMain(cfg, slog.New(slog.NewJSONHandler(logs, nil)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Open(ctx); err != nil {
		_ = m.Close(ctx)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return m
}

// publishAndResolve creates a version, points prod at it and resolves it.
func publishAndResolve(t *testing.T, base, admin, runtime string) {
	t.Helper()
	if code, body := call(t, "POST", base+"/v1/agents/support/versions", admin, `{"base_version": 0, "config": {"system": "Hi"}}`); code != 201 {
		t.Fatalf("create version: %d %s", code, body)
	}
	if code, body := call(t, "PUT", base+"/v1/agents/support/envs/prod", admin, `{"version": 1, "expected_revision": 0}`); code != 201 {
		t.Fatalf("publish: %d %s", code, body)
	}
	code, body := call(t, "GET", base+"/v1/agents/support/envs/prod/prompt?user_id=u1", runtime, "")
	var p struct {
		Version int
		Config  struct{ System string }
	}
	if code != 200 || json.Unmarshal([]byte(body), &p) != nil || p.Version != 1 || p.Config.System != "Hi" {
		t.Fatalf("resolve: %d %s", code, body)
	}
	if code, _ := call(t, "POST", base+"/v1/agents/support/versions", runtime, `{"base_version": 1, "config": {"system": "x"}}`); code != 403 {
		t.Fatalf("runtime create = %d, want 403", code)
	}
	if code, _ := call(t, "GET", base+"/v1/agents", "", ""); code != 401 {
		t.Fatalf("no token = %d, want 401", code)
	}
}

func TestMain_embedded_generatesTokens_andServesTheAPI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	cfg, err := loadConfig(env(map[string]string{"PROMPTD_DATA_DIR": dir}))
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	m := openMain(t, cfg, logs)
	tokens, err := readTokens(filepath.Join(dir, "tokens"))
	if err != nil {
		t.Fatal(err)
	}
	publishAndResolve(t, "http://"+m.Addr().String(), tokens[0].Secret, tokens[1].Secret)
	out := logs.String()
	if !strings.Contains(out, `"tokens_file":"`+filepath.Join(dir, "tokens")+`"`) {
		t.Errorf("the tokens file's path was not logged: %s", out)
	}
	for _, tok := range tokens {
		if strings.Contains(out, tok.Secret) {
			t.Fatal("a generated secret reached the logs")
		}
	}
	// A second start (after this one stops) reuses the file.
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	m2 := openMain(t, cfg, &lockedBuffer{})
	if code, body := call(t, "GET", "http://"+m2.Addr().String()+"/v1/agents/support/versions/1", tokens[1].Secret, ""); code != 200 {
		t.Fatalf("after a restart: %d %s", code, body)
	}
}
