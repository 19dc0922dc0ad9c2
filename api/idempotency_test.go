package api_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"gorm.io/gorm"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/sqlstore"
)

const versionsPath = "/v1/agents/support/versions"

func (a *app) idemRows() int64 {
	var n int64
	a.db.Raw(`SELECT COUNT(*) FROM idempotency_keys`).Scan(&n)
	return n
}

func TestIdempotency_replay_isByteIdentical_withHeader(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		body := `{"base_version": 0, "config": {"system": "one"}, "message": "m"}`
		first := a.do("POST", versionsPath, admin, body, "Idempotency-Key", "k-1")
		a.ok(first, 201)
		if first.Header().Get("Idempotent-Replayed") != "" {
			t.Error("the first answer says it is replayed")
		}
		before := a.counts()
		// The same body with other spacing and key order is the same request.
		again := a.do("POST", versionsPath, admin, `{"message":"m","config":{"system":"one"},"base_version":0}`, "Idempotency-Key", "k-1")
		if again.Code != 201 || again.Body.String() != first.Body.String() || again.Header().Get("Idempotent-Replayed") != "true" ||
			again.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("replay = %d %q %s\nfirst %s", again.Code, again.Header().Get("Idempotent-Replayed"), again.Body, first.Body)
		}
		if after := a.counts(); after != before {
			t.Fatalf("a replay wrote: %+v -> %+v", before, after)
		}
		// Same key, other body: 422.
		p := problem(t, a.do("POST", versionsPath, admin, `{"base_version": 1, "config": {"system": "two"}}`, "Idempotency-Key", "k-1"),
			422, "idempotency_key_reused")
		if p["field"] != "Idempotency-Key" {
			t.Errorf("field = %v", p["field"])
		}
		// The key is scoped to the path and the token's name.
		a.ok(a.do("POST", "/v1/agents/billing/versions", admin, body, "Idempotency-Key", "k-1"), 201)
		if a.counts().versions != before.versions+1 {
			t.Fatal("a key on another path was replayed")
		}
		// Bad keys: 400.
		for _, k := range []string{"with\ttab", string(make([]byte, 256))} {
			problem(t, a.do("POST", versionsPath, admin, body, "Idempotency-Key", k), 400, "invalid_field")
		}
	})
}

func TestIdempotency_conflict_isNotStored_retryAfterFixingTheBaseSucceeds(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.createVersion("support", 0, "one")
		a.createVersion("support", 1, "theirs") // someone else moved the agent on
		problem(t, a.do("POST", versionsPath, admin, `{"base_version": 1, "config": {"system": "mine"}}`, "Idempotency-Key", "k-2"),
			409, "version_conflict")
		if rows := a.idemRows(); rows != 0 {
			t.Fatalf("%d outcomes stored after a 409", rows)
		}
		// The author rebases and retries with the same key: a fresh attempt.
		fixed := `{"base_version": 2, "config": {"system": "mine"}}`
		rec := a.do("POST", versionsPath, admin, fixed, "Idempotency-Key", "k-2")
		if v := a.ok(rec, 201); v["version"] != float64(3) {
			t.Fatalf("retry = %v", v)
		}
		replay := a.do("POST", versionsPath, admin, fixed, "Idempotency-Key", "k-2")
		if replay.Body.String() != rec.Body.String() || replay.Header().Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay = %s", replay.Body)
		}
	})
}

func TestIdempotency_conflict_retryWithTheSameBody_afterTheCauseIsGone(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		body := `{"base_version": 1, "config": {"system": "second"}}`
		problem(t, a.do("POST", versionsPath, admin, body, "Idempotency-Key", "k-4"), 409, "version_conflict")
		a.createVersion("support", 0, "first") // the cause goes away
		rec := a.do("POST", versionsPath, admin, body, "Idempotency-Key", "k-4")
		if v := a.ok(rec, 201); v["version"] != float64(2) || rec.Header().Get("Idempotent-Replayed") != "" {
			t.Fatalf("retry = %v", v)
		}
	})
}

