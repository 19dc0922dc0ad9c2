package intent_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/intent"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/sqlstore"
)

func migrations() []sqlstore.Migration {
	return append(audit.Migrations(), intent.Migrations()...)
}

// clock is SQLite's clock (MariaDB's own decides there).
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// forEachDialect runs f on SQLite (with a clock it moves) and MariaDB
// (whose clock moves by itself: pass waits in real time).
func forEachDialect(t *testing.T, f func(t *testing.T, s *intent.Service, db *gorm.DB, pass func(time.Duration))) {
	t.Run(sqlstore.SQLite, func(t *testing.T) {
		db := testenv.OpenDB(t, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "i.db")}, migrations())
		c := &clock{now: time.Now()}
		f(t, intent.New(intent.Options{DB: db, Instance: "i1", Now: c.Now}), db, c.Add)
	})
	t.Run(sqlstore.MySQL, func(t *testing.T) {
		db := testenv.OpenDB(t, sqlstore.Config{MySQLDSN: testenv.MySQLDSN(t)}, migrations())
		f(t, intent.New(intent.Options{DB: db, Instance: "i1"}), db, time.Sleep)
	})
}

func records(board string, ids ...string) intent.Scope {
	return intent.Scope{Records: []intent.RecordScope{{Board: board, IDs: ids}}}
}

func TestRegister_exclusiveRefusesOverlap_advisoryReports_disjointPasses(t *testing.T) {
	forEachDialect(t, func(t *testing.T, s *intent.Service, _ *gorm.DB, _ func(time.Duration)) {
		ctx := context.Background()
		a, err := s.Register(ctx, intent.Input{Holder: "agent-a", Scope: records("crm", "c1", "c2"), Description: "import batch 1"})
		if err != nil {
			t.Fatal(err)
		}
		if a.Intent.Mode != intent.Exclusive || a.Intent.Fence < 1 || len(a.Overlaps) != 0 {
			t.Fatalf("first = %+v", a)
		}
		// an exclusive overlap: 409 naming a, with its holder and scope
		_, err = s.Register(ctx, intent.Input{Holder: "agent-b", Scope: intent.Scope{Records: []intent.RecordScope{{Board: "crm", Prefixes: []string{"c"}}}}})
		var c *intent.Conflict
		if !errors.As(err, &c) || len(c.Intents) != 1 || c.Intents[0].ID != a.Intent.ID || c.Intents[0].Holder != "agent-a" ||
			len(c.Intents[0].Scope.Records) != 1 || c.Intents[0].Scope.Records[0].IDs[1] != "c2" {
			t.Fatalf("overlapping exclusive: %v", err)
		}
		if p := c.Problem(); p.Code != "intent_conflict" {
			t.Fatalf("problem %+v", p)
		}
		// an advisory one overlapping a live exclusive one is refused too
		if _, err := s.Register(ctx, intent.Input{Holder: "agent-b", Mode: intent.Advisory, Scope: records("crm", "c2")}); !errors.As(err, &c) {
			t.Fatalf("advisory over exclusive: %v", err)
		}
		// disjoint: passes, with a higher fence in the same space
		d, err := s.Register(ctx, intent.Input{Holder: "agent-b", Scope: records("crm", "c3")})
		if err != nil || d.Intent.Fence <= a.Intent.Fence {
			t.Fatalf("disjoint: %+v %v", d, err)
		}
		// advisory over advisory: registered, and reported
		x, err := s.Register(ctx, intent.Input{Holder: "x", Mode: intent.Advisory, Scope: intent.Scope{Agents: []string{"team-a-*"}, Envs: []string{"prod"}}})
		if err != nil {
			t.Fatal(err)
		}
		y, err := s.Register(ctx, intent.Input{Holder: "y", Mode: intent.Advisory, Scope: intent.Scope{Agents: []string{"team-a-support"}}})
		if err != nil || len(y.Overlaps) != 1 || y.Overlaps[0].ID != x.Intent.ID {
			t.Fatalf("advisory overlap: %+v %v", y, err)
		}
		// the same agent in another env does not overlap x
		z, err := s.Register(ctx, intent.Input{Holder: "z", Mode: intent.Advisory, Scope: intent.Scope{Agents: []string{"team-a-support"}, Envs: []string{"staging"}}})
		if err != nil || len(z.Overlaps) != 1 || z.Overlaps[0].ID != y.Intent.ID {
			t.Fatalf("other env: %+v %v", z, err)
		}
		// the overlap query
		got, _, err := s.List(ctx, intent.Query{Scope: records("crm", "c1"), Limit: 10})
		if err != nil || len(got) != 1 || got[0].ID != a.Intent.ID {
			t.Fatalf("list: %v %v", got, err)
		}
		// released: gone from the graph, so the overlap registers now
		if _, err := s.Release(ctx, a.Intent.ID, a.Intent.Fence); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Register(ctx, intent.Input{Holder: "agent-b", Scope: records("crm", "c1")}); err != nil {
			t.Fatalf("after release: %v", err)
		}
	})
}

