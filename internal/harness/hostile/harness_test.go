package hostile

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/promptd/promptd/internal/harness/testenv"
)

// The bootstrap tokens of every server the harness starts: two admins (so
// that change requests can be approved by a second principal) and a
// runtime token.
const (
	AdminToken   = "hostile-admin-secret-0123456789"
	Admin2Token  = "hostile-admin2-secret-0123456789"
	RuntimeToken = "hostile-runtime-secret-0123456789"
	tokens       = "ops:admin:" + AdminToken + ",ops2:admin:" + Admin2Token + ",rt:runtime:" + RuntimeToken
)

var client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// Server is one promptd process under attack.
type Server struct {
	URL   string
	Store string // "sqlite" or "mariadb"
	Proc  *testenv.Promptd
}

// eachStore runs f against a fresh promptd on SQLite and one on MariaDB
// (single instance, in-memory locks), each with vars added to its
// environment, as the subtests "sqlite" and "mariadb".
func eachStore(t *testing.T, vars map[string]string, f func(t *testing.T, s *Server)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) {
		env := map[string]string{"PROMPTD_DATA_DIR": t.TempDir(), "PROMPTD_TOKENS": tokens}
		for k, v := range vars {
			env[k] = v
		}
		p := testenv.StartPromptd(t, env)
		f(t, &Server{URL: p.URL, Store: "sqlite", Proc: p})
	})
	t.Run("mariadb", func(t *testing.T) {
		env := map[string]string{"PROMPTD_MYSQL_DSN": testenv.MySQLDSN(t), "PROMPTD_SINGLE_INSTANCE": "true",
			"PROMPTD_TOKENS": tokens, "PROMPTD_DATA_DIR": t.TempDir()}
		for k, v := range vars {
			env[k] = v
		}
		p := testenv.StartPromptd(t, env)
		f(t, &Server{URL: p.URL, Store: "mariadb", Proc: p})
	})
}

// Resp is an answer; JSON is its body decoded as an object (nil when it
// is not one).
type Resp struct {
	Status int
	Header http.Header
	Body   []byte
	JSON   map[string]any
}

// Code is the problem code of an error answer ("" for none).
func (r *Resp) Code() string {
	c, _ := r.JSON["code"].(string)
	return c
}

// Do sends method path with token (none when "") and body: nil for no
// body, a string or []byte sent as is, anything else as JSON. headers are
// name, value pairs. A transport error fails the test.
func (s *Server) Do(t testing.TB, method, path, token string, body any, headers ...string) *Resp {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewReader([]byte(b))
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	r := &Resp{Status: res.StatusCode, Header: res.Header, Body: raw}
	_ = json.Unmarshal(raw, &r.JSON)
	return r
}

// Must is Do that fails the test unless the status is want.
func (s *Server) Must(t testing.TB, want int, method, path, token string, body any, headers ...string) *Resp {
	t.Helper()
	r := s.Do(t, method, path, token, body, headers...)
	if r.Status != want {
		t.Fatalf("%s %s on %s: %d %s, want %d", method, path, s.Store, r.Status, r.Body, want)
	}
	return r
}

// Refused fails the test unless r is the problem status/code: the attack
// was refused as it should be.
func Refused(t testing.TB, r *Resp, status int, code string) {
	t.Helper()
	if r.Status != status || r.Code() != code {
		t.Fatalf("attack not refused as %d %s: got %d %s", status, code, r.Status, r.Body)
	}
}

// Publish creates version base+1 of agent with a minimal config.
func (s *Server) Publish(t testing.TB, agent string, base int, system string) {
	t.Helper()
	s.Must(t, http.StatusCreated, "POST", "/v1/agents/"+agent+"/versions", AdminToken,
		map[string]any{"base_version": base, "config": map[string]any{"system": system}})
}

// Point creates or moves agent's pointer in env to version, at expected
// revision rev (0 creates it).
func (s *Server) Point(t testing.TB, agent, env string, version int, rev int64) *Resp {
	t.Helper()
	return s.Do(t, "PUT", "/v1/agents/"+agent+"/envs/"+env, AdminToken,
		map[string]any{"version": version, "expected_revision": rev})
}
