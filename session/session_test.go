package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/session"
	"github.com/promptd/promptd/sqlstore"
)

func migrations() []sqlstore.Migration {
	m := append(audit.Migrations(), promptstore.Migrations()...)
	return append(append(m, release.Migrations()...), session.Migrations()...)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(audit.WithActor(context.Background(), "runtime"), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

type world struct {
	store *promptstore.Store
	rel   *release.Service
	sess  *session.Service
	res   promptstore.Resolver
	// base is what a second session service over the same stores (another
	// replica) is built from.
	base session.Options
}

func newWorld(t *testing.T, db *gorm.DB) *world {
	rdb := testenv.RedisClient(t)
	keys := locks.Keys{Prefix: fmt.Sprint("s", time.Now().UnixNano())}
	locker := locks.NewRedis(rdb, locks.RedisOptions{Keys: keys}, locks.Options{Holder: "t"})
	t.Cleanup(func() { _ = locker.Close(context.Background()) })
	rt := promptd.New(db, promptd.Options{Instance: "t", Locker: locker, Keys: keys, EventFlush: 50 * time.Millisecond})
	t.Cleanup(func() { _ = rt.Close() })
	store, rel, sess := rt.Prompts, rt.Releases, rt.Sessions
	w := &world{store: store, rel: rel, sess: sess, res: rt.Resolver,
		base: session.Options{Store: store, DB: db, Bus: rt.Bus, Locker: locker, Keys: keys, Resolver: rel, Instance: "t", Events: rt.Events}}
	ctx := ctxT(t)
	for i := 0; i < 2; i++ {
		if _, err := store.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "a", BaseVersion: i, Config: json.RawMessage(fmt.Sprintf(`{"system":"v%d"}`, i+1))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.SwitchPointer(ctx, promptstore.SwitchInput{Agent: "a", Env: "prod", Version: 1, ExpectedRevision: new(int64)}); err != nil {
		t.Fatal(err)
	}
	return w
}

// turnWith finds the turn of session id whose content is text.
func (w *world) turnWith(ctx context.Context, id, text string) (int64, bool) {
	for range 50 {
		s, err := w.sess.Get(ctx, id, 0, 500)
		if err != nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		for _, tr := range s.Turns {
			var got string
			if json.Unmarshal(tr.Content, &got) == nil && got == text {
				return tr.Seq, true
			}
		}
		return 0, false
	}
	return 0, false
}

func turn(text string) session.TurnInput {
	b, _ := json.Marshal(text)
	return session.TurnInput{Role: "user", Content: b}
}

func rev(n int64) *int64 { return &n }

func TestCreate_pinsAndIsIdempotentPerOwner(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		ctx := ctxT(t)
		s, created, err := w.sess.Create(ctx, session.CreateInput{SessionID: "s1", Agent: "a", Env: "prod", UserID: "u1"})
		if err != nil || !created || s.PinnedVersion != 1 || s.Revision != 0 || s.State != session.Open {
			t.Fatalf("create: %+v %v", s, err)
		}
		if again, created, err := w.sess.Create(ctx, session.CreateInput{SessionID: "s1", Agent: "a", Env: "prod", UserID: "u1"}); err != nil || created || again.SessionID != "s1" {
			t.Fatalf("same create: %v %v", created, err)
		}
		if _, _, err := w.sess.Create(ctx, session.CreateInput{SessionID: "s1", Agent: "a", Env: "prod", UserID: "u2"}); !errors.Is(err, session.ErrExists) {
			t.Fatalf("other user: %v", err)
		}
		if _, _, err := w.sess.Create(ctx, session.CreateInput{SessionID: "S1", Agent: "a", Env: "prod"}); err != nil {
			t.Fatalf("ids are case-sensitive: %v", err)
		}
	})
}

// 50 writers double-text one session, retrying with the revision they
// re-read: every acknowledged append is there once, seqs contiguous.
func TestAppend_fiftyConcurrentWriters(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		ctx := ctxT(t)
		for _, mode := range []string{"optimistic", "lease"} {
			t.Run(mode, func(t *testing.T) {
				id := "dt-" + mode
				if _, _, err := w.sess.Create(ctx, session.CreateInput{SessionID: id, Agent: "a", Env: "prod"}); err != nil {
					t.Fatal(err)
				}
				var mu sync.Mutex
				acked := map[string]int64{}
				retries := 0
				var wg sync.WaitGroup
				for i := 0; i < 50; i++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						text := fmt.Sprintf("writer %d", i)
						for attempt := 0; attempt < 500; attempt++ {
							var fence *int64
							var token string
							if mode == "lease" {
								l, err := w.sess.AcquireLease(ctx, id, session.LeaseInput{Holder: text, TTL: 5 * time.Second, Wait: 20 * time.Second, Mode: session.ModeWait})
								if err != nil {
									t.Errorf("lease: %v", err)
									return
								}
								fence, token = &l.Fence, l.Token
							}
							cur, err := w.sess.Get(ctx, id, 0, 1)
							if err != nil {
								t.Error(err)
								return
							}
							out, err := w.sess.Append(ctx, id, session.WriteCondition{ExpectedRevision: &cur.Revision, Fence: fence}, []session.TurnInput{turn(text)})
							if token != "" {
								_ = w.sess.ReleaseLease(ctx, id, token)
							}
							var rc *session.RevisionConflict
							var lh *session.LeaseHeld
							if errors.As(err, &rc) || errors.As(err, &lh) {
								mu.Lock()
								retries++
								mu.Unlock()
								time.Sleep(time.Millisecond)
								continue
							}
							if errors.Is(err, sqlstore.ErrUnavailable) {
								// SQLite's one writer, 50 writers and a loaded
								// machine: a write may time out, its outcome
								// unknown. As a client would, look before
								// writing again: appended, or not at all.
								if seq, found := w.turnWith(ctx, id, text); found {
									mu.Lock()
									acked[text] = seq
									mu.Unlock()
									return
								}
								time.Sleep(10 * time.Millisecond)
								continue
							}
							if err != nil {
								t.Errorf("append: %v", err)
								return
							}
							mu.Lock()
							acked[text] = out.Seqs[0]
							mu.Unlock()
							return
						}
						t.Errorf("%s gave up", text)
					}()
				}
				wg.Wait()
				s, err := w.sess.Get(ctx, id, 0, 500)
				if err != nil {
					t.Fatal(err)
				}
				seen := map[string]bool{}
				for i, tr := range s.Turns {
					var text string
					_ = json.Unmarshal(tr.Content, &text)
					if tr.Seq != int64(i+1) || seen[text] || acked[text] != tr.Seq {
						t.Fatalf("turn %d: seq %d %q (acked at %d, dup %v)", i, tr.Seq, text, acked[text], seen[text])
					}
					seen[text] = true
				}
				if len(s.Turns) != 50 || len(acked) != 50 || s.Revision != 50 {
					t.Fatalf("%d turns, %d acknowledged, revision %d", len(s.Turns), len(acked), s.Revision)
				}
				t.Logf("%s: 50 writers, 50 turns, seqs 1..50 contiguous, no duplicate; %d retries", mode, retries)
			})
		}
	})
}

