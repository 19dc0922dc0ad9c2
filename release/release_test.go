package release_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/sqlstore"
)

func migrations() []sqlstore.Migration {
	return append(append(audit.Migrations(), promptstore.Migrations()...), release.Migrations()...)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(audit.WithActor(context.Background(), "admin"), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

type env struct {
	db    *gorm.DB
	store *promptstore.Store
	rel   *release.Service
}

// newEnv: agent "a" with versions 1..3, prod pointing at 1.
// newEnv wires a store and a release service as promptd.New does; rdb,
// when given, carries events between envs (instances).
func newEnv(t *testing.T, db *gorm.DB, o promptd.Options, rdb ...redis.UniversalClient) *env {
	o.Instance = "t"
	if len(rdb) > 0 {
		o.Redis = rdb[0]
	}
	rt := promptd.New(db, o)
	t.Cleanup(func() { _ = rt.Close() })
	return &env{db: db, store: rt.Prompts, rel: rt.Releases}
}

func (e *env) seed(t *testing.T) {
	ctx := ctxT(t)
	for i := 0; i < 3; i++ {
		if _, err := e.store.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "a", BaseVersion: i,
			Config: json.RawMessage(fmt.Sprintf(`{"system": "v%d"}`, i+1))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.store.SwitchPointer(ctx, promptstore.SwitchInput{Agent: "a", Env: "prod", Version: 1, ExpectedRevision: new(int64)}); err != nil {
		t.Fatal(err)
	}
}

func count(t *testing.T, db *gorm.DB, q string) int {
	var n int
	if err := db.Raw(q).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

func TestCreate_badInput_writesNothing(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, promptd.Options{})
		e.seed(t)
		ctx := ctxT(t)
		if _, err := e.rel.Create(ctx, release.CreateInput{Agent: "a", Env: "staging", CandidateVersion: 2, Percent: "10"}); !errors.Is(err, promptstore.ErrNoPointer) {
			t.Fatalf("no pointer: %v", err)
		}
		cases := []struct {
			in   release.CreateInput
			code string
		}{
			{release.CreateInput{CandidateVersion: 2, Percent: "100.5"}, release.CodeInvalidPercent},
			{release.CreateInput{CandidateVersion: 2, Percent: "-1"}, release.CodeInvalidPercent},
			{release.CreateInput{CandidateVersion: 2, Percent: "12.345"}, release.CodeInvalidPercent},
			{release.CreateInput{CandidateVersion: 1, Percent: "10"}, release.CodeInvalidField},
			{release.CreateInput{CandidateVersion: 2, Percent: "10", Stickiness: "device"}, release.CodeInvalidField},
			{release.CreateInput{CandidateVersion: 2, Percent: "10", Steps: []release.Step{{Percent: "50", After: "1m"}, {Percent: "25", After: "1m"}}}, release.CodeInvalidSteps},
			{release.CreateInput{CandidateVersion: 2, Percent: "10", Steps: []release.Step{{Percent: "5", After: "1m"}}}, release.CodeInvalidSteps},
			{release.CreateInput{CandidateVersion: 2, Percent: "10", Steps: []release.Step{{Promote: true, After: "1m"}, {Percent: "50", After: "1m"}}}, release.CodeInvalidSteps},
			{release.CreateInput{CandidateVersion: 2, Percent: "10", Steps: []release.Step{{Percent: "50", After: "soon"}}}, release.CodeInvalidSteps},
		}
		for i, c := range cases {
			c.in.Agent, c.in.Env = "a", "prod"
			_, err := e.rel.Create(ctx, c.in)
			var ie *release.InvalidError
			if !errors.As(err, &ie) || ie.Code != c.code {
				t.Errorf("case %d: %v, want %s", i, err, c.code)
			}
		}
		if _, err := e.rel.Create(ctx, release.CreateInput{Agent: "a", Env: "prod", CandidateVersion: 9, Percent: "10"}); !errors.Is(err, promptstore.ErrVersionNotFound) {
			t.Fatalf("unknown version: %v", err)
		}
		if n := count(t, db, "SELECT COUNT(*) FROM releases"); n != 0 {
			t.Fatalf("%d releases written by bad requests", n)
		}
		if env, _ := e.store.GetEnv(ctx, "a", "prod"); env.Revision != 1 {
			t.Fatalf("pointer revision %d after bad requests", env.Revision)
		}
	})
}

func TestRelease_oneActivePerEnv_enforcedBySQL(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, promptd.Options{})
		e.seed(t)
		ctx := ctxT(t)
		r, err := e.rel.Create(ctx, release.CreateInput{Agent: "a", Env: "prod", CandidateVersion: 2, Percent: "10"})
		if err != nil {
			t.Fatal(err)
		}
		if r.State != release.Running || r.BaselineVersion != 1 || r.Percent != "10" || r.Revision != 1 || len(r.History) != 1 {
			t.Fatalf("release = %+v", r)
		}
		var ra *promptstore.ReleaseActive
		if _, err := e.rel.Create(ctx, release.CreateInput{Agent: "a", Env: "prod", CandidateVersion: 3, Percent: "10"}); !errors.As(err, &ra) || ra.ReleaseID != r.ID {
			t.Fatalf("second release: %v", err)
		}
		env, _ := e.store.GetEnv(ctx, "a", "prod")
		if _, err := e.store.SwitchPointer(ctx, promptstore.SwitchInput{Agent: "a", Env: "prod", Version: 3, ExpectedRevision: &env.Revision}); !errors.As(err, &ra) {
			t.Fatalf("switch during a release: %v", err)
		}
		if _, err := e.store.Revoke(ctx, promptstore.RevokeInput{Agent: "a", Env: "prod", Version: 2}); !errors.As(err, &ra) {
			t.Fatalf("revoke during a release: %v", err)
		}
	})
}

