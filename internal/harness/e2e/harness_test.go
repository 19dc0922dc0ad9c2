package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/promptd/promptd/internal/harness/testenv"
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
// redis is the private redis-server of startCluster, which a test may
// stop or kill; on a Redis Cluster it is nil and redisCluster is a client
// of the cluster.
type cluster struct {
	nodes        []*testenv.Promptd
	redis        *testenv.RedisServer
	redisCluster *redis.ClusterClient
	dsn          string // the MariaDB database they share
}

func startCluster(t *testing.T, n int, extra map[string]string) *cluster {
	t.Helper()
	srv := testenv.StartRedis(t)
	c := startClusterOn(t, n, extra, srv.URL(), false)
	c.redis = srv
	return c
}

// startClusterOn starts n promptd processes on a fresh MariaDB database
// and the Redis at redisURL; with clusterMode, redisURL names the seed
// nodes of a Redis Cluster (PROMPTD_REDIS_CLUSTER=true).
func startClusterOn(t *testing.T, n int, extra map[string]string, redisURL string, clusterMode bool) *cluster {
	t.Helper()
	dsn := testenv.MySQLDSN(t)
	c := &cluster{dsn: dsn}
	for i := 0; i < n; i++ {
		vars := map[string]string{"PROMPTD_MYSQL_DSN": dsn, "PROMPTD_REDIS_URL": redisURL, "PROMPTD_TOKENS": tokens,
			"PROMPTD_INSTANCE_ID": fmt.Sprint("node-", i), "PROMPTD_RECONCILE_EVERY": "1s"}
		if clusterMode {
			vars["PROMPTD_REDIS_CLUSTER"] = "true"
		}
		for k, v := range extra {
			vars[k] = v
		}
		c.nodes = append(c.nodes, testenv.StartPromptd(t, vars))
	}
	return c
}

// onEachBackend runs test as two subtests: "redis", n promptd processes on
// a private redis-server (c.redis set), and "redis-cluster", n on a
// private three-master Redis Cluster (c.redis nil), where every lock,
// fence and mirror key lives on the master its hash tag picks and P:events
// is broadcast between the masters. Steps that stop or kill Redis run on
// the single server only.
func onEachBackend(t *testing.T, n int, test func(t *testing.T, c *cluster)) {
	t.Run("redis", func(t *testing.T) { test(t, startCluster(t, n, nil)) })
	t.Run("redis-cluster", func(t *testing.T) {
		addrs := testenv.StartRedisCluster(t)
		c := startClusterOn(t, n, nil, testenv.ClusterURL(addrs), true)
		c.redisCluster = testenv.ClusterClient(t, addrs)
		test(t, c)
		logKeySpread(t, c.redisCluster)
	})
}

// logKeySpread logs how many keys each master of the Redis Cluster holds
// and fails the test if promptd wrote none: the cluster was not used.
func logKeySpread(t *testing.T, rc *redis.ClusterClient) {
	t.Helper()
	var mu sync.Mutex
	spread := map[string]int64{}
	var total int64
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := rc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		n, err := node.DBSize(ctx).Result()
		mu.Lock()
		spread[node.Options().Addr], total = n, total+n
		mu.Unlock()
		return err
	})
	if err != nil || total == 0 {
		t.Fatalf("keys per Redis Cluster master: %v (%v); promptd wrote none", spread, err)
	}
	t.Logf("keys per Redis Cluster master: %v", spread)
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

func metOrMissed(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}
