package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/promptd/promptd/internal/harness/testenv"
)

// With PROMPTD_REDIS_CLUSTER=true promptd runs on a three-master Redis
// Cluster: it serves, mirrors under the agent's hash tag, takes a lease on
// two resources (two hash tags), and /readyz pings every master, so one that
// stalls shows as Redis down until it answers again.
func TestMain_redisCluster_servesAndReadyzPingsEveryMaster(t *testing.T) {
	const adm, rt = "cluster-admin-secret-0123", "cluster-runtime-secret-0123"
	addrs := testenv.StartRedisCluster(t)
	cfg, err := loadConfig(env(map[string]string{
		"PROMPTD_DATA_DIR":      filepath.Join(t.TempDir(), "data"),
		"PROMPTD_TOKENS":        "ops:admin:" + adm + ",agent:runtime:" + rt,
		"PROMPTD_REDIS_URL":     testenv.ClusterURL(addrs),
		"PROMPTD_REDIS_CLUSTER": "true",
		"PROMPTD_REDIS_TIMEOUT": "500ms",
	}))
	if err != nil {
		t.Fatal(err)
	}
	m := openMain(t, cfg, &lockedBuffer{})
	if _, ok := m.redis.(*redis.ClusterClient); !ok {
		t.Fatalf("client = %T, want *redis.ClusterClient", m.redis)
	}
	base := "http://" + m.Addr().String()
	if code, body := readyz(t, base); code != 200 || body != `{"sql":"ok","redis":"ok","etcd":"disabled","mode":"normal"}` {
		t.Fatalf("/readyz = %d %s", code, body)
	}
	publishAndResolve(t, base, adm, rt)
	g := must(t, 200)(callJSON(t, "POST", base+"/v1/leases", rt, `{"resources": ["order:1", "machine:3"], "holder": "worker-1"}`))
	if code, _ := callJSON(t, "DELETE", base+"/v1/leases/"+g["lease_id"].(string), rt, "", "Lease-Token", g["token"].(string)); code != 204 {
		t.Fatalf("release = %d", code)
	}

	ctx := context.Background()
	rc := testenv.ClusterClient(t, addrs)
	if rev, err := rc.HGet(ctx, "prompt:ptr:{support}:prod", "rev").Result(); err != nil || rev != "1" {
		t.Errorf("pointer mirror: rev %q, %v", rev, err)
	}
	if n, err := rc.Exists(ctx, "prompt:snap:{support}:1").Result(); err != nil || n != 1 {
		t.Errorf("snapshot mirror: %d, %v", n, err)
	}

	// One master stalls (CLIENT PAUSE): every check that runs while it is
	// paused says Redis is down, not only one that asks it at random.
	const pause = 3 * time.Second
	one := redis.NewClient(&redis.Options{Addr: addrs[1]})
	defer one.Close()
	if err := one.ClientPause(ctx, pause).Err(); err != nil {
		t.Fatal(err)
	}
	paused, checked := time.Now(), 0
	for time.Since(paused) < pause-time.Second {
		code, body := readyz(t, base)
		if time.Since(paused) >= pause {
			break // the pause ended during the check
		}
		if code != 200 || body != `{"sql":"ok","redis":"down","etcd":"disabled","mode":"degraded"}` {
			t.Fatalf("/readyz with %s paused = %d %s", addrs[1], code, body)
		}
		checked++
	}
	if checked == 0 {
		t.Fatalf("no /readyz check ended within the %v pause", pause)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := readyz(t, base)
		if code == 200 && body == `{"sql":"ok","redis":"ok","etcd":"disabled","mode":"normal"}` {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz after the pause = %d %s", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func readyz(t *testing.T, base string) (int, string) {
	t.Helper()
	code, body := call(t, "GET", base+"/readyz", "", "")
	return code, strings.TrimSpace(body)
}