func TestIdempotency_validationOutcome_isStoredAndReplayed(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		body := `{"base_version": 0, "config": {"system": "x", "tools": "nope"}}`
		first := a.do("POST", versionsPath, admin, body, "Idempotency-Key", "k-5")
		p := problem(t, first, 422, "invalid_config")
		if p["field"] != "config.tools" {
			t.Errorf("field = %v", p["field"])
		}
		again := a.do("POST", versionsPath, admin, body, "Idempotency-Key", "k-5")
		if again.Code != 422 || again.Body.String() != first.Body.String() || again.Header().Get("Idempotent-Replayed") != "true" ||
			again.Header().Get("Content-Type") != "application/problem+json" {
			t.Fatalf("replay = %d %s", again.Code, again.Body)
		}
		// Malformed JSON is a stored 400, bound to the raw bytes.
		bad := a.do("POST", versionsPath, admin, `{"base_version": `, "Idempotency-Key", "k-6")
		problem(t, bad, 400, "invalid_json")
		if again := a.do("POST", versionsPath, admin, `{"base_version": `, "Idempotency-Key", "k-6"); again.Header().Get("Idempotent-Replayed") != "true" ||
			again.Body.String() != bad.Body.String() {
			t.Fatalf("400 replay = %s", again.Body)
		}
		if a.counts().versions != 0 {
			t.Fatal("a version was created")
		}
	})
}

func TestIdempotency_concurrentRepeats_oneCreates(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		body := `{"base_version": 0, "config": {"system": "once"}}`
		const n = 8
		recs := make([]*httptest.ResponseRecorder, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				recs[i] = httptest.NewRecorder()
				a.h.ServeHTTP(recs[i], req("POST", versionsPath, admin, body, "Idempotency-Key", "k-7"))
			})
		}
		wg.Wait()
		created, replayed, busy := 0, 0, 0
		var createdBody string
		for _, rec := range recs {
			switch {
			case rec.Code == 201 && rec.Header().Get("Idempotent-Replayed") == "true":
				replayed++
			case rec.Code == 201:
				created++
				createdBody = rec.Body.String()
			case rec.Code == 409:
				problem(t, rec, 409, "idempotency_in_progress")
				busy++
			default:
				t.Errorf("unexpected answer %d %s", rec.Code, rec.Body)
			}
		}
		if created != 1 || created+replayed+busy != n {
			t.Fatalf("created %d, replayed %d, in progress %d", created, replayed, busy)
		}
		for _, rec := range recs {
			if rec.Code == 201 && rec.Body.String() != createdBody {
				t.Errorf("a replay differs: %s", rec.Body)
			}
		}
		if c := a.counts(); c.versions != 1 {
			t.Fatalf("%d versions", c.versions)
		}
	})
}

func TestIdempotency_import_replays(t *testing.T) {
	a := sqliteApp(t)
	body := `{"mode": "partial", "items": [{"agent": "a", "base_version": 0, "config": {"system": "x"}}]}`
	first := a.do("POST", "/v1/import", admin, body, "Idempotency-Key", "imp-1")
	a.ok(first, 200)
	again := a.do("POST", "/v1/import", admin, body, "Idempotency-Key", "imp-1")
	if again.Body.String() != first.Body.String() || again.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay = %s", again.Body)
	}
	// all_or_nothing rejected: 409, not stored.
	rej := `{"mode": "all_or_nothing", "items": [{"agent": "a", "base_version": 0, "config": {"system": "x"}}]}`
	problem(t, a.do("POST", "/v1/import", admin, rej, "Idempotency-Key", "imp-2"), 409, "import_rejected")
	if rec := a.do("POST", "/v1/import", admin, rej, "Idempotency-Key", "imp-2"); rec.Header().Get("Idempotent-Replayed") != "" {
		t.Fatal("a 409 was replayed")
	}
}

// Two instances (each with its own in-process set of keys in progress) over
// one database: a repeat on the other instance waits for the first's
// transaction and replays its answer; never a second version, never a
// version_conflict.
func TestIdempotency_concurrentRepeats_acrossInstances(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		instances := []*app{newApp(t, db), newApp(t, db)}
		for round := range 3 {
			key := fmt.Sprintf("x-%d", round)
			body := fmt.Sprintf(`{"base_version": %d, "config": {"system": "round %d"}}`, round, round)
			const n = 6
			recs := make([]*httptest.ResponseRecorder, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					recs[i] = httptest.NewRecorder()
					instances[i%2].h.ServeHTTP(recs[i], req("POST", versionsPath, admin, body, "Idempotency-Key", key))
				})
			}
			wg.Wait()
			created, first := 0, ""
			for _, rec := range recs {
				switch {
				case rec.Code == 201 && rec.Header().Get("Idempotent-Replayed") == "":
					created++
					first = rec.Body.String()
				case rec.Code == 201:
				case rec.Code == 409:
					problem(t, rec, 409, "idempotency_in_progress")
				default:
					t.Fatalf("round %d: unexpected %d %s", round, rec.Code, rec.Body)
				}
			}
			if created != 1 {
				t.Fatalf("round %d: %d created", round, created)
			}
			for _, rec := range recs {
				if rec.Code == 201 && rec.Body.String() != first {
					t.Fatalf("round %d: a replay differs:\n%s\n%s", round, rec.Body, first)
				}
			}
		}
		if c := instances[0].counts(); c.versions != 3 {
			t.Fatalf("%d versions, want 3", c.versions)
		}
	})
}

