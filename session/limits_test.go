package session_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"gorm.io/gorm"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/session"
	"github.com/promptd/promptd/sqlstore"
)

// limitedService is a session service over w's store with o's limits.
func limitedService(t *testing.T, w *world, db *gorm.DB, o session.Options) *session.Service {
	b := w.base
	o.Store, o.DB, o.Bus, o.Locker, o.Keys, o.Resolver, o.Events, o.Instance = b.Store, b.DB, b.Bus, b.Locker, b.Keys, b.Resolver, b.Events, b.Instance
	return session.New(o)
}

func wantLimit(t *testing.T, err error, name string, limit int64) {
	t.Helper()
	var le *promptstore.LimitError
	if !errors.As(err, &le) || le.Name != name || le.Limit != limit {
		t.Fatalf("err = %v, want limit %s (%d)", err, name, limit)
	}
}

func textTurns(n, size int) []session.TurnInput {
	out := make([]session.TurnInput, n)
	for i := range out {
		out[i] = turn(strings.Repeat("x", size-2)) // the quotes make size
	}
	return out
}

func TestAppend_overMaxTurns_isRefusedAndWritesNothing(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		ss := limitedService(t, w, db, session.Options{MaxSessionTurns: 5})
		ctx := ctxT(t)
		if _, _, err := ss.Create(ctx, session.CreateInput{SessionID: "lt", Agent: "a", Env: "prod"}); err != nil {
			t.Fatal(err)
		}
		if _, err := ss.Append(ctx, "lt", session.WriteCondition{ExpectedRevision: rev(0)}, textTurns(3, 10)); err != nil {
			t.Fatal(err)
		}
		_, err := ss.Append(ctx, "lt", session.WriteCondition{ExpectedRevision: rev(1)}, textTurns(3, 10))
		wantLimit(t, err, session.LimitTurns, 5)
		got, err := ss.Get(ctx, "lt", 0, 50)
		if err != nil || got.Revision != 1 || got.TurnCount != 3 || len(got.Turns) != 3 {
			t.Fatalf("after the refusal: %+v %v", got, err)
		}
		if _, err := ss.Append(ctx, "lt", session.WriteCondition{ExpectedRevision: rev(1)}, textTurns(2, 10)); err != nil {
			t.Fatalf("up to the limit: %v", err)
		}
		// A revision conflict is still a conflict, not a limit.
		var rc *session.RevisionConflict
		if _, err := ss.Append(ctx, "lt", session.WriteCondition{ExpectedRevision: rev(1)}, textTurns(1, 10)); !errors.As(err, &rc) {
			t.Fatalf("stale revision: %v", err)
		}
	})
}

func TestAppend_overMaxBytes_isRefused(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		ss := limitedService(t, w, db, session.Options{MaxSessionBytes: 1000})
		ctx := ctxT(t)
		if _, _, err := ss.Create(ctx, session.CreateInput{SessionID: "lb", Agent: "a", Env: "prod"}); err != nil {
			t.Fatal(err)
		}
		if _, err := ss.Append(ctx, "lb", session.WriteCondition{ExpectedRevision: rev(0)}, textTurns(1, 600)); err != nil {
			t.Fatal(err)
		}
		_, err := ss.Append(ctx, "lb", session.WriteCondition{ExpectedRevision: rev(1)}, textTurns(1, 600))
		wantLimit(t, err, session.LimitBytes, 1000)
		// State values count against the same budget.
		_, err = ss.PutState(ctx, "lb", "k", 0, nil, json.RawMessage(`"`+strings.Repeat("y", 500)+`"`))
		wantLimit(t, err, session.LimitBytes, 1000)
		if _, err := ss.Append(ctx, "lb", session.WriteCondition{ExpectedRevision: rev(1)}, textTurns(1, 400)); err != nil {
			t.Fatalf("exactly at the limit: %v", err)
		}
		if got, _ := ss.Get(ctx, "lb", 0, 50); got.TurnCount != 2 {
			t.Fatalf("turn_count %d", got.TurnCount)
		}
	})
}

