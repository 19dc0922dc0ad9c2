package main

import (
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestLoadConfig_defaults(t *testing.T) {
	c, err := loadConfig(env(nil))
	if err != nil {
		t.Fatalf("loadConfig: %v", err)
	}
	want := Config{
		WebhookBackoff: []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour, 3 * time.Hour, 6 * time.Hour},
		Addr:           "127.0.0.1:8080", DataDir: "./data", KeyPrefix: "prompt",
		RedisTimeout: 100 * time.Millisecond, ReconcileEvery: 2 * time.Second, ImportMaxBytes: 67108864,
		SessionIdleTTL: 24 * time.Hour, SessionRetention: 720 * time.Hour, IdempotencyTTL: 24 * time.Hour,
		LogLevel: slog.LevelInfo, InstanceID: c.InstanceID,
		AuditRetention: 2160 * time.Hour, AuditPruneEvery: 10 * time.Minute, LeaseMaxWaiters: 10000, LeaseMaxPerToken: 1000, LockFenceTTL: 10 * time.Minute,
		EventRetention: 168 * time.Hour, StreamsPerToken: 20, HeavyPerToken: 4, HeavyMax: 16, GuardEvery: 10 * time.Second,
		SessionMaxTurns: 10000, SessionMaxBytes: 32 << 20, SessionMaxStateKeys: 1000, SessionPageBytes: 4 << 20,
		AssembleMaxBytes: 8 << 20, AssembleMaxHistoryTurns: 1000, DiffMaxBytes: 1 << 20, DiffMaxLines: 20000, DiffCacheBytes: 16 << 20,
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second,
		IdleTimeout: 30 * time.Second, MaxConns: 16384,
		BoardMaxRecords: 100000, BoardRetention: 720 * time.Hour, BoardBatchRetention: 72 * time.Hour, IntentMaxPerSpace: 1000, BoardDedupeTTL: 168 * time.Hour,
		BoardMaxPerToken: 100, BoardIdleRetention: 168 * time.Hour,
		Etcd:                     EtcdConfig{Timeout: time.Second},
		WebhookDeliveryRetention: 720 * time.Hour,
		BundleMaxBytes:           32 << 20,
		ExposureSeriesMax:        10000,
		ExposureRetention:        2160 * time.Hour,
		OutcomeRetention:         2160 * time.Hour,
		Console:                  true,
		MCP:                      true,
		ConsoleSessionTTL:        12 * time.Hour,
		FeedScanMax:              10000,
		AuthFailuresPerMinute:    600,
	}
	if !strings.Contains(c.InstanceID, "-") {
		t.Errorf("InstanceID = %q, want hostname-pid", c.InstanceID)
	}
	if c.MySQLDSN != "" || c.RedisURL != "" || c.Tokens != nil || c.SingleInstance || c.MetricsToken != "" {
		t.Errorf("defaults: %+v", c)
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", c, want)
	}
}

