package testenv

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net"
	"os"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
)

const (
	envRequire     = "PROMPTD_REQUIRE_INTEGRATION"
	envRedisURL    = "PROMPTD_TEST_REDIS_URL"
	envMySQLDSN    = "PROMPTD_TEST_MYSQL_DSN"
	envRedisServer = "PROMPTD_TEST_REDIS_SERVER"
)

// Required reports whether integration tests must run: a missing server
// then fails the test instead of skipping it.
func Required() bool { return os.Getenv(envRequire) == "1" }

// unavailable skips the test, or fails it when Required.
func unavailable(t testing.TB, why string) {
	t.Helper()
	if Required() {
		t.Fatalf("integration test: %s, but %s=1", why, envRequire)
	}
	t.Skipf("integration test: %s; run ./scripts/test.sh", why)
}

// RedisURL returns the URL of the shared test Redis. Tests share it, so
// they must use keys of their own.
func RedisURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(envRedisURL)
	if u == "" {
		unavailable(t, envRedisURL+" not set")
	}
	return u
}

// RedisClient returns a client of the shared test Redis, checked with PING
// and closed when the test ends.
func RedisClient(t testing.TB) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(RedisURL(t))
	if err != nil {
		t.Fatalf("testenv: %s: %v", envRedisURL, err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("testenv: ping %s: %v", opt.Addr, err)
	}
	return c
}

// MySQLDSN creates an empty database (utf8mb4, binary collation) on the
// shared test server and returns a DSN for it. The database is dropped when
// the test ends.
func MySQLDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(envMySQLDSN)
	if dsn == "" {
		unavailable(t, envMySQLDSN+" not set")
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("testenv: %s: %v", envMySQLDSN, err)
	}
	server := cfg.Clone()
	server.DBName = ""
	connector, err := mysql.NewConnector(server)
	if err != nil {
		t.Fatalf("testenv: %s: %v", envMySQLDSN, err)
	}
	db := sql.OpenDB(connector)
	name := "promptd_t_" + randomHex(4)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = db.ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
	if err != nil {
		_ = db.Close()
		t.Fatalf("testenv: create database on %s: %v", cfg.Addr, err)
	}
	t.Cleanup(func() {
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			t.Errorf("testenv: drop database %s: %v", name, err)
		}
	})
	cfg.DBName = name
	return cfg.FormatDSN()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails
	return hex.EncodeToString(b)
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
