package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
)

// Two instances on MySQL and etcd, no Redis, with a reconciler that never
// runs within the test: a pointer switch through one is served by the
// other within seconds, so the change reached it through the bus (an etcd
// watch).
func TestMain_mysqlAndEtcd_noRedis_pointerSwitchReachesTheOtherInstance(t *testing.T) {
	const adm, rt = "etcd-admin-secret-01234", "etcd-runtime-secret-0123"
	dsn := testenv.MySQLDSN(t)
	prefix := strings.ReplaceAll("b"+locks.NewToken()[:8], "-", "x")
	var bases []string
	for _, id := range []string{"bus-a", "bus-b"} {
		cfg, err := loadConfig(env(map[string]string{
			"PROMPTD_MYSQL_DSN":       dsn,
			"PROMPTD_TOKENS":          "ops:admin:" + adm + ",agent:runtime:" + rt,
			"PROMPTD_ETCD_ENDPOINTS":  strings.Join(testenv.EtcdEndpoints(t), ","),
			"PROMPTD_KEY_PREFIX":      prefix,
			"PROMPTD_INSTANCE_ID":     id,
			"PROMPTD_RECONCILE_EVERY": "1h",
		}))
		if err != nil {
			t.Fatal(err)
		}
		bases = append(bases, "http://"+openMain(t, cfg, &lockedBuffer{}).Addr().String())
	}
	a, b := bases[0], bases[1]
	for i, system := range []string{"one", "two"} {
		body := fmt.Sprintf(`{"base_version": %d, "config": {"system": %q}}`, i, system)
		if code, out := call(t, "POST", a+"/v1/agents/bus/versions", adm, body); code != 201 {
			t.Fatalf("create version: %d %s", code, out)
		}
	}
	if code, out := call(t, "PUT", a+"/v1/agents/bus/envs/prod", adm, `{"version": 1, "expected_revision": 0}`); code != 201 {
		t.Fatalf("point prod at 1: %d %s", code, out)
	}
	resolved := func() int {
		code, out := call(t, "GET", b+"/v1/agents/bus/envs/prod/prompt", rt, "")
		var p struct{ Version int }
		if code != 200 || json.Unmarshal([]byte(out), &p) != nil {
			t.Fatalf("resolve on the other instance: %d %s", code, out)
		}
		return p.Version
	}
	if v := resolved(); v != 1 { // now cached on b
		t.Fatalf("b resolves version %d, want 1", v)
	}
	if code, out := call(t, "PUT", a+"/v1/agents/bus/envs/prod", adm, `{"version": 2, "expected_revision": 1}`); code != 200 {
		t.Fatalf("switch prod to 2: %d %s", code, out)
	}
	switched := time.Now()
	for resolved() != 2 {
		if time.Since(switched) > 5*time.Second {
			t.Fatalf("b still serves version 1 %v after the switch on a (reconciler every 1h)", time.Since(switched).Round(time.Millisecond))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("b served the switch %v after a acknowledged it", time.Since(switched).Round(time.Millisecond))
}