func TestFencing_preemptedHolderRejected_unfencedWriterBlocked(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		ctx := ctxT(t)
		if _, _, err := w.sess.Create(ctx, session.CreateInput{SessionID: "f1", Agent: "a", Env: "prod"}); err != nil {
			t.Fatal(err)
		}
		a, err := w.sess.AcquireLease(ctx, "f1", session.LeaseInput{Holder: "A", TTL: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var lh *session.LeaseHeld
		if _, err := w.sess.AcquireLease(ctx, "f1", session.LeaseInput{Holder: "B", TTL: time.Second}); !errors.As(err, &lh) || lh.Holder != "A" {
			t.Fatalf("reject mode: %v", err)
		}
		if _, err := w.sess.Append(ctx, "f1", session.WriteCondition{ExpectedRevision: rev(0)}, []session.TurnInput{turn("unfenced")}); !errors.As(err, &lh) || lh.Holder != "A" {
			t.Fatalf("unfenced write during a lease: %v", err)
		}
		again, err := w.sess.AcquireLease(ctx, "f1", session.LeaseInput{Holder: "A", TTL: 10 * time.Second, Token: a.Token})
		if err != nil || again.Fence != a.Fence {
			t.Fatalf("re-entry: %+v %v", again, err)
		}
		b, err := w.sess.AcquireLease(ctx, "f1", session.LeaseInput{Holder: "B", TTL: 10 * time.Second, Mode: session.ModePreempt})
		if err != nil || b.Fence <= a.Fence {
			t.Fatalf("preempt: %+v %v", b, err)
		}
		var sf *session.StaleFence
		if _, err := w.sess.Append(ctx, "f1", session.WriteCondition{ExpectedRevision: rev(0), Fence: &a.Fence}, []session.TurnInput{turn("A late")}); !errors.As(err, &sf) || sf.Current != b.Fence {
			t.Fatalf("old holder's write: %v", err)
		}
		if _, err := w.sess.Append(ctx, "f1", session.WriteCondition{ExpectedRevision: rev(0), Fence: &b.Fence}, []session.TurnInput{turn("B")}); err != nil {
			t.Fatalf("new holder's write: %v", err)
		}
		if _, err := w.sess.PutState(ctx, "f1", "plan", 0, &a.Fence, json.RawMessage(`1`)); !errors.As(err, &sf) {
			t.Fatalf("old holder's state write: %v", err)
		}
		if r, err := w.sess.PutState(ctx, "f1", "plan", 0, &b.Fence, json.RawMessage(`{"step":1}`)); err != nil || r != 1 {
			t.Fatalf("state create: %d %v", r, err)
		}
		var rc *session.RevisionConflict
		if _, err := w.sess.PutState(ctx, "f1", "plan", 0, &b.Fence, json.RawMessage(`2`)); !errors.As(err, &rc) || rc.Current != 1 {
			t.Fatalf("state CAS: %v", err)
		}
		if err := w.sess.ReleaseLease(ctx, "f1", a.Token); !errors.Is(err, session.ErrLeaseLost) {
			t.Fatalf("release with a stale token: %v", err)
		}
		if _, err := w.sess.RenewLease(ctx, "f1", a.Token, time.Second); !errors.Is(err, session.ErrLeaseLost) {
			t.Fatalf("renew with a stale token: %v", err)
		}
		if err := w.sess.ReleaseLease(ctx, "f1", b.Token); err != nil {
			t.Fatal(err)
		}
		out, err := w.sess.Close(ctx, "f1", session.WriteCondition{ExpectedRevision: rev(1)}, "")
		if err != nil || out.State != session.Closed || out.Revision != 2 {
			t.Fatalf("close: %+v %v", out, err)
		}
		if _, err := w.sess.Append(ctx, "f1", session.WriteCondition{ExpectedRevision: rev(2)}, []session.TurnInput{turn("late")}); !errors.Is(err, session.ErrClosed) {
			t.Fatalf("append to closed: %v", err)
		}
		s, _ := w.sess.Get(ctx, "f1", 0, 10)
		if len(s.Turns) != 1 || s.Fence != b.Fence {
			t.Fatalf("final: %+v", s)
		}
	})
}