func TestRelease_promoteAndRollback(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, promptd.Options{})
		e.seed(t)
		ctx := ctxT(t)
		r, _ := e.rel.Create(ctx, release.CreateInput{Agent: "a", Env: "prod", CandidateVersion: 2, Percent: "50"})
		p, err := e.rel.Transition(ctx, r.ID, release.ActPause, release.TransitionInput{})
		if err != nil || p.State != release.Paused || p.Revision != 2 {
			t.Fatalf("pause: %+v %v", p, err)
		}
		again, err := e.rel.Transition(ctx, r.ID, release.ActPause, release.TransitionInput{ExpectedRevision: new(int64)})
		if err != nil || again.Revision != 2 {
			t.Fatalf("pause while paused must be a no-op: %+v %v", again, err)
		}
		var rc *promptstore.RevisionConflict
		if _, err := e.rel.Transition(ctx, r.ID, release.ActResume, release.TransitionInput{ExpectedRevision: new(int64)}); !errors.As(err, &rc) || rc.Current != 2 {
			t.Fatalf("stale revision: %v", err)
		}
		pr, err := e.rel.Transition(ctx, r.ID, release.ActPromote, release.TransitionInput{Reason: "good"})
		if err != nil || pr.State != release.Promoted {
			t.Fatalf("promote: %+v %v", pr, err)
		}
		var it *release.InvalidTransition
		if _, err := e.rel.Transition(ctx, r.ID, release.ActRollback, release.TransitionInput{}); !errors.As(err, &it) || it.State != release.Promoted {
			t.Fatalf("rollback after promote: %v", err)
		}
		env, _ := e.store.GetEnv(ctx, "a", "prod")
		if env.Version != 2 || env.ActiveReleaseID != "" || env.History[0].Action != "promote" {
			t.Fatalf("env after promote: %+v", env)
		}
		// A second release, rolled back: the candidate is revoked, the pointer stays.
		r2, err := e.rel.Create(ctx, release.CreateInput{Agent: "a", Env: "prod", CandidateVersion: 3, Percent: "100"})
		if err != nil {
			t.Fatal(err)
		}
		res, _ := e.rel.Resolve(ctx, promptstore.Request{Agent: "a", Env: "prod", UserID: "u"})
		if res.Version != 3 || res.Release.Arm != "candidate" {
			t.Fatalf("at 100%%: %+v", res)
		}
		rb, err := e.rel.Transition(ctx, r2.ID, release.ActRollback, release.TransitionInput{Reason: "bad"})
		if err != nil || rb.State != release.RolledBack {
			t.Fatalf("rollback: %v", err)
		}
		env, _ = e.store.GetEnv(ctx, "a", "prod")
		if env.Version != 2 || env.ActiveReleaseID != "" || len(env.Revoked) != 1 || env.Revoked[0] != 3 {
			t.Fatalf("env after rollback: %+v", env)
		}
		res, _ = e.rel.Resolve(ctx, promptstore.Request{Agent: "a", Env: "prod", UserID: "u"})
		if res.Version != 2 || res.Release != nil {
			t.Fatalf("after rollback: %+v", res)
		}
		got, _ := e.rel.Get(ctx, r2.ID)
		for i, h := range got.History {
			if h.Revision != int64(i+1) {
				t.Fatalf("history revisions: %+v", got.History)
			}
		}
	})
}

