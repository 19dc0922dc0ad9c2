package testenv_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"github.com/promptd/promptd/internal/harness/testenv"
)

func TestRedisClient_answersPing(t *testing.T) {
	c := testenv.RedisClient(t)
	if got, err := c.Ping(context.Background()).Result(); err != nil || got != "PONG" {
		t.Fatalf("PING = %q, %v; want PONG", got, err)
	}
	if !strings.HasPrefix(testenv.RedisURL(t), "redis://") {
		t.Errorf("RedisURL = %q; want a redis:// URL", testenv.RedisURL(t))
	}
}

func TestMySQLDSN_givesEmptyCaseSensitiveDatabase_droppedAtCleanup(t *testing.T) {
	ctx := context.Background()
	other := openDB(t, testenv.MySQLDSN(t)) // skips without a server
	var name string
	t.Run("use", func(t *testing.T) {
		dsn := testenv.MySQLDSN(t)
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		name = cfg.DBName
		if !strings.HasPrefix(name, "promptd_t_") || !cfg.ParseTime {
			t.Errorf("DSN %q: want database promptd_t_* and parseTime", dsn)
		}
		db := openDB(t, dsn)

		var tables int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE()").Scan(&tables); err != nil {
			t.Fatal(err)
		}
		if tables != 0 {
			t.Errorf("new database has %d tables; want 0", tables)
		}
		mustExec(t, db, "CREATE TABLE prompts (id VARCHAR(64) PRIMARY KEY, created DATETIME(6) NOT NULL)")
		mustExec(t, db, "INSERT INTO prompts (id, created) VALUES ('Abc', NOW(6))")
		var created time.Time // parseTime
		if err := db.QueryRowContext(ctx, "SELECT created FROM prompts WHERE id = 'Abc'").Scan(&created); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM prompts WHERE id = 'abc'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("id = 'abc' matched 'Abc': collation is not binary")
		}
	})
	if name == "" {
		return // the subtest failed
	}
	var n int
	if err := other.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = ?", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("database %s still exists after its test ended", name)
	}
}

func TestStartRedis_killThenRestart_comesBackEmpty(t *testing.T) {
	ctx := context.Background()
	s := testenv.StartRedis(t)
	c := s.Client(t)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	pid := s.PID()

	s.Kill()
	if s.PID() != 0 {
		t.Errorf("PID after Kill = %d; want 0", s.PID())
	}
	if err := c.Get(ctx, "k").Err(); err == nil {
		t.Fatal("GET after Kill succeeded")
	}

	s.Restart()
	if s.PID() == pid || s.PID() == 0 {
		t.Errorf("PID after Restart = %d; want a new process (was %d)", s.PID(), pid)
	}
	// A fresh client: c's pool may still hold the dead connections.
	if err := s.Client(t).Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET k after Restart: err = %v; want redis.Nil", err)
	}
	opt, err := redis.ParseURL(s.URL())
	if err != nil || opt.Addr != s.Addr() {
		t.Errorf("URL %q does not name Addr %q (%v)", s.URL(), s.Addr(), err)
	}
}

func TestStartRedis_pause_stallsUntilResume(t *testing.T) {
	ctx := context.Background()
	s := testenv.StartRedis(t)
	c := s.Client(t)
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}

	s.Pause()
	start := time.Now()
	err := c.Ping(ctx).Err()
	var netErr interface{ Timeout() bool }
	if !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Errorf("PING to a paused server: err = %v; want a timeout", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("PING to a paused server took %v; want about the 200ms read timeout", d)
	}

	s.Resume()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Resume: %v", err)
	}
}

func openDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func mustExec(t *testing.T, db *sql.DB, query string) {
	t.Helper()
	if _, err := db.ExecContext(context.Background(), query); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func TestStartMariaDB_killRestart_keepsCommittedRows(t *testing.T) {
	m := testenv.StartMariaDB(t)
	db := openDB(t, m.DSN())
	mustExec(t, db, "CREATE TABLE t (id INT PRIMARY KEY)")
	mustExec(t, db, "INSERT INTO t VALUES (1)")
	m.Kill()
	m.Restart()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM t").Scan(&n); err != nil || n != 1 {
		t.Fatalf("after kill -9 and restart: %d rows, %v", n, err)
	}
}

func TestClusterURL_parsesBackToEveryNode(t *testing.T) {
	addrs := []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"}
	u := testenv.ClusterURL(addrs)
	o, err := redis.ParseClusterURL(u)
	if err != nil || strings.Join(o.Addrs, ",") != strings.Join(addrs, ",") {
		t.Fatalf("ParseClusterURL(%q) = %v, %v; want %v", u, o, err, addrs)
	}
}