// 20 writers append as fast as they can, each re-reading the revision
// after a conflict: the session never holds more than its limit, and
// every writer ends with the limit error.
func TestAppend_twentyConcurrentWriters_neverPassTheTurnLimit(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		ss := limitedService(t, w, db, session.Options{MaxSessionTurns: 40})
		ctx := ctxT(t)
		if _, _, err := ss.Create(ctx, session.CreateInput{SessionID: "lc", Agent: "a", Env: "prod"}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		limited := 0
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Each writer appends until the limit refuses it (a cap per
				// writer would let one writer finish unrefused while the
				// others filled the session: 19 refused, not a bug).
				for appended := 0; appended < 100; {
					cur, err := ss.Get(ctx, "lc", 0, 1)
					if err != nil {
						t.Error(err)
						return
					}
					_, err = ss.Append(ctx, "lc", session.WriteCondition{ExpectedRevision: &cur.Revision}, textTurns(3, 10))
					var rc *session.RevisionConflict
					var le *promptstore.LimitError
					switch {
					case errors.As(err, &rc):
						continue
					case errors.As(err, &le):
						mu.Lock()
						limited++
						mu.Unlock()
						return
					case err != nil:
						t.Error(err)
						return
					}
					appended++
				}
			}()
		}
		wg.Wait()
		var count, stored int64
		db.Raw(`SELECT turns FROM sessions WHERE session_id = 'lc'`).Scan(&count)
		db.Raw(`SELECT COUNT(*) FROM session_turns WHERE session_id = 'lc'`).Scan(&stored)
		if count != stored || stored > 40 || stored < 38 || limited != 20 {
			t.Fatalf("turns %d, stored %d (limit 40), %d writers refused", count, stored, limited)
		}
	})
}

// State PUTs carry no session revision: 20 writers creating keys at once
// all pass the revision rule, and only the row's counter in the write's
// condition holds the limit.
func TestPutState_twentyConcurrentCreators_neverPassTheKeyLimit(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		ss := limitedService(t, w, db, session.Options{MaxStateKeys: 30})
		ctx := ctxT(t)
		if _, _, err := ss.Create(ctx, session.CreateInput{SessionID: "lk", Agent: "a", Env: "prod"}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		created, limited := 0, 0
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; j < 5; j++ {
					_, err := ss.PutState(ctx, "lk", fmt.Sprintf("k%d-%d", i, j), 0, nil, json.RawMessage(`1`))
					var le *promptstore.LimitError
					mu.Lock()
					switch {
					case err == nil:
						created++
					case errors.As(err, &le) && le.Name == session.LimitStateKeys:
						limited++
					default:
						t.Error(err)
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		var stored, counter int64
		db.Raw(`SELECT COUNT(*) FROM session_state WHERE session_id = 'lk'`).Scan(&stored)
		db.Raw(`SELECT state_keys FROM sessions WHERE session_id = 'lk'`).Scan(&counter)
		if created != 30 || limited != 70 || stored != 30 || counter != 30 {
			t.Fatalf("created %d, refused %d, stored %d, counter %d (limit 30)", created, limited, stored, counter)
		}
		// Updating an existing entry adds no key. (Which 30 keys were
		// created is up to the race: take one of them.)
		var taken string
		db.Raw(`SELECT state_key FROM session_state WHERE session_id = 'lk' ORDER BY state_key LIMIT 1`).Scan(&taken)
		if _, err := ss.PutState(ctx, "lk", taken, 1, nil, json.RawMessage(`2`)); err != nil {
			t.Fatalf("update at the key limit: %v", err)
		}
		var rc *session.RevisionConflict
		if _, err := ss.PutState(ctx, "lk", taken, 0, nil, json.RawMessage(`3`)); !errors.As(err, &rc) {
			t.Fatalf("creating a taken key at the limit: %v, want a revision conflict", err)
		}
	})
}

func TestPutState_valueSizeChanges_countAgainstBytes(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		ss := limitedService(t, w, db, session.Options{MaxSessionBytes: 2000})
		ctx := ctxT(t)
		if _, _, err := ss.Create(ctx, session.CreateInput{SessionID: "lv", Agent: "a", Env: "prod"}); err != nil {
			t.Fatal(err)
		}
		val := func(n int) json.RawMessage { return json.RawMessage(`"` + strings.Repeat("v", n-2) + `"`) }
		put := func(key string, expected int64, n int) error {
			_, err := ss.PutState(ctx, "lv", key, expected, nil, val(n))
			return err
		}
		if err := put("a", 0, 900); err != nil {
			t.Fatal(err)
		}
		if err := put("a", 1, 1500); err != nil { // 1 + 1500 bytes
			t.Fatal(err)
		}
		wantLimit(t, put("b", 0, 600), session.LimitBytes, 2000)
		wantLimit(t, put("a", 2, 2000), session.LimitBytes, 2000)
		if err := put("a", 2, 10); err != nil { // shrinking always passes
			t.Fatal(err)
		}
		if err := put("b", 0, 600); err != nil {
			t.Fatalf("after the shrink: %v", err)
		}
		var counter int64
		db.Raw(`SELECT size_bytes FROM sessions WHERE session_id = 'lv'`).Scan(&counter)
		if counter != 1+10+1+600 {
			t.Fatalf("size_bytes %d, want %d", counter, 1+10+1+600)
		}
	})
}