// A session that lands on the candidate stays there through a percent
// change and the promotion; after a rollback it is re-pinned once.
func TestPinning_throughReleaseLifecycle(t *testing.T) {
	db := testenv.OpenDB(t, sqlstore.Config{MySQLDSN: testenv.MySQLDSN(t)}, migrations())
	w := newWorld(t, db)
	ctx := ctxT(t)
	r, err := w.rel.Create(ctx, release.CreateInput{Agent: "a", Env: "prod", CandidateVersion: 2, Percent: "10"})
	if err != nil {
		t.Fatal(err)
	}
	var user string
	for i := 0; ; i++ { // a user that lands on the candidate at 10 %
		user = fmt.Sprint("user-", i)
		if b := release.Bucket(r.ID, user); b < 1000 {
			break
		}
	}
	s, _, err := w.sess.Create(ctx, session.CreateInput{SessionID: "pin", Agent: "a", Env: "prod", UserID: user})
	if err != nil || s.PinnedVersion != 2 {
		t.Fatalf("pinned %d: %v", s.PinnedVersion, err)
	}
	check := func(when string, version int, repinned bool) {
		t.Helper()
		res, err := w.res.Resolve(ctx, promptstore.Request{Agent: "a", Env: "prod", SessionID: "pin"})
		if err != nil || res.Version != version || !res.Pinned || (res.RepinnedFrom != nil) != repinned {
			t.Fatalf("%s: %+v %v", when, res, err)
		}
	}
	check("at 10%", 2, false)
	if _, err := w.rel.Transition(ctx, r.ID, release.ActPercent, release.TransitionInput{Percent: "0"}); err != nil {
		t.Fatal(err)
	}
	check("at 0%", 2, false)
	if _, err := w.rel.Transition(ctx, r.ID, release.ActPromote, release.TransitionInput{}); err != nil {
		t.Fatal(err)
	}
	check("after promotion", 2, false)
	// A second release of v1 rolled back: sessions pinned to it move once.
	r2, err := w.rel.Create(ctx, release.CreateInput{Agent: "a", Env: "prod", CandidateVersion: 1, Percent: "100"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.sess.Create(ctx, session.CreateInput{SessionID: "pin2", Agent: "a", Env: "prod", UserID: "someone"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.rel.Transition(ctx, r2.ID, release.ActRollback, release.TransitionInput{}); err != nil {
		t.Fatal(err)
	}
	res, err := w.res.Resolve(ctx, promptstore.Request{Agent: "a", Env: "prod", SessionID: "pin2"})
	if err != nil || res.Version != 2 || res.RepinnedFrom == nil || *res.RepinnedFrom != 1 {
		t.Fatalf("after rollback: %+v %v", res, err)
	}
	res, _ = w.res.Resolve(ctx, promptstore.Request{Agent: "a", Env: "prod", SessionID: "pin2"})
	if res.Version != 2 || res.RepinnedFrom != nil {
		t.Fatalf("second resolve after the re-pin: %+v", res)
	}
	var n int
	db.Raw(`SELECT COUNT(*) FROM audit_events WHERE action = 'session.repinned' AND session_id = 'pin2'`).Scan(&n)
	if n != 1 {
		t.Fatalf("%d session.repinned events", n)
	}
	if _, err := w.res.Resolve(ctx, promptstore.Request{Agent: "a", Env: "staging", SessionID: "pin2"}); !errors.Is(err, session.ErrMismatch) {
		t.Fatalf("mismatch: %v", err)
	}
	if _, err := w.res.Resolve(ctx, promptstore.Request{Agent: "a", Env: "prod", SessionID: "nope"}); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("unknown: %v", err)
	}
}

func TestTurns_historyCutKeepsToolGroups(t *testing.T) {
	db := testenv.OpenDB(t, sqlstore.Config{SQLitePath: t.TempDir() + "/t.db"}, migrations())
	w := newWorld(t, db)
	ctx := ctxT(t)
	if _, _, err := w.sess.Create(ctx, session.CreateInput{SessionID: "h", Agent: "a", Env: "prod"}); err != nil {
		t.Fatal(err)
	}
	turns := []session.TurnInput{turn("hi"),
		{Role: "assistant", Content: json.RawMessage(`null`), ToolCalls: json.RawMessage(`[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"g","arguments":"{}"}}]`)},
		{Role: "tool", Content: json.RawMessage(`"r1"`), ToolCallID: "c1"},
		{Role: "tool", Content: json.RawMessage(`"r2"`), ToolCallID: "c2"},
		{Role: "assistant", Content: json.RawMessage(`"done"`)}}
	if _, err := w.sess.Append(ctx, "h", session.WriteCondition{ExpectedRevision: rev(0)}, turns); err != nil {
		t.Fatal(err)
	}
	for max, want := range map[int][]string{0: {"user", "assistant", "tool", "tool", "assistant"}, 4: {"assistant", "tool", "tool", "assistant"},
		3: {"assistant"}, 2: {"assistant"}, 1: {"assistant"}} {
		got, err := w.sess.Turns(ctx, "h", max, 0)
		if err != nil {
			t.Fatal(err)
		}
		roles := []string{}
		for _, m := range got {
			roles = append(roles, m.Role)
		}
		if fmt.Sprint(roles) != fmt.Sprint(want) {
			t.Errorf("max %d: %v, want %v", max, roles, want)
		}
	}
}

func TestClose_withLeaseToken_freesTheLease(t *testing.T) {
	db := testenv.OpenDB(t, sqlstore.Config{SQLitePath: t.TempDir() + "/c.db"}, migrations())
	w := newWorld(t, db)
	ctx := ctxT(t)
	if _, _, err := w.sess.Create(ctx, session.CreateInput{SessionID: "c", Agent: "a", Env: "prod"}); err != nil {
		t.Fatal(err)
	}
	l, err := w.sess.AcquireLease(ctx, "c", session.LeaseInput{Holder: "A", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.sess.Close(ctx, "c", session.WriteCondition{ExpectedRevision: rev(0), Fence: &l.Fence}, l.Token); err != nil {
		t.Fatal(err)
	}
	key, _ := session.LeaseKey(w.base.Keys, "c")
	if _, err := w.base.Locker.Holder(ctx, key); !errors.Is(err, locks.ErrNotHeld) {
		t.Fatalf("lease after close with its token: %v", err)
	}
}

// countingLocker counts the lease checks (Holder) a service makes.
type countingLocker struct {
	locks.Locker
	mu      sync.Mutex
	holders int
}

func (l *countingLocker) Holder(ctx context.Context, key string) (locks.Info, error) {
	l.mu.Lock()
	l.holders++
	l.mu.Unlock()
	return l.Locker.Holder(ctx, key)
}

func (l *countingLocker) checks() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holders
}

// A session that never had a lease takes unfenced writes without a lease
// check (its row's fence is 0, so no lease can be held); once a lease was
// granted, on this replica or another, every unfenced write checks again,
// and a held lease still answers lease_held with its holder.
func TestWrite_unfenced_checksLeasesOnlyAfterOne(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		ctx := ctxT(t)
		cl := &countingLocker{Locker: w.base.Locker}
		o := w.base
		o.Locker = cl
		replica := session.New(o)
		for _, id := range []string{"u1", "u2"} {
			if _, _, err := w.sess.Create(ctx, session.CreateInput{SessionID: id, Agent: "a", Env: "prod"}); err != nil {
				t.Fatal(err)
			}
		}
		for i := int64(0); i < 3; i++ {
			if out, err := replica.Append(ctx, "u1", session.WriteCondition{ExpectedRevision: rev(i)}, []session.TurnInput{turn("x")}); err != nil || out.Revision != i+1 || out.Seqs[0] != i+1 {
				t.Fatalf("append %d: %+v %v", i, out, err)
			}
		}
		if r, err := replica.PutState(ctx, "u1", "k", 0, nil, json.RawMessage(`1`)); err != nil || r != 1 {
			t.Fatalf("state: %d %v", r, err)
		}
		var rc *session.RevisionConflict
		if _, err := replica.Append(ctx, "u1", session.WriteCondition{ExpectedRevision: rev(1)}, []session.TurnInput{turn("stale")}); !errors.As(err, &rc) || rc.Current != 3 {
			t.Fatalf("stale revision: %v", err)
		}
		if _, err := replica.Append(ctx, "nope", session.WriteCondition{ExpectedRevision: rev(0)}, []session.TurnInput{turn("x")}); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("unknown session: %v", err)
		}
		if n := cl.checks(); n != 0 {
			t.Fatalf("%d lease checks for a session that never had a lease", n)
		}

		// A lease granted by the other replica: the fast path meets the
		// raised fence and falls back to the full rule.
		l, err := w.sess.AcquireLease(ctx, "u2", session.LeaseInput{Holder: "A", TTL: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var lh *session.LeaseHeld
		for i := 0; i < 2; i++ {
			if _, err := replica.Append(ctx, "u2", session.WriteCondition{ExpectedRevision: rev(0)}, []session.TurnInput{turn("unfenced")}); !errors.As(err, &lh) || lh.Holder != "A" {
				t.Fatalf("unfenced append during a lease (%d): %v", i, err)
			}
			if _, err := replica.PutState(ctx, "u2", "k", 0, nil, json.RawMessage(`1`)); !errors.As(err, &lh) || lh.Holder != "A" {
				t.Fatalf("unfenced state write during a lease (%d): %v", i, err)
			}
		}
		if n := cl.checks(); n < 4 {
			t.Fatalf("%d lease checks, want one per write", n)
		}
		if out, err := replica.Append(ctx, "u2", session.WriteCondition{ExpectedRevision: rev(0), Fence: &l.Fence}, []session.TurnInput{turn("fenced")}); err != nil || out.Revision != 1 {
			t.Fatalf("fenced append: %+v %v", out, err)
		}
		if err := w.sess.ReleaseLease(ctx, "u2", l.Token); err != nil {
			t.Fatal(err)
		}
		before := cl.checks()
		if out, err := replica.Append(ctx, "u2", session.WriteCondition{ExpectedRevision: rev(1)}, []session.TurnInput{turn("after")}); err != nil || out.Seqs[0] != 2 {
			t.Fatalf("unfenced append after the release: %+v %v", out, err)
		}
		if cl.checks() != before+1 {
			t.Fatalf("the write after a lease did not check it")
		}
		if _, err := replica.Close(ctx, "u1", session.WriteCondition{ExpectedRevision: rev(3)}, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := replica.Append(ctx, "u1", session.WriteCondition{ExpectedRevision: rev(4)}, []session.TurnInput{turn("late")}); !errors.Is(err, session.ErrClosed) {
			t.Fatalf("append to closed: %v", err)
		}
	})
}

// An unfenced writer on another replica races a lease holder on fresh
// sessions (the first unfenced writes take the fast path): no unfenced
// append is acknowledged while the lease is held throughout it, and no
// unfenced turn lands between the holder's two turns.
func TestWrite_unfencedRacesLeaseGrants(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		ctx := ctxT(t)
		replica := session.New(w.base)
		for i := 0; i < 10; i++ {
			id := fmt.Sprint("race-", i)
			if _, _, err := w.sess.Create(ctx, session.CreateInput{SessionID: id, Agent: "a", Env: "prod"}); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			var holding bool
			wg.Add(2)
			go func() { // the lease holder: writes two turns with its fence, then lets go
				defer wg.Done()
				l, err := w.sess.AcquireLease(ctx, id, session.LeaseInput{Holder: "H", TTL: 10 * time.Second, Wait: 10 * time.Second, Mode: session.ModeWait})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				holding = true
				mu.Unlock()
				for k := 0; k < 2; k++ {
					for {
						s, err := w.sess.Get(ctx, id, 0, 1000)
						if err != nil {
							t.Error(err)
							return
						}
						_, err = w.sess.Append(ctx, id, session.WriteCondition{ExpectedRevision: rev(s.Revision), Fence: &l.Fence}, []session.TurnInput{turn(fmt.Sprint("H", k))})
						var rc *session.RevisionConflict
						if errors.As(err, &rc) {
							continue
						}
						if err != nil {
							t.Errorf("holder's append: %v", err)
						}
						break
					}
				}
				mu.Lock()
				holding = false
				mu.Unlock()
				if err := w.sess.ReleaseLease(ctx, id, l.Token); err != nil {
					t.Error(err)
				}
			}()
			go func() { // an unfenced writer on the other replica
				defer wg.Done()
				var revision int64
				for k := 0; k < 20; k++ {
					mu.Lock()
					heldBefore := holding
					mu.Unlock()
					out, err := replica.Append(ctx, id, session.WriteCondition{ExpectedRevision: rev(revision)}, []session.TurnInput{turn(fmt.Sprint("U", k))})
					var rc *session.RevisionConflict
					var lh *session.LeaseHeld
					switch {
					case errors.As(err, &rc):
						revision = rc.Current
					case errors.As(err, &lh):
					case err != nil:
						t.Errorf("unfenced append: %v", err)
						return
					default:
						revision = out.Revision
						mu.Lock()
						heldAfter := holding
						mu.Unlock()
						if heldBefore && heldAfter {
							t.Errorf("an unfenced append was acknowledged while the lease was held")
						}
					}
				}
			}()
			wg.Wait()
			s, err := w.sess.Get(ctx, id, 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			var log []string
			for _, tr := range s.Turns {
				var text string
				_ = json.Unmarshal(tr.Content, &text)
				log = append(log, text)
			}
			for j := range log {
				if log[j] == "H0" && (j+1 >= len(log) || log[j+1] != "H1") {
					t.Fatalf("%s: an unfenced turn between the holder's turns: %v", id, log)
				}
			}
		}
	})
}
