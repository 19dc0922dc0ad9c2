package browsertest

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/promptd/promptd/internal/harness/testenv"
)

// Bootstrap tokens: two admins (two principals, so one can approve what the
// other asked for) and a runtime token.
const (
	adminToken    = "admin-secret-0123456789"
	approverToken = "approver-secret-0123456789"
	runtimeToken  = "runtime-secret-0123456789"
)

// server is a promptd process of one test, on a fresh MariaDB database and
// a key prefix of its own on the suite's Redis: the deployment the console
// runs on in production, the console served from the binary's embedded
// assets.
type server struct {
	*testenv.Promptd
	t *testing.T
}

func startServer(t *testing.T) *server {
	t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	p := testenv.StartPromptd(t, map[string]string{
		"PROMPTD_MYSQL_DSN":             testenv.MySQLDSN(t),
		"PROMPTD_REDIS_URL":             testenv.RedisURL(t),
		"PROMPTD_KEY_PREFIX":            "browsertest-" + hex.EncodeToString(suffix),
		"PROMPTD_TOKENS":                "ops:admin:" + adminToken + ",reviewer:admin:" + approverToken + ",rt:runtime:" + runtimeToken,
		"PROMPTD_SECRET_KEY":            base64.StdEncoding.EncodeToString(key),
		"PROMPTD_WEBHOOK_ALLOW_HTTP":    "true",
		"PROMPTD_WEBHOOK_ALLOW_PRIVATE": "true",
		"PROMPTD_INSTANCE_ID":           "browsertest",
	})
	return &server{Promptd: p, t: t}
}

var client = &http.Client{Timeout: 10 * time.Second}

// call sends an API request with a bearer token and returns the status and
// body.
func (s *server) call(method, path, token string, body any) (int, []byte) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := client.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	return res.StatusCode, b
}

// must sends an API request as the admin token, fails the test unless the
// status is want, and decodes the answer into a map (nil for no body).
func (s *server) must(want int, method, path string, body any) map[string]any {
	s.t.Helper()
	return s.mustAs(adminToken, want, method, path, body)
}

func (s *server) mustAs(token string, want int, method, path string, body any) map[string]any {
	s.t.Helper()
	status, b := s.call(method, path, token, body)
	if status != want {
		s.t.Fatalf("%s %s: %d %s, want %d", method, path, status, b, want)
	}
	if len(b) == 0 {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		s.t.Fatalf("%s %s: decode %s: %v", method, path, b, err)
	}
	return m
}

// publish creates the next version of agent with this system prompt and
// returns its number.
func (s *server) publish(agent string, base int, system string) int {
	s.t.Helper()
	v := s.must(201, "POST", "/v1/agents/"+agent+"/versions", map[string]any{
		"base_version": base, "message": fmt.Sprintf("v%d", base+1),
		"config": map[string]any{"system": system, "model": map[string]any{"name": "gpt-4o", "temperature": 0.2}},
	})
	return int(v["version"].(float64))
}

// point creates the env pointer at version (revision 0 -> 1).
func (s *server) point(agent, env string, version int) {
	s.t.Helper()
	s.must(201, "PUT", "/v1/agents/"+agent+"/envs/"+env, map[string]any{"version": version, "expected_revision": 0})
}

// pointer reads an env pointer's version and revision.
func (s *server) pointer(agent, env string) (version, revision int) {
	s.t.Helper()
	m := s.must(200, "GET", "/v1/agents/"+agent+"/envs/"+env, nil)
	return int(m["version"].(float64)), int(m["revision"].(float64))
}