func TestLoadConfig_values(t *testing.T) {
	c, err := loadConfig(env(map[string]string{
		"PROMPTD_ADDR":                     "0.0.0.0:9000",
		"PROMPTD_MYSQL_DSN":                "u:pw@tcp(db:3306)/promptd",
		"PROMPTD_REDIS_URL":                "redis://:pw@cache:6379/2",
		"PROMPTD_KEY_PREFIX":               "team-a",
		"PROMPTD_TOKENS":                   "ops:admin:0123456789abcdef0, agents:runtime:fedcba9876543210:x",
		"PROMPTD_METRICS_TOKEN":            "metrics-0123456789",
		"PROMPTD_INSTANCE_ID":              "pod-1",
		"PROMPTD_REDIS_TIMEOUT":            "250ms",
		"PROMPTD_RECONCILE_EVERY":          "5s",
		"PROMPTD_IMPORT_MAX_BYTES":         "1024",
		"PROMPTD_SESSION_IDLE_TTL":         "1h",
		"PROMPTD_SESSION_RETENTION":        "48h",
		"PROMPTD_IDEMPOTENCY_TTL":          "2h",
		"PROMPTD_LOG_LEVEL":                "debug",
		"PROMPTD_READ_HEADER_TIMEOUT":      "2s",
		"PROMPTD_READ_TIMEOUT":             "20s",
		"PROMPTD_WRITE_TIMEOUT":            "40s",
		"PROMPTD_IDLE_TIMEOUT":             "10s",
		"PROMPTD_MAX_CONNS":                "1000",
		"PROMPTD_TRUSTED_PROXIES":          "10.1.2.3/8, 192.0.2.7,2001:db8::/32",
		"PROMPTD_AUTH_FAILURES_PER_MINUTE": "0",
	}))
	if err != nil {
		t.Fatalf("loadConfig: %v", err)
	}
	want := []Token{{"ops", RoleAdmin, "0123456789abcdef0"}, {"agents", RoleRuntime, "fedcba9876543210:x"}}
	if !slices.Equal(c.Tokens, want) {
		t.Errorf("Tokens = %+v", c.Tokens)
	}
	if c.Addr != "0.0.0.0:9000" || c.KeyPrefix != "team-a" || c.InstanceID != "pod-1" || c.RedisTimeout != 250*time.Millisecond ||
		c.ReconcileEvery != 5*time.Second || c.ImportMaxBytes != 1024 || c.SessionIdleTTL != time.Hour ||
		c.SessionRetention != 48*time.Hour || c.IdempotencyTTL != 2*time.Hour || c.LogLevel != slog.LevelDebug ||
		c.ReadHeaderTimeout != 2*time.Second || c.ReadTimeout != 20*time.Second || c.WriteTimeout != 40*time.Second ||
		c.IdleTimeout != 10*time.Second || c.MaxConns != 1000 || c.AuthFailuresPerMinute != -1 ||
		fmt.Sprint(c.TrustedProxies) != "[10.0.0.0/8 192.0.2.7/32 2001:db8::/32]" {
		t.Errorf("config = %+v", c)
	}
	if s := c.LogValue().String(); strings.Contains(s, "pw") || strings.Contains(s, "0123456789abcdef0") || strings.Contains(s, "metrics-0123456789") {
		t.Errorf("LogValue leaks a secret: %s", s)
	}
}