func TestStickiness_100kUsers(t *testing.T) {
	db := testenv.OpenDB(t, sqlstore.Config{SQLitePath: t.TempDir() + "/s.db"}, migrations())
	e := newEnv(t, db, promptd.Options{})
	e.seed(t)
	ctx := ctxT(t)
	r, err := e.rel.Create(ctx, release.CreateInput{Agent: "a", Env: "prod", CandidateVersion: 2, Percent: "10"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 100000
	users := make([]string, n)
	for i := range users {
		users[i] = fmt.Sprintf("user-%d-%x", i, rand.Uint64())
	}
	share := func() (float64, map[string]bool) {
		cand := map[string]bool{}
		for _, u := range users {
			res, err := e.rel.Resolve(ctx, promptstore.Request{Agent: "a", Env: "prod", UserID: u})
			if err != nil {
				t.Fatal(err)
			}
			if res.Release.Arm == "candidate" {
				cand[u] = true
			}
		}
		return 100 * float64(len(cand)) / n, cand
	}
	s10, at10 := share()
	if _, err := e.rel.Transition(ctx, r.ID, release.ActPercent, release.TransitionInput{Percent: "50"}); err != nil {
		t.Fatal(err)
	}
	s50, at50 := share()
	moved := 0
	for u := range at10 {
		if !at50[u] {
			moved++
		}
	}
	t.Logf("100,000 users: %.2f%% candidate at 10%%, %.2f%% at 50%%; earlier candidates moved to baseline: %d", s10, s50, moved)
	if s10 < 9.5 || s10 > 10.5 || s50 < 49.5 || s50 > 50.5 || moved != 0 {
		t.Fatal("stickiness out of bounds")
	}
}

func TestEnvRollback_withoutRelease_revokesTheVersionLeft(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		e := newEnv(t, db, promptd.Options{})
		e.seed(t)
		ctx := ctxT(t)
		for v, rev := 2, int64(1); v <= 3; v, rev = v+1, rev+1 {
			if _, err := e.store.SwitchPointer(ctx, promptstore.SwitchInput{Agent: "a", Env: "prod", Version: v, ExpectedRevision: &rev}); err != nil {
				t.Fatal(err)
			}
		}
		rev := int64(3)
		out, err := e.rel.RollbackEnv(ctx, release.EnvRollbackInput{Agent: "a", Env: "prod", ExpectedRevision: &rev, Reason: "bad v3"})
		if err != nil || out.To != 2 || out.Env.Version != 2 || out.Env.Revoked[0] != 3 {
			t.Fatalf("rollback: %+v %v", out, err)
		}
		rev = out.Env.Revision
		out, err = e.rel.RollbackEnv(ctx, release.EnvRollbackInput{Agent: "a", Env: "prod", ExpectedRevision: &rev})
		if err != nil || out.To != 1 {
			t.Fatalf("second rollback: %+v %v", out, err)
		}
		var n int
		db.Raw(`SELECT COUNT(*) FROM audit_events WHERE action = 'env.rolled_back'`).Scan(&n)
		if n != 2 {
			t.Fatalf("%d env.rolled_back events", n)
		}
	})
}

