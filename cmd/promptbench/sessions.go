package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
)

const benchSessions = 1000

// createSessions creates n sessions and returns their ids.
func createSessions(ctx context.Context, c config, kind string, n int) ([]string, error) {
	agent := c.prefix + "-sess"
	if err := do(ctx, "POST", c.url+"/v1/agents/"+agent+"/versions", c.admin, map[string]any{"base_version": 0,
		"config": map[string]any{"system": "bench"}}, 201, nil); err != nil && !strings.Contains(err.Error(), "409") {
		return nil, err
	}
	if err := do(ctx, "PUT", c.url+"/v1/agents/"+agent+"/envs/prod", c.admin, map[string]any{"version": 1, "expected_revision": 0}, 201, nil); err != nil && !strings.Contains(err.Error(), "409") {
		return nil, err
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%s-%d", c.prefix, kind, i)
		if err := do(ctx, "POST", c.url+"/v1/sessions", c.runtime, map[string]any{"session_id": ids[i], "agent": agent, "env": "prod"}, 201, nil); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// benchAppend: 64 writers append one turn at a time to 1,000 sessions
// (each session has one writer), against a bare conditional UPDATE +
// INSERT of the same rows in the same MariaDB, in turns (loadPair). With
// leased, each session held its lease once (acquired and released before
// the timed part), so every unfenced append has to check that no lease is
// held now: the write rule's full price.
func benchAppend(ctx context.Context, c config, t *table, leased bool) error {
	kind, name, target := "app", "turn append (%d sessions, %d writers)", ">= 0.5x"
	if leased {
		kind, name, target = "appl", "turn append, sessions that held a lease (%d sessions, %d writers)", ""
	}
	ids, err := createSessions(ctx, c, kind, benchSessions)
	if err != nil {
		return err
	}
	if leased {
		for _, id := range ids {
			var l struct{ Token string }
			if err := do(ctx, "POST", c.url+"/v1/sessions/"+id+"/lease", c.runtime, map[string]any{"holder": "bench", "ttl_ms": 5000}, 200, &l); err != nil {
				return err
			}
			if err := do(ctx, "DELETE", c.url+"/v1/sessions/"+id+"/lease", c.runtime, nil, 204, nil, "Lease-Token", l.Token); err != nil {
				return err
			}
		}
	}
	revs := make([]int64, len(ids))
	content := strings.Repeat("x", 200)
	subject := named{fmt.Sprintf(name, len(ids), c.conns), func(ctx context.Context, w, i int) error {
		s := w + (i%(len(ids)/c.conns))*c.conns
		var out struct{ Revision int64 }
		err := do(ctx, "POST", c.url+"/v1/sessions/"+ids[s]+"/turns", c.runtime, map[string]any{"expected_revision": revs[s],
			"turns": []map[string]any{{"role": "user", "content": content}}}, 201, &out)
		if err == nil {
			revs[s] = out.Revision
		}
		return err
	}}
	if c.mysqlDSN == "" {
		t.add(load(ctx, subject.name, c.conns, c.duration, subject.fn), result{}, target)
		return nil
	}
	ref, done, err := appendReference(ctx, c, len(ids), content)
	if err != nil {
		return err
	}
	defer done()
	r, rRef := loadPair(ctx, c.conns, c.duration, c.rounds, subject, ref)
	t.add(r, rRef, target)
	return nil
}

// appendReference creates the reference's tables and rows and returns its
// load function: BEGIN; UPDATE ... WHERE id = ? AND revision = ?; INSERT
// ...; COMMIT, through database/sql with the DSN as given.
func appendReference(ctx context.Context, c config, n int, content string) (named, func(), error) {
	db, err := sql.Open("mysql", c.mysqlDSN)
	if err != nil {
		return named{}, nil, err
	}
	db.SetMaxOpenConns(c.conns)
	db.SetMaxIdleConns(c.conns) // between turns of loadPair the pool stays warm
	fail := func(err error) (named, func(), error) { db.Close(); return named{}, nil, err }
	for _, q := range []string{`DROP TABLE IF EXISTS bench_turns`, `DROP TABLE IF EXISTS bench_sessions`,
		`CREATE TABLE bench_sessions (id VARCHAR(128) PRIMARY KEY, revision BIGINT NOT NULL, turns BIGINT NOT NULL) ENGINE=InnoDB`,
		`CREATE TABLE bench_turns (session_id VARCHAR(128) NOT NULL, seq BIGINT NOT NULL, role VARCHAR(16) NOT NULL, content LONGTEXT NOT NULL,
			created_at_ms BIGINT NOT NULL, PRIMARY KEY (session_id, seq)) ENGINE=InnoDB`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fail(err)
		}
	}
	for i := 0; i < n; i++ {
		if _, err := db.ExecContext(ctx, `INSERT INTO bench_sessions VALUES (?, 0, 0)`, fmt.Sprint("ref-", i)); err != nil {
			return fail(err)
		}
	}
	revs := make([]int64, n)
	fn := func(ctx context.Context, w, i int) error {
		s := w + (i%(n/c.conns))*c.conns
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		res, err := tx.ExecContext(ctx, `UPDATE bench_sessions SET revision = revision + 1, turns = turns + 1 WHERE id = ? AND revision = ?`,
			fmt.Sprint("ref-", s), revs[s])
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("conflict")
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO bench_turns VALUES (?, ?, 'user', ?, ?)`, fmt.Sprint("ref-", s), revs[s]+1, content,
			time.Now().UnixMilli()); err != nil {
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		revs[s]++
		return nil
	}
	done := func() {
		for _, q := range []string{`DROP TABLE bench_turns`, `DROP TABLE bench_sessions`} {
			_, _ = db.ExecContext(context.WithoutCancel(ctx), q)
		}
		db.Close()
	}
	return named{"bare UPDATE+INSERT transaction (same rows)", fn}, done, nil
}

// benchLease: session lease acquire + release cycles, one session per
// writer, against SET NX PX + DEL on the same Redis.
func benchLease(ctx context.Context, c config, t *table) error {
	ids, err := createSessions(ctx, c, "lease", c.conns)
	if err != nil {
		return err
	}
	subject := named{"session lease acquire+release", func(ctx context.Context, w, _ int) error {
		var l struct{ Token string }
		if err := do(ctx, "POST", c.url+"/v1/sessions/"+ids[w]+"/lease", c.runtime, map[string]any{"holder": "bench", "ttl_ms": 5000}, 200, &l); err != nil {
			return err
		}
		return do(ctx, "DELETE", c.url+"/v1/sessions/"+ids[w]+"/lease", c.runtime, nil, 204, nil, "Lease-Token", l.Token)
	}}
	if c.redisURL == "" {
		t.add(load(ctx, subject.name, c.conns, c.duration, subject.fn), result{}, "")
		return nil
	}
	opt, err := redis.ParseURL(c.redisURL)
	if err != nil {
		return err
	}
	opt.PoolSize = c.conns
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	r, ref := loadPair(ctx, c.conns, c.duration, c.rounds, subject, named{"SET NX PX + DEL (same Redis)", func(ctx context.Context, w, _ int) error {
		key := fmt.Sprintf("bench:{%s}:%d", c.prefix, w)
		ok, err := rdb.SetNX(ctx, key, "token", 5*time.Second).Result()
		if err != nil || !ok {
			return fmt.Errorf("setnx: %v %v", ok, err)
		}
		return rdb.Del(ctx, key).Err()
	}})
	t.add(r, ref, "")
	return nil
}