func TestLoadConfig_invalid(t *testing.T) {
	const mysql = "u:pw@tcp(db:3306)/promptd"
	const tokens = "ops:admin:0123456789abcdef"
	for _, tc := range []struct {
		name string
		vars map[string]string
		want string // in the error
	}{
		{"bad duration", map[string]string{"PROMPTD_REDIS_TIMEOUT": "100"}, "PROMPTD_REDIS_TIMEOUT: invalid duration"},
		{"audit retention shorter than the feed's", map[string]string{"PROMPTD_AUDIT_RETENTION": "24h", "PROMPTD_EVENT_RETENTION": "48h"},
			"PROMPTD_AUDIT_RETENTION: 24h0m0s is shorter than PROMPTD_EVENT_RETENTION"},
		{"negative duration", map[string]string{"PROMPTD_SESSION_IDLE_TTL": "-1h"}, "PROMPTD_SESSION_IDLE_TTL: duration \"-1h\" must be positive"},
		{"bad reconcile", map[string]string{"PROMPTD_RECONCILE_EVERY": "soon"}, "PROMPTD_RECONCILE_EVERY"},
		{"bad bool", map[string]string{"PROMPTD_SINGLE_INSTANCE": "yes please"}, "PROMPTD_SINGLE_INSTANCE: invalid boolean"},
		{"bad size", map[string]string{"PROMPTD_IMPORT_MAX_BYTES": "64MiB"}, "PROMPTD_IMPORT_MAX_BYTES: invalid size"},
		{"bad level", map[string]string{"PROMPTD_LOG_LEVEL": "loud"}, "PROMPTD_LOG_LEVEL: invalid level"},
		{"bad addr", map[string]string{"PROMPTD_ADDR": "localhost"}, "PROMPTD_ADDR: invalid listen address"},
		{"bad port", map[string]string{"PROMPTD_ADDR": "localhost:http-alt"}, "PROMPTD_ADDR: invalid port"},
		{"bad redis url", map[string]string{"PROMPTD_REDIS_URL": "http://h:6379"}, "PROMPTD_REDIS_URL: invalid Redis URL"},
		{"redis url with addr, not a cluster", map[string]string{"PROMPTD_REDIS_URL": "redis://a:6379?addr=b:6379"}, "set PROMPTD_REDIS_CLUSTER=true"},
		{"bad cluster bool", map[string]string{"PROMPTD_REDIS_CLUSTER": "on"}, "PROMPTD_REDIS_CLUSTER: invalid boolean"},
		{"cluster without url", map[string]string{"PROMPTD_REDIS_CLUSTER": "true"}, "PROMPTD_REDIS_CLUSTER is set without PROMPTD_REDIS_URL"},
		{"cluster bad scheme", map[string]string{"PROMPTD_REDIS_CLUSTER": "true", "PROMPTD_REDIS_URL": "http://a:6379"}, "PROMPTD_REDIS_URL: invalid Redis URL"},
		{"cluster bad addr", map[string]string{"PROMPTD_REDIS_CLUSTER": "true", "PROMPTD_REDIS_URL": "redis://a:6379?addr=b"}, "PROMPTD_REDIS_URL: invalid Redis URL"},
		{"cluster unknown option", map[string]string{"PROMPTD_REDIS_CLUSTER": "true", "PROMPTD_REDIS_URL": "redis://a:6379?db=2"}, "PROMPTD_REDIS_URL: invalid Redis URL"},
		{"cluster database", map[string]string{"PROMPTD_REDIS_CLUSTER": "true", "PROMPTD_REDIS_URL": "redis://a:6379/2"}, "only database 0"},
		{"bad dsn", map[string]string{"PROMPTD_MYSQL_DSN": "not a dsn", "PROMPTD_TOKENS": tokens, "PROMPTD_SINGLE_INSTANCE": "true"}, "PROMPTD_MYSQL_DSN"},
		{"prefix brace", map[string]string{"PROMPTD_KEY_PREFIX": "a{b}"}, "PROMPTD_KEY_PREFIX"},
		{"prefix colon end", map[string]string{"PROMPTD_KEY_PREFIX": "prompt:"}, "must not start or end with ':'"},
		{"prefix colon start", map[string]string{"PROMPTD_KEY_PREFIX": ":prompt"}, "must not start or end with ':'"},
		{"prefix space", map[string]string{"PROMPTD_KEY_PREFIX": "a b"}, "spaces"},
		{"token format", map[string]string{"PROMPTD_TOKENS": "ops-admin-0123456789abcdef"}, "PROMPTD_TOKENS: entry 1: want name:role:secret"},
		{"token role", map[string]string{"PROMPTD_TOKENS": "ops:root:0123456789abcdef"}, "role must be admin or runtime"},
		{"token short", map[string]string{"PROMPTD_TOKENS": "ops:admin:short"}, "at least 16"},
		{"token name", map[string]string{"PROMPTD_TOKENS": "o p:admin:0123456789abcdef"}, "entry 1: name"},
		{"token dup name", map[string]string{"PROMPTD_TOKENS": tokens + "," + tokens + "x"}, "defined twice"},
		{"token dup secret", map[string]string{"PROMPTD_TOKENS": tokens + ",b:runtime:0123456789abcdef"}, "also another token's"},
		{"metrics token short", map[string]string{"PROMPTD_METRICS_TOKEN": "m"}, "PROMPTD_METRICS_TOKEN: must be at least 16 characters"},
		{"metrics token 15", map[string]string{"PROMPTD_METRICS_TOKEN": "0123456789abcde"}, "PROMPTD_METRICS_TOKEN: must be at least 16"},
		{"metrics token space", map[string]string{"PROMPTD_METRICS_TOKEN": "0123456789 abcdef"}, "without spaces"},
		{"bad read timeout", map[string]string{"PROMPTD_READ_TIMEOUT": "30"}, "PROMPTD_READ_TIMEOUT: invalid duration"},
		{"zero write timeout", map[string]string{"PROMPTD_WRITE_TIMEOUT": "0s"}, "PROMPTD_WRITE_TIMEOUT: duration \"0s\" must be positive"},
		{"bad header timeout", map[string]string{"PROMPTD_READ_HEADER_TIMEOUT": "x"}, "PROMPTD_READ_HEADER_TIMEOUT"},
		{"bad idle timeout", map[string]string{"PROMPTD_IDLE_TIMEOUT": "-1s"}, "PROMPTD_IDLE_TIMEOUT"},
		{"bad max conns", map[string]string{"PROMPTD_MAX_CONNS": "many"}, "PROMPTD_MAX_CONNS: invalid count"},
		{"zero max conns", map[string]string{"PROMPTD_MAX_CONNS": "0"}, "PROMPTD_MAX_CONNS: invalid count"},
		{"bad trusted proxy", map[string]string{"PROMPTD_TRUSTED_PROXIES": "10.0.0.0/8,proxy.local"}, "PROMPTD_TRUSTED_PROXIES: invalid address or CIDR prefix"},
		{"bad auth failures", map[string]string{"PROMPTD_AUTH_FAILURES_PER_MINUTE": "-5"}, "PROMPTD_AUTH_FAILURES_PER_MINUTE: invalid count"},
		{"exposure retention under a day", map[string]string{"PROMPTD_EXPOSURE_RETENTION": "23h"},
			"PROMPTD_EXPOSURE_RETENTION: 23h0m0s is shorter than 24h0m0s"},
		{"outcome retention under the dedupe window", map[string]string{"PROMPTD_OUTCOME_RETENTION": "24h"},
			"PROMPTD_OUTCOME_RETENTION: 24h0m0s is shorter than 168h0m0s"},
		{"mysql without redis", map[string]string{"PROMPTD_MYSQL_DSN": mysql, "PROMPTD_TOKENS": tokens}, "PROMPTD_SINGLE_INSTANCE=true"},
		{"mysql without tokens", map[string]string{"PROMPTD_MYSQL_DSN": mysql, "PROMPTD_REDIS_URL": "redis://r:6379/0"}, "PROMPTD_TOKENS is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadConfig(env(tc.vars))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("loadConfig: err = %v, want one containing %q", err, tc.want)
			}
			for _, v := range tc.vars {
				if strings.Contains(v, "0123456789abcdef") && strings.Contains(err.Error(), "0123456789abcdef") {
					t.Errorf("error leaks a token secret: %v", err)
				}
			}
		})
	}
}

