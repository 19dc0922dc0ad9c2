package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// callJSON makes a request with headers (name, value pairs) and decodes a
// JSON object answer.
func callJSON(t *testing.T, method, url, token, body string, headers ...string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	c := &http.Client{Timeout: 10 * time.Second}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var m map[string]any
	if len(b) > 0 {
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s %s: %d %q", method, url, res.StatusCode, b)
		}
	}
	return res.StatusCode, m
}

// must asserts a status and returns the answer.
func must(t *testing.T, want int) func(int, map[string]any) map[string]any {
	return func(code int, m map[string]any) map[string]any {
		t.Helper()
		if code != want {
			t.Fatalf("status %d, want %d: %v", code, want, m)
		}
		return m
	}
}

// Main wires releases (with their step job), sessions on the composed
// resolver (session pin -> release arm -> env pointer), leases and the
// audit batcher.
func TestMain_wiresReleasesSessionsLeasesAndJobs(t *testing.T) {
	const adm, rt = "wiring-admin-secret-0123", "wiring-runtime-secret-0123"
	cfg, err := loadConfig(env(map[string]string{
		"PROMPTD_DATA_DIR": filepath.Join(t.TempDir(), "data"),
		"PROMPTD_TOKENS":   "ops:admin:" + adm + ",agent:runtime:" + rt,
	}))
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	m := openMain(t, cfg, logs)
	base := "http://" + m.Addr().String()

	for i := range 2 {
		must(t, 201)(callJSON(t, "POST", base+"/v1/agents/support/versions", adm, fmt.Sprintf(`{"base_version": %d, "config": {"system": "v%d"}}`, i, i+1)))
	}
	must(t, 201)(callJSON(t, "PUT", base+"/v1/agents/support/envs/prod", adm, `{"version": 1, "expected_revision": 0}`))
	rel := must(t, 201)(callJSON(t, "POST", base+"/v1/agents/support/envs/prod/releases", adm,
		`{"candidate_version": 2, "percent": 0, "steps": [{"percent": 100, "after": "1s"}]}`))

	// The step job applies the step within a few seconds.
	deadline := time.Now().Add(15 * time.Second)
	for {
		r := must(t, 200)(callJSON(t, "GET", base+"/v1/releases/"+rel["id"].(string), rt, ""))
		if r["steps_applied"] == float64(1) && r["percent"] == float64(100) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the step was not applied: %v", r)
		}
		time.Sleep(100 * time.Millisecond)
	}
	p := must(t, 200)(callJSON(t, "GET", base+"/v1/agents/support/envs/prod/prompt?user_id=u1", rt, ""))
	if p["version"] != float64(2) || p["release"].(map[string]any)["arm"] != "candidate" {
		t.Fatalf("prompt = %v", p)
	}

	// Sessions pin what the release arm gives; assemble reads their turns.
	s := must(t, 201)(callJSON(t, "POST", base+"/v1/sessions", rt, `{"session_id": "s1", "agent": "support", "env": "prod", "user_id": "u1"}`))
	if s["pinned_version"] != float64(2) {
		t.Fatalf("session = %v", s)
	}
	l := must(t, 200)(callJSON(t, "POST", base+"/v1/sessions/s1/lease", rt, `{"holder": "worker-1"}`))
	must(t, 201)(callJSON(t, "POST", base+"/v1/sessions/s1/turns", rt,
		fmt.Sprintf(`{"expected_revision": 0, "fence": %d, "turns": [{"role": "user", "content": "hi"}]}`, int64(l["fence"].(float64)))))
	a := must(t, 200)(callJSON(t, "POST", base+"/v1/agents/support/envs/prod/assemble", rt, `{"session_id": "s1", "history": true}`))
	if msgs := a["messages"].([]any); len(msgs) != 2 || a["pinned"] != true || a["version"] != float64(2) {
		t.Fatalf("assembled = %v", a)
	}
	if code, _ := callJSON(t, "DELETE", base+"/v1/sessions/s1/lease", rt, "", "Lease-Token", l["token"].(string)); code != 204 {
		t.Fatalf("release = %d", code)
	}
	g := must(t, 200)(callJSON(t, "POST", base+"/v1/leases", rt, `{"resources": ["order:1"], "holder": "worker-1"}`))

	// Lease events reach the audit log through the batcher.
	deadline = time.Now().Add(10 * time.Second)
	for {
		ev := must(t, 200)(callJSON(t, "GET", base+"/v1/audit?action=lease.acquired", adm, ""))
		if len(ev["items"].([]any)) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lease events = %v", ev)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, tok := range []string{l["token"].(string), g["token"].(string)} {
		if strings.Contains(logs.String(), tok) {
			t.Fatal("a lease token reached the logs")
		}
	}
}
