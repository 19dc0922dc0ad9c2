package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/promptd/promptd/internal/testenv"
)

const (
	adminToken   = "admin-secret-0123456789"
	runtimeToken = "runtime-secret-0123456789"
	tokens       = "ops:admin:" + adminToken + ",rt:runtime:" + runtimeToken
)

var client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

type resp struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r resp) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// call sends a request; err is a transport error (the outcome is unknown).
func call(method, url, token string, body any, hdr ...string) (resp, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return resp{}, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := client.Do(req)
	if err != nil {
		return resp{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return resp{Status: res.StatusCode, Header: res.Header, Body: b}, err
}

// must sends a request and fails the test unless the status is want.
func must(t testing.TB, want int, method, url, token string, body any, hdr ...string) resp {
	t.Helper()
	r, err := call(method, url, token, body, hdr...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	if r.Status != want {
		t.Fatalf("%s %s: %d %s, want %d", method, url, r.Status, r.Body, want)
	}
	return r
}

// cluster is n promptd processes on one MariaDB database and one Redis.
type cluster struct {
	nodes []*testenv.Promptd
	redis *testenv.RedisServer
}

func startCluster(t *testing.T, n int, extra map[string]string) *cluster {
	t.Helper()
	dsn := testenv.MySQLDSN(t)
	srv := testenv.StartRedis(t)
	c := &cluster{redis: srv}
	for i := 0; i < n; i++ {
		vars := map[string]string{"PROMPTD_MYSQL_DSN": dsn, "PROMPTD_REDIS_URL": srv.URL(), "PROMPTD_TOKENS": tokens,
			"PROMPTD_INSTANCE_ID": fmt.Sprint("node-", i), "PROMPTD_RECONCILE_EVERY": "1s"}
		for k, v := range extra {
			vars[k] = v
		}
		c.nodes = append(c.nodes, testenv.StartPromptd(t, vars))
	}
	return c
}

// seed publishes n versions of agent and points env at version 1.
func seed(t *testing.T, base, agent, env string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		must(t, 201, "POST", base+"/v1/agents/"+agent+"/versions", adminToken, map[string]any{
			"base_version": i, "config": map[string]any{"system": fmt.Sprintf("%s v%d", agent, i+1)}})
	}
	must(t, 201, "PUT", base+"/v1/agents/"+agent+"/envs/"+env, adminToken, map[string]any{"version": 1, "expected_revision": 0})
}

type prompt struct {
	Version     int             `json:"version"`
	ContentHash string          `json:"content_hash"`
	Config      json.RawMessage `json:"config"`
	Release     *struct {
		ID  string `json:"id"`
		Arm string `json:"arm"`
	} `json:"release"`
}

func resolve(base, agent, env, user string) (prompt, int, error) {
	var p prompt
	url := base + "/v1/agents/" + agent + "/envs/" + env + "/prompt"
	if user != "" {
		url += "?user_id=" + user
	}
	r, err := call("GET", url, runtimeToken, nil)
	if err != nil {
		return p, 0, err
	}
	if r.Status == 200 {
		err = json.Unmarshal(r.Body, &p)
	}
	return p, r.Status, err
}

func pct(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(q * float64(len(ds)))
	if i >= len(ds) {
		i = len(ds) - 1
	}
	return ds[i]
}
