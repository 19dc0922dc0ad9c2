package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/promptd/promptd/api/client"
	"github.com/promptd/promptd/internal/harness/testenv"
)

const (
	adminSecret   = "admin-secret-for-promptctl-tests"
	runtimeSecret = "runtime-secret-for-promptctl-tests"
)

type testServer struct {
	p     *testenv.Promptd
	admin *client.Client
}

func startPromptd(t *testing.T) *testServer {
	t.Helper()
	if testing.Short() {
		t.Skip("starts promptd")
	}
	p := testenv.StartPromptd(t, map[string]string{"PROMPTD_DATA_DIR": t.TempDir(),
		"PROMPTD_TOKENS": "ops:admin:" + adminSecret + ",rt:runtime:" + runtimeSecret})
	return &testServer{p: p, admin: client.New(p.URL, adminSecret)}
}

// result is one promptctl run.
type result struct {
	code           int
	stdout, stderr string
}

// ctl runs promptctl in process with PROMPTD_URL and PROMPTD_TOKEN (admin).
func (s *testServer) ctl(t *testing.T, args ...string) result {
	t.Helper()
	return s.ctlAs(t, adminSecret, args...)
}

func (s *testServer) ctlAs(t *testing.T, token string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	env := map[string]string{"PROMPTD_URL": s.p.URL, "PROMPTD_TOKEN": token}
	var out, errb bytes.Buffer
	code := run(ctx, args, func(k string) string { return env[k] }, &out, &errb)
	return result{code, out.String(), errb.String()}
}

func (r result) String() string {
	return "exit " + itoa(r.code) + "\n--- stdout\n" + r.stdout + "--- stderr\n" + r.stderr
}

// writeYAML writes dir/name with content.
func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func promptYAML(agent, system string) string {
	return "agent: " + agent + "\nconfig:\n  system: " + system + "\n  model:\n    name: gpt-4o\n    temperature: 0.20\n"
}

// copyDir copies the files of src (not subdirectories) to a new dir.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dst, e.Name(), string(b))
	}
	return dst
}

func readLockT(t *testing.T, dir string) map[string]lockEntry {
	t.Helper()
	l, err := readLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	return l.Agents
}

// applyJSON runs apply with --output json and decodes its report.
func (s *testServer) applyJSON(t *testing.T, args ...string) (result, []planItem) {
	t.Helper()
	r := s.ctl(t, append([]string{"apply", "--output", "json"}, args...)...)
	var rep struct {
		Items []planItem `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("apply report: %v\n%s", err, r)
	}
	return r, rep.Items
}

func statuses(items []planItem) string {
	var s []string
	for _, it := range items {
		s = append(s, it.Agent+"="+it.Status)
	}
	return strings.Join(s, " ")
}
