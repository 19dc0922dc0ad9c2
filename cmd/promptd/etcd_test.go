package main

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
)

func TestLoadConfig_mysqlWithEtcdAndNoRedis_isAllowed(t *testing.T) {
	c, err := loadConfig(env(map[string]string{
		"PROMPTD_MYSQL_DSN":      "u:p@tcp(127.0.0.1:3306)/promptd",
		"PROMPTD_TOKENS":         "ops:admin:etcd-admin-secret-0123",
		"PROMPTD_ETCD_ENDPOINTS": "http://10.0.0.1:2379, http://10.0.0.2:2379,http://10.0.0.3:2379",
		"PROMPTD_ETCD_USERNAME":  "promptd",
		"PROMPTD_ETCD_PASSWORD":  "pw",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Etcd.Endpoints) != 3 || c.Etcd.Endpoints[1] != "http://10.0.0.2:2379" || c.Etcd.Username != "promptd" || c.Etcd.Timeout <= 0 {
		t.Fatalf("etcd config = %+v", c.Etcd)
	}
}

func TestLoadConfig_badEtcdOptions_areReported(t *testing.T) {
	_, err := loadConfig(env(map[string]string{
		"PROMPTD_ETCD_ENDPOINTS": "10.0.0.1:2379",
		"PROMPTD_ETCD_CERT_FILE": "/etc/promptd/client.pem",
		"PROMPTD_ETCD_USERNAME":  "promptd",
		"PROMPTD_ETCD_TIMEOUT":   "0s",
	}))
	for _, name := range []string{"PROMPTD_ETCD_ENDPOINTS", "PROMPTD_ETCD_CERT_FILE", "PROMPTD_ETCD_USERNAME", "PROMPTD_ETCD_TIMEOUT"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("invalid %s not reported: %v", name, err)
		}
	}
}

// Two instances on MySQL and etcd, no Redis: both start, a lease taken
// through one is held for the other, and the lock is an etcd key.
func TestMain_mysqlAndEtcd_noRedis_runsSeveralInstances(t *testing.T) {
	const adm, rt = "etcd-admin-secret-01234", "etcd-runtime-secret-0123"
	dsn := testenv.MySQLDSN(t)
	eps := testenv.EtcdEndpoints(t)
	prefix := "e" + locks.NewToken()[:8]
	var mains []*Main
	for _, id := range []string{"etcd-a", "etcd-b"} {
		cfg, err := loadConfig(env(map[string]string{
			"PROMPTD_MYSQL_DSN":      dsn,
			"PROMPTD_TOKENS":         "ops:admin:" + adm + ",agent:runtime:" + rt,
			"PROMPTD_ETCD_ENDPOINTS": strings.Join(eps, ","),
			"PROMPTD_KEY_PREFIX":     strings.ReplaceAll(prefix, "-", "x"),
			"PROMPTD_INSTANCE_ID":    id,
		}))
		if err != nil {
			t.Fatal(err)
		}
		mains = append(mains, openMain(t, cfg, &lockedBuffer{}))
	}
	if _, ok := mains[0].locker.Backend().(*locks.EtcdBackend); !ok {
		t.Fatalf("backend = %T, want *locks.EtcdBackend", mains[0].locker.Backend())
	}
	a, b := "http://"+mains[0].Addr().String(), "http://"+mains[1].Addr().String()
	g := must(t, 200)(callJSON(t, "POST", a+"/v1/leases", rt, `{"resources": ["order:1"], "holder": "worker-1"}`))
	if code, body := callJSON(t, "POST", b+"/v1/leases", rt, `{"resources": ["order:1"], "holder": "worker-2"}`); code != 423 {
		t.Fatalf("second instance granted a held lease: %d %v", code, body)
	}
	if code, _ := callJSON(t, "DELETE", b+"/v1/leases/"+g["lease_id"].(string), rt, "", "Lease-Token", g["token"].(string)); code != 204 {
		t.Fatalf("release through the other instance = %d", code)
	}
	must(t, 200)(callJSON(t, "POST", b+"/v1/leases", rt, `{"resources": ["order:1"], "holder": "worker-2"}`))
}

// An instance configured for etcd does not start while an instance of the
// same database runs its leases on Redis, and starts once that one stopped.
func TestMain_otherLockBackendLive_refusesToStart(t *testing.T) {
	const adm = "etcd-admin-secret-01234"
	dsn := testenv.MySQLDSN(t)
	redisCfg, err := loadConfig(env(map[string]string{
		"PROMPTD_MYSQL_DSN":   dsn,
		"PROMPTD_TOKENS":      "ops:admin:" + adm,
		"PROMPTD_REDIS_URL":   testenv.RedisURL(t),
		"PROMPTD_INSTANCE_ID": "on-redis",
	}))
	if err != nil {
		t.Fatal(err)
	}
	onRedis := NewMain(redisCfg, discardLogger())
	redisCfg.Addr = "127.0.0.1:0"
	onRedis.Config = redisCfg
	ctx := context.Background()
	if err := onRedis.Open(ctx); err != nil {
		t.Fatal(err)
	}
	etcdCfg, err := loadConfig(env(map[string]string{
		"PROMPTD_MYSQL_DSN":      dsn,
		"PROMPTD_TOKENS":         "ops:admin:" + adm,
		"PROMPTD_ETCD_ENDPOINTS": strings.Join(testenv.EtcdEndpoints(t), ","),
		"PROMPTD_INSTANCE_ID":    "on-etcd",
		"PROMPTD_ADDR":           "127.0.0.1:0",
	}))
	if err != nil {
		t.Fatal(err)
	}
	onEtcd := NewMain(etcdCfg, discardLogger())
	err = onEtcd.Open(ctx)
	_ = onEtcd.Close(ctx)
	if !errors.Is(err, ErrOtherLockBackend) || !strings.Contains(err.Error(), `"on-redis" uses redis`) {
		t.Fatalf("start beside a live Redis instance: %v", err)
	}
	if err := onRedis.Close(ctx); err != nil {
		t.Fatal(err)
	}
	onEtcd = NewMain(etcdCfg, discardLogger())
	if err := onEtcd.Open(ctx); err != nil {
		t.Fatalf("start after the Redis instance stopped: %v", err)
	}
	if err := onEtcd.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
