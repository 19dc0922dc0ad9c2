package main

import (
	"log/slog"
	"net/url"

	"github.com/go-sql-driver/mysql"
)

// LogValue shows the configuration in logs without its secrets: token
// names but not their secrets, the DSN and Redis URL without passwords.
func (c Config) LogValue() slog.Value {
	names := make([]string, len(c.Tokens))
	for i, t := range c.Tokens {
		names[i] = t.Name + ":" + t.Role
	}
	return slog.GroupValue(
		slog.String("addr", c.Addr),
		slog.String("data_dir", c.DataDir),
		slog.String("mysql_dsn", redactDSN(c.MySQLDSN)),
		slog.String("redis_url", redactURL(c.RedisURL)),
		slog.Bool("redis_cluster", c.RedisCluster),
		slog.Bool("single_instance", c.SingleInstance),
		slog.String("key_prefix", c.KeyPrefix),
		slog.Any("tokens", names),
		slog.Bool("metrics_token", c.MetricsToken != ""),
		slog.String("instance_id", c.InstanceID),
		slog.String("redis_timeout", c.RedisTimeout.String()),
		slog.String("reconcile_every", c.ReconcileEvery.String()),
		slog.Int64("import_max_bytes", c.ImportMaxBytes),
		slog.String("session_idle_ttl", c.SessionIdleTTL.String()),
		slog.String("session_retention", c.SessionRetention.String()),
		slog.String("idempotency_ttl", c.IdempotencyTTL.String()),
		slog.String("log_level", c.LogLevel.String()),
		slog.String("audit_retention", c.AuditRetention.String()),
		slog.Int("lease_max_waiters", c.LeaseMaxWaiters),
		slog.Int("lease_max_per_token", c.LeaseMaxPerToken),
		slog.String("lock_fence_ttl", c.LockFenceTTL.String()),
		slog.String("read_header_timeout", c.ReadHeaderTimeout.String()),
		slog.String("read_timeout", c.ReadTimeout.String()),
		slog.String("write_timeout", c.WriteTimeout.String()),
		slog.String("idle_timeout", c.IdleTimeout.String()),
		slog.Int("max_conns", c.MaxConns),
		slog.Int64("board_max_records", c.BoardMaxRecords),
		slog.String("board_retention", c.BoardRetention.String()),
		slog.String("board_dedupe_ttl", c.BoardDedupeTTL.String()),
		slog.Int64("board_max_per_token", c.BoardMaxPerToken),
		slog.String("board_idle_retention", c.BoardIdleRetention.String()),
	)
}

func redactDSN(dsn string) string {
	if dsn == "" {
		return ""
	}
	mc, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "(invalid)"
	}
	if mc.Passwd != "" {
		mc.Passwd = "xxxxx"
	}
	return mc.FormatDSN()
}

func redactURL(u string) string {
	if u == "" {
		return ""
	}
	p, err := url.Parse(u)
	if err != nil {
		return "(invalid)"
	}
	return p.Redacted()
}