// 20 admins race transitions on one release: every answer is a success,
// a conflict or an invalid transition; the history has no gap.
func TestTransitions_twentyConcurrentAdmins(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		locker := locks.NewRedis(testenv.RedisClient(t), locks.RedisOptions{}, locks.Options{})
		e := newEnv(t, db, promptd.Options{Locker: locker, Keys: locks.Keys{Prefix: fmt.Sprint("adm", time.Now().UnixNano())}})
		e.seed(t)
		ctx := ctxT(t)
		r, err := e.rel.Create(ctx, release.CreateInput{Agent: "a", Env: "prod", CandidateVersion: 2, Percent: "1"})
		if err != nil {
			t.Fatal(err)
		}
		// Mostly percent changes, pauses and resumes; now and then an end.
		var actions []release.Action
		for i := 0; i < 12; i++ {
			actions = append(actions, release.ActPercent, release.ActPause, release.ActResume)
		}
		actions = append(actions, release.ActPromote, release.ActRollback)
		var mu sync.Mutex
		outcomes := map[string]int{}
		var wg sync.WaitGroup
		for a := 0; a < 20; a++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 5; i++ {
					act := actions[rand.IntN(len(actions)-2)] // the ends only in the last round
					if i == 4 {
						act = actions[rand.IntN(len(actions))]
					}
					cur, err := e.rel.Get(ctx, r.ID)
					if err != nil {
						t.Error(err)
						return
					}
					_, err = e.rel.Transition(ctx, r.ID, act, release.TransitionInput{ExpectedRevision: &cur.Revision, Percent: fmt.Sprint(rand.IntN(100))})
					var rc *promptstore.RevisionConflict
					var it *release.InvalidTransition
					kind := "ok"
					switch {
					case errors.As(err, &rc):
						kind = "revision_conflict"
					case errors.As(err, &it):
						kind = "invalid_transition"
					case err != nil:
						t.Errorf("unexpected: %v", err)
						return
					}
					mu.Lock()
					outcomes[kind]++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		final, err := e.rel.Get(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		for i, h := range final.History {
			if h.Revision != int64(i+1) {
				t.Fatalf("history gap at %d: %+v", i, final.History)
			}
			if i > 0 {
				if to, _, ok := release.Next(final.History[i-1].To, release.Action(h.Action)); !ok || to != h.To || h.From != final.History[i-1].To {
					t.Fatalf("illegal history step %d: %+v after %+v", i, h, final.History[i-1])
				}
			}
		}
		env, _ := e.store.GetEnv(ctx, "a", "prod")
		switch final.State {
		case release.Promoted:
			if env.Version != 2 || env.ActiveReleaseID != "" {
				t.Fatalf("promoted, env %+v", env)
			}
		case release.RolledBack:
			if env.Version != 1 || env.ActiveReleaseID != "" || len(env.Revoked) != 1 {
				t.Fatalf("rolled back, env %+v", env)
			}
		default:
			if env.ActiveReleaseID != r.ID {
				t.Fatalf("active, env %+v", env)
			}
		}
		t.Logf("100 requests from 20 admins: %v; final %s at revision %d, %d history entries", outcomes, final.State, final.Revision, len(final.History))
	})
}