func TestLoadConfig_redisCluster_parsesSeedNodes(t *testing.T) {
	for _, u := range []string{
		"redis://:pw@10.0.0.1:7000?addr=10.0.0.2:7001&addr=10.0.0.3:7002",
		"redis://10.0.0.1:7000/0?addr=10.0.0.2:7001",
		"redis://10.0.0.1:7000/",
		"rediss://cache.example:6380",
	} {
		c, err := loadConfig(env(map[string]string{"PROMPTD_REDIS_URL": u, "PROMPTD_REDIS_CLUSTER": "true"}))
		if err != nil || !c.RedisCluster || c.RedisURL != u {
			t.Errorf("%s: %+v, %v", u, c, err)
		}
	}
	c, err := loadConfig(env(map[string]string{"PROMPTD_REDIS_URL": "redis://a:6379/0", "PROMPTD_REDIS_CLUSTER": "false"}))
	if err != nil || c.RedisCluster {
		t.Errorf("PROMPTD_REDIS_CLUSTER=false: %+v, %v", c, err)
	}
	c, _ = loadConfig(env(map[string]string{"PROMPTD_REDIS_URL": "redis://:pw@a:6379?addr=b:6379", "PROMPTD_REDIS_CLUSTER": "true"}))
	if s := c.LogValue().String(); strings.Contains(s, "pw") || !strings.Contains(s, "redis_cluster=true") {
		t.Errorf("LogValue: %s", s)
	}
}

func TestLoadConfig_reportsAllErrors(t *testing.T) {
	_, err := loadConfig(env(map[string]string{"PROMPTD_REDIS_TIMEOUT": "x", "PROMPTD_ADDR": "y"}))
	if err == nil || !strings.Contains(err.Error(), "PROMPTD_REDIS_TIMEOUT") || !strings.Contains(err.Error(), "PROMPTD_ADDR") {
		t.Fatalf("err = %v, want both problems", err)
	}
}

func TestLoadConfig_mysqlWithoutRedis_singleInstance_isAccepted(t *testing.T) {
	c, err := loadConfig(env(map[string]string{
		"PROMPTD_MYSQL_DSN":       "u:pw@tcp(db:3306)/promptd",
		"PROMPTD_TOKENS":          "ops:admin:0123456789abcdef",
		"PROMPTD_SINGLE_INSTANCE": "true",
	}))
	if err != nil || !c.SingleInstance {
		t.Fatalf("loadConfig: %+v, %v", c, err)
	}
}

func TestLoadConfig_readsExactlyConfigVars(t *testing.T) {
	read := map[string]bool{}
	_, _ = loadConfig(func(k string) string { read[k] = true; return "" })
	got := slices.Sorted(maps.Keys(read))
	want := slices.Sorted(slices.Values(configVars))
	if !slices.Equal(got, want) {
		t.Fatalf("loadConfig reads %v,\nconfigVars lists %v", got, want)
	}
}