func TestGet_pageOfLargeTurns_isCutByBytes(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		ss := limitedService(t, w, db, session.Options{PageBytes: 100 << 10})
		ctx := ctxT(t)
		if _, _, err := ss.Create(ctx, session.CreateInput{SessionID: "lp", Agent: "a", Env: "prod"}); err != nil {
			t.Fatal(err)
		}
		if _, err := ss.Append(ctx, "lp", session.WriteCondition{ExpectedRevision: rev(0)}, textTurns(10, 30<<10)); err != nil {
			t.Fatal(err)
		}
		var seqs []int64
		since := int64(0)
		for pages := 0; pages < 10; pages++ {
			got, err := ss.Get(ctx, "lp", since, 50)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Turns) > 3 {
				t.Fatalf("page of %d turns of 30 KiB with a 100 KiB budget", len(got.Turns))
			}
			for _, tr := range got.Turns {
				seqs = append(seqs, tr.Seq)
			}
			if got.NextSince == nil {
				break
			}
			since = *got.NextSince
		}
		if fmt.Sprint(seqs) != "[1 2 3 4 5 6 7 8 9 10]" {
			t.Fatalf("pages gave %v", seqs)
		}
		// A turn larger than the budget still makes a page of one.
		tiny := limitedService(t, w, db, session.Options{PageBytes: 1 << 10})
		got, err := tiny.Get(ctx, "lp", 0, 50)
		if err != nil || len(got.Turns) != 1 || got.NextSince == nil || *got.NextSince != 1 {
			t.Fatalf("budget below one turn: %+v %v", got, err)
		}
	})
}

func TestTurns_history_isCutByBytesNewestFirst(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		ctx := ctxT(t)
		if _, _, err := w.sess.Create(ctx, session.CreateInput{SessionID: "lh", Agent: "a", Env: "prod"}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.sess.Append(ctx, "lh", session.WriteCondition{ExpectedRevision: rev(0)}, textTurns(10, 30<<10)); err != nil {
			t.Fatal(err)
		}
		got, err := w.sess.Turns(ctx, "lh", 0, 100<<10)
		if err != nil || len(got) != 3 {
			t.Fatalf("%d turns of 30 KiB within 100 KiB, %v", len(got), err)
		}
		if got, _ := w.sess.Turns(ctx, "lh", 0, 10<<10); len(got) != 0 {
			t.Fatalf("%d turns within a budget below one turn", len(got))
		}
	})
}

// Sessions written before the counters existed get them from their rows.
func TestMigrations_fillTheCountersOfExistingSessions(t *testing.T) {
	for _, cfg := range map[string]func() sqlstore.Config{
		sqlstore.SQLite: func() sqlstore.Config { return sqlstore.Config{SQLitePath: t.TempDir() + "/m.db"} },
		sqlstore.MySQL:  func() sqlstore.Config { return sqlstore.Config{MySQLDSN: testenv.MySQLDSN(t)} },
	} {
		var before []sqlstore.Migration
		for _, m := range migrations() {
			if m.Component != "session" || m.Version == 1 {
				before = append(before, m)
			}
		}
		db := testenv.OpenDB(t, cfg(), before)
		stmts := []string{
			`INSERT INTO sessions (session_id, agent, env, user_id, pinned_version, state, revision, fence, turns, metadata, idle_ttl_ms, created_at_ms, updated_at_ms)
				VALUES ('old', 'a', 'prod', '', 1, 'open', 2, 0, 2, '{}', 60000, 1, 1)`,
			`INSERT INTO session_turns (session_id, seq, role, content, name, tool_call_id, tool_calls, metadata, created_at_ms)
				VALUES ('old', 1, 'user', '"héllo"', '', '', NULL, '{"a":1}', 1), ('old', 2, 'assistant', 'null', 'bot', '', '[]', NULL, 1)`,
			`INSERT INTO session_state (session_id, state_key, value, revision, updated_at_ms) VALUES ('old', 'k', '"é"', 1, 1)`,
		}
		for _, q := range stmts {
			if err := db.Exec(q).Error; err != nil {
				t.Fatal(err)
			}
		}
		if err := sqlstore.Migrate(ctxT(t), db, migrations()...); err != nil {
			t.Fatal(err)
		}
		var row struct{ SizeBytes, StateKeys int64 }
		if err := db.Raw(`SELECT size_bytes, state_keys FROM sessions WHERE session_id = 'old'`).Scan(&row).Error; err != nil {
			t.Fatal(err)
		}
		// "héllo" is 8 bytes, {"a":1} 7, null 4, bot 3, [] 2, k 1, "é" 4.
		if row.SizeBytes != 8+7+4+3+2+1+4 || row.StateKeys != 1 {
			t.Fatalf("counters %+v", row)
		}
	}
}