func TestCheck_expiredIsStaleFence_outsideScopeIsRefused_renewKeepsItAlive(t *testing.T) {
	forEachDialect(t, func(t *testing.T, s *intent.Service, db *gorm.DB, pass func(time.Duration)) {
		ctx := context.Background()
		r, err := s.Register(ctx, intent.Input{Holder: "a", Scope: intent.Scope{Records: []intent.RecordScope{{Board: "crm", Prefixes: []string{"eu-"}}},
			Agents: []string{"importer"}}, TTL: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ref := intent.Ref{ID: r.Intent.ID, Fence: r.Intent.Fence}
		check := func(targets ...intent.Target) error {
			return db.Transaction(func(tx *gorm.DB) error { return s.Check(tx, ref, "intent", targets...) })
		}
		if err := check(intent.Target{Board: "crm", Record: "eu-17"}, intent.Target{Agent: "importer", Env: "prod"}); err != nil {
			t.Fatalf("inside: %v", err)
		}
		var out *intent.OutsideScope
		if err := check(intent.Target{Board: "crm", Record: "us-1"}); !errors.As(err, &out) || out.Problem().Code != "outside_intent" {
			t.Fatalf("outside: %v", err)
		}
		if err := check(intent.Target{Agent: "other"}); !errors.As(err, &out) {
			t.Fatalf("other agent: %v", err)
		}
		var ended *intent.Ended
		if err := db.Transaction(func(tx *gorm.DB) error {
			return s.Check(tx, intent.Ref{ID: ref.ID, Fence: ref.Fence + 1}, "intent")
		}); !errors.As(err, &ended) {
			t.Fatalf("wrong fence: %v", err)
		}
		pass(600 * time.Millisecond)
		if _, err := s.Renew(ctx, ref.ID, ref.Fence, 0); err != nil {
			t.Fatalf("renew: %v", err)
		}
		pass(600 * time.Millisecond)
		if err := check(intent.Target{Board: "crm", Record: "eu-1"}); err != nil {
			t.Fatalf("renewed: %v", err)
		}
		pass(1100 * time.Millisecond) // past the renewed TTL: the late write is refused
		if err := check(intent.Target{Board: "crm", Record: "eu-1"}); !errors.As(err, &ended) || ended.State != intent.StateExpired ||
			ended.Problem().Code != "stale_fence" {
			t.Fatalf("late write: %v", err)
		}
		if _, err := s.Renew(ctx, ref.ID, ref.Fence, 0); !errors.As(err, &ended) {
			t.Fatalf("renew after expiry: %v", err)
		}
		if n, err := s.Sweep(ctx); err != nil || n != 1 {
			t.Fatalf("sweep: %d %v", n, err)
		}
		if got, err := s.Get(ctx, ref.ID); err != nil || got.State != intent.StateExpired || got.EndedAt == nil {
			t.Fatalf("get: %+v %v", got, err)
		}
		var evs []string
		if err := db.Raw(`SELECT action FROM audit_events WHERE resource = ? ORDER BY id`, ref.ID).Scan(&evs).Error; err != nil ||
			fmt.Sprint(evs) != "[intent.registered intent.expired]" {
			t.Fatalf("events %v %v", evs, err)
		}
	})
}

// Twenty concurrent, overlapping exclusive registrations over three
// instances (three services, each its own connection pool to one MariaDB
// database), for 100 rounds: in each round exactly one wins, and every
// other is refused naming the winner and its scope. The control (the same
// registrations with the overlap check skipped, by registering advisory
// ones) shows the race is real: all of them register.
func TestRegister_20ConcurrentExclusiveOn3Instances_exactlyOneWinsEachRound(t *testing.T) {
	dsn := testenv.MySQLDSN(t)
	base := testenv.OpenDB(t, sqlstore.Config{MySQLDSN: dsn}, migrations())
	services := []*intent.Service{intent.New(intent.Options{DB: base, Instance: "i1"})}
	for i := 2; i <= 3; i++ {
		db := testenv.OpenDB(t, sqlstore.Config{MySQLDSN: dsn}, migrations())
		services = append(services, intent.New(intent.Options{DB: db, Instance: fmt.Sprint("i", i)}))
	}
	ctx := context.Background()
	const rounds, agents = 100, 20
	run := func(round int, mode string) (wins []*intent.Registered, losses []*intent.Conflict, other []error) {
		var (
			mu sync.Mutex
			wg sync.WaitGroup
		)
		board := fmt.Sprintf("b%d-%s", round, mode)
		for a := range agents {
			wg.Go(func() {
				// each overlaps the others on "shared" (and a neighbour's id)
				sc := records(board, "shared", fmt.Sprint("r", a), fmt.Sprint("r", (a+1)%agents))
				if a%4 == 0 {
					sc = intent.Scope{Records: []intent.RecordScope{{Board: board, Prefixes: []string{"sh"}}}}
				}
				r, err := services[a%3].Register(ctx, intent.Input{Holder: fmt.Sprint("agent-", a), Mode: mode, Scope: sc, TTL: time.Minute})
				mu.Lock()
				defer mu.Unlock()
				var c *intent.Conflict
				switch {
				case err == nil:
					wins = append(wins, r)
				case errors.As(err, &c):
					losses = append(losses, c)
				default:
					other = append(other, err)
				}
			})
		}
		wg.Wait()
		return
	}
	refused := 0
	for round := range rounds {
		wins, losses, other := run(round, intent.Exclusive)
		refused += len(losses)
		if len(other) > 0 {
			t.Fatalf("round %d: errors %v", round, other)
		}
		if len(wins) != 1 || len(losses) != agents-1 {
			t.Fatalf("round %d: %d wins, %d refused", round, len(wins), len(losses))
		}
		w := wins[0].Intent
		for _, c := range losses {
			if len(c.Intents) != 1 || c.Intents[0].ID != w.ID || c.Intents[0].Holder != w.Holder ||
				fmt.Sprint(c.Intents[0].Scope) != fmt.Sprint(w.Scope) {
				t.Fatalf("round %d: refused naming %+v, winner %+v", round, c.Intents, w)
			}
		}
	}
	t.Logf("%d rounds of %d overlapping exclusive registrations on 3 instances: one winner each round, %d refused naming the winner and its scope",
		rounds, agents, refused)
	// control: advisory registrations of the same scopes all pass
	wins, losses, other := run(0, intent.Advisory)
	if len(wins) != agents || len(losses) != 0 || len(other) != 0 {
		t.Fatalf("control: %d wins %d refused %v", len(wins), len(losses), other)
	}
	overlapping := 0
	for _, w := range wins {
		if len(w.Overlaps) > 0 {
			overlapping++
		}
	}
	if overlapping != agents-1 {
		t.Fatalf("control: %d advisory registrations reported overlaps, want %d (all but the first)", overlapping, agents-1)
	}
	t.Logf("control: %d advisory registrations of the same scopes all registered, %d reporting their overlaps", len(wins), overlapping)
}
