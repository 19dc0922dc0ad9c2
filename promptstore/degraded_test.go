package promptstore_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/sqlstore"
)

func TestDegraded_redisStopped_writesOnSQLAlone_resolveAnswers(t *testing.T) {
	db := testenv.OpenDB(t, sqlstore.Config{MySQLDSN: testenv.MySQLDSN(t)}, migrations())
	srv := testenv.StartRedis(t)
	// As cmd/promptd builds it: every call bounded by the Redis timeout.
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1,
		DialTimeout: 50 * time.Millisecond, ReadTimeout: 50 * time.Millisecond, WriteTimeout: 50 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	keys := locks.Keys{Prefix: "deg"}
	s := newStore(t, db, withRedis(t, promptstore.Options{Keys: keys,
		Locker: locks.NewRedis(c, locks.RedisOptions{Keys: keys, Timeout: 50 * time.Millisecond}, locks.Options{})}, c, 50*time.Millisecond))
	ctx := ctxT(t)
	if _, err := s.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "a", BaseVersion: 0, Config: cfg("v1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SwitchPointer(ctx, promptstore.SwitchInput{Agent: "a", Env: "prod", Version: 1, ExpectedRevision: new(int64)}); err != nil {
		t.Fatal(err)
	}
	srv.Pause()
	defer srv.Resume()
	start := time.Now()
	for i := 1; i <= 5; i++ {
		if _, err := s.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "a", BaseVersion: i, Config: cfg(fmt.Sprint("v", i+1))}); err != nil {
			t.Fatalf("create with Redis stopped: %v", err)
		}
		rev := int64(i)
		if _, err := s.SwitchPointer(ctx, promptstore.SwitchInput{Agent: "a", Env: "prod", Version: i + 1, ExpectedRevision: &rev}); err != nil {
			t.Fatalf("switch with Redis stopped: %v", err)
		}
	}
	var vc *promptstore.VersionConflict
	if _, err := s.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "a", BaseVersion: 3, Config: cfg("stale")}); !errors.As(err, &vc) {
		t.Fatalf("stale base with Redis stopped: %v", err)
	}
	ok := 0
	for i := 0; i < 1000; i++ {
		if p, err := s.ResolvePrompt(ctx, s, promptstore.Request{Agent: "a", Env: "prod"}); err == nil && p.Version == 6 {
			ok++
		}
	}
	t.Logf("Redis stopped: 5 creates + 5 switches on SQL conditions in %v, stale base rejected, resolve %d/1000", time.Since(start).Round(time.Millisecond), ok)
	if ok != 1000 {
		t.Fatalf("resolve answered %d/1000", ok)
	}
}

func TestDegraded_mariadbStopped_resolveFromCache_writesUnavailable_nothingHalfApplied(t *testing.T) {
	m := testenv.StartMariaDB(t)
	db := testenv.OpenDB(t, sqlstore.Config{MySQLDSN: m.DSN()}, migrations())
	s := newStore(t, db, promptstore.Options{SQLTimeout: time.Second})
	ctx := ctxT(t)
	for i := 0; i < 2; i++ {
		if _, err := s.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "a", BaseVersion: i, Config: cfg(fmt.Sprint("v", i+1))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SwitchPointer(ctx, promptstore.SwitchInput{Agent: "a", Env: "prod", Version: 1, ExpectedRevision: new(int64)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ResolvePrompt(ctx, s, promptstore.Request{Agent: "a", Env: "prod"}); err != nil {
		t.Fatal(err)
	}
	m.Pause()
	ok := 0
	for i := 0; i < 1000; i++ {
		if p, err := s.ResolvePrompt(ctx, s, promptstore.Request{Agent: "a", Env: "prod"}); err == nil && p.Version == 1 {
			ok++
		}
	}
	start := time.Now()
	_, errCreate := s.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "a", BaseVersion: 2, Config: cfg("v3")})
	rev := int64(1)
	_, errSwitch := s.SwitchPointer(ctx, promptstore.SwitchInput{Agent: "a", Env: "prod", Version: 2, ExpectedRevision: &rev})
	took := time.Since(start)
	m.Resume()
	if !errors.Is(errCreate, promptstore.ErrUnavailable) || !errors.Is(errSwitch, promptstore.ErrUnavailable) {
		t.Fatalf("writes with MariaDB stopped: %v / %v", errCreate, errSwitch)
	}
	t.Logf("MariaDB stopped: resolve from cache %d/1000; create and switch answered unavailable in %v", ok, took.Round(time.Millisecond))
	if ok != 1000 {
		t.Fatalf("resolve answered %d/1000 from cache", ok)
	}
	// After it returns: the failed writes left nothing behind; the next ones work.
	e, err := s.GetEnv(ctx, "a", "prod")
	if err != nil || e.Version != 1 || e.Revision != 1 {
		t.Fatalf("env after the outage: %+v %v", e, err)
	}
	vs, _, err := s.ListVersions(ctx, "a", promptstore.Page{Limit: 10})
	if err != nil || len(vs) != 2 {
		t.Fatalf("versions after the outage: %d %v", len(vs), err)
	}
	if _, err := s.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "a", BaseVersion: 2, Config: cfg("v3")}); err != nil {
		t.Fatalf("create after the outage: %v", err)
	}
}