// refuseIdempotencyRecords makes every insert into idempotency_keys fail,
// as a database error inside whatever transaction runs it.
func (a *app) refuseIdempotencyRecords() {
	a.t.Helper()
	ddl := `CREATE TRIGGER idem_refused BEFORE INSERT ON idempotency_keys BEGIN SELECT RAISE(ABORT, 'idempotency record refused'); END`
	if sqlstore.Dialect(a.db) == sqlstore.MySQL {
		ddl = `CREATE TRIGGER idem_refused BEFORE INSERT ON idempotency_keys FOR EACH ROW
			SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'idempotency record refused'`
	}
	if err := a.db.Exec(ddl).Error; err != nil {
		a.t.Fatal(err)
	}
}

// rows is what a write can change: row counts and revisions of every
// table an idempotent route writes.
func (a *app) rows() string {
	a.t.Helper()
	var out []string
	for _, q := range []string{
		"COUNT(*) FROM prompt_agents", "COALESCE(SUM(latest_version), 0) FROM prompt_agents", "COUNT(*) FROM prompt_versions",
		"COUNT(*) FROM prompt_env_pointers", "COALESCE(SUM(revision), 0) FROM prompt_env_pointers", "COUNT(*) FROM prompt_pointer_moves",
		"COUNT(*) FROM releases", "COUNT(*) FROM release_history",
		"COUNT(*) FROM sessions", "COALESCE(SUM(revision), 0) FROM sessions", "COUNT(*) FROM session_turns",
		"COUNT(*) FROM session_state", "COALESCE(SUM(revision), 0) FROM session_state",
		"COUNT(*) FROM audit_events", "COUNT(*) FROM idempotency_keys",
	} {
		var n int64
		if err := a.db.Raw("SELECT " + q).Scan(&n).Error; err != nil {
			a.t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s = %d", q, n))
	}
	return strings.Join(out, "\n")
}

// Every route that takes an Idempotency-Key records its answer in the
// write's own transaction: when the record cannot be written, neither is
// the write (and nothing is answered as if it were).
func TestIdempotency_whenTheRecordFails_everyIdempotentWriteRollsBack(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.withVersions(2)
		a.createSession("s1", "")
		a.ok(a.do("PUT", "/v1/sessions/s1/state/taken", runtime, `{"value": 1, "expected_revision": 0}`), 200)
		a.refuseIdempotencyRecords()
		for _, w := range []struct{ method, path, token, body string }{
			{"POST", versionsPath, admin, `{"base_version": 2, "config": {"system": "v3"}}`},
			{"POST", "/v1/import", admin, `{"mode": "partial", "items": [{"agent": "support", "base_version": 2, "config": {"system": "v3"}},
				{"agent": "billing", "base_version": 0, "config": {"system": "b1"}}]}`},
			{"POST", releasesPath, admin, `{"candidate_version": 2, "percent": 5}`},
			{"POST", "/v1/sessions", runtime, `{"session_id": "s2", "agent": "support", "env": "prod"}`},
			{"POST", "/v1/sessions", runtime, `{"agent": "support", "env": "prod"}`},
			{"POST", "/v1/sessions/s1/turns", runtime, `{"expected_revision": 0, "turns": [{"role": "user", "content": "hello"}]}`},
			{"PUT", "/v1/sessions/s1/state/k", runtime, `{"value": {"a": 1}, "expected_revision": 0}`},
			{"PUT", "/v1/sessions/s1/state/taken", runtime, `{"value": 2, "expected_revision": 1}`},
		} {
			before := a.rows()
			rec := a.do(w.method, w.path, w.token, w.body, "Idempotency-Key", "refused")
			if rec.Code != 500 || !strings.Contains(rec.Body.String(), `"code":"internal"`) {
				t.Errorf("%s %s = %d %s, want 500 internal", w.method, w.path, rec.Code, rec.Body)
			}
			if after := a.rows(); after != before {
				t.Errorf("%s %s wrote without its idempotency record:\nbefore\n%s\nafter\n%s", w.method, w.path, before, after)
			}
		}
	})
}
