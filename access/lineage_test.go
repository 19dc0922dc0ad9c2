package access_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/sqlstore"
)

// lineage is a service with a parent admin token (made by the bootstrap
// admin "ops") and a child runtime token made by the parent.
type lineage struct {
	s             *access.Service
	db            *gorm.DB
	c             *clock
	parent, child *access.WithSecret
}

func newLineage(t *testing.T, db *gorm.DB, parentIn, childIn access.CreateInput) *lineage {
	t.Helper()
	ctx := context.Background()
	l := &lineage{db: db, c: &clock{t: time.Now()}}
	l.s = access.New(access.Options{DB: db, Now: l.c.now, Reserved: []string{"ops"}})
	ops := &access.Token{Name: "ops", Role: access.RoleAdmin, Principal: "ops", Bootstrap: true}
	var err error
	if l.parent, err = l.s.Create(ctx, ops, parentIn); err != nil {
		t.Fatal(err)
	}
	creator, err := l.s.Authenticate(ctx, l.parent.Secret)
	if err != nil {
		t.Fatal(err)
	}
	if l.child, err = l.s.Create(ctx, creator, childIn); err != nil {
		t.Fatal(err)
	}
	if _, err := l.s.Authenticate(ctx, l.child.Secret); err != nil {
		t.Fatalf("the child before anything changed: %v", err)
	}
	return l
}

func lineageMigrations() []sqlstore.Migration {
	return append(audit.Migrations(), access.Migrations()...)
}

// A token whose creator is revoked stops working at once on the instance
// that revoked it (and, through the bus, on the others: internal/harness/e2e).
func TestLineage_creatorRevoked_childIsRefusedAtOnce(t *testing.T) {
	testenv.ForEachDialect(t, lineageMigrations(), func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		l := newLineage(t, db, access.CreateInput{Name: "parent", Role: access.RoleAdmin},
			access.CreateInput{Name: "child", Role: access.RoleRuntime})
		if _, err := l.s.Revoke(ctx, "parent"); err != nil {
			t.Fatal(err)
		}
		if _, err := l.s.Authenticate(ctx, l.child.Secret); !errors.Is(err, access.ErrUnknown) {
			t.Fatalf("the child of a revoked token: %v, want ErrUnknown", err)
		}
		// And another instance, with no bus, that never saw the revocation
		// refuses it too (a fresh check reads the creator chain).
		other := access.New(access.Options{DB: db, Reserved: []string{"ops"}})
		if _, err := other.Authenticate(ctx, l.child.Secret); !errors.Is(err, access.ErrUnknown) {
			t.Fatalf("another instance: %v, want ErrUnknown", err)
		}
	})
}

// A creator that expires (its row changed behind the service's back, as
// an older release or an operator could) takes its children with it
// within the cache TTL.
func TestLineage_creatorExpired_childIsRefusedWithinTheCacheTTL(t *testing.T) {
	testenv.ForEachDialect(t, lineageMigrations(), func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
		l := newLineage(t, db, access.CreateInput{Name: "parent", Role: access.RoleAdmin, ExpiresAt: &at},
			access.CreateInput{Name: "child", Role: access.RoleRuntime, ExpiresAt: &at})
		soon := l.c.now().Add(time.Minute).UnixMilli()
		if err := db.Exec(`UPDATE access_tokens SET expires_at_ms = ? WHERE name = 'parent'`, soon).Error; err != nil {
			t.Fatal(err)
		}
		l.c.add(2 * time.Minute) // the child's own expiry is an hour away
		if _, err := l.s.Authenticate(ctx, l.child.Secret); !errors.Is(err, access.ErrUnknown) {
			t.Fatalf("the child of an expired token: %v, want ErrUnknown", err)
		}
	})
}

// A creator whose scopes or role narrow narrows its children: the
// effective scopes are the intersection along the creator chain, the role
// the narrowest.
func TestLineage_creatorNarrowed_childNarrowsWithinTheCacheTTL(t *testing.T) {
	testenv.ForEachDialect(t, lineageMigrations(), func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		l := newLineage(t, db, access.CreateInput{Name: "parent", Role: access.RoleAdmin},
			access.CreateInput{Name: "child", Role: access.RoleAdmin, Scopes: &access.Scopes{Agents: []string{"team-*"}, Envs: []string{"prod", "dev"}}})
		if err := db.Exec(`UPDATE access_tokens SET role = 'runtime', scopes = ? WHERE name = 'parent'`,
			`{"agents":["team-a-*","other"],"envs":null,"boards":["b1"]}`).Error; err != nil {
			t.Fatal(err)
		}
		l.c.add(1100 * time.Millisecond) // past the cache TTL
		tok, err := l.s.Authenticate(ctx, l.child.Secret)
		if err != nil {
			t.Fatal(err)
		}
		if tok.Role != access.RoleRuntime {
			t.Errorf("role = %q, want runtime (its creator's)", tok.Role)
		}
		sc := tok.Scopes
		if sc == nil || !slices.Equal(sc.Agents, []string{"team-a-*"}) || !slices.Equal(sc.Envs, []string{"prod", "dev"}) ||
			!slices.Equal(sc.Boards, []string{"b1"}) {
			t.Fatalf("scopes = %+v, want agents [team-a-*], envs [prod dev], boards [b1]", sc)
		}
		for _, c := range []struct {
			kind, name string
			ok         bool
		}{{access.KindAgent, "team-a-bot", true}, {access.KindAgent, "team-b-bot", false}, {access.KindAgent, "other", false},
			{access.KindEnv, "prod", true}, {access.KindEnv, "staging", false}, {access.KindBoard, "b2", false}} {
			if got := sc.Allows(c.kind, c.name); got != c.ok {
				t.Errorf("Allows(%s, %s) = %v, want %v", c.kind, c.name, got, c.ok)
			}
		}
		// What the child creates is checked against what it may do now.
		if _, err := l.s.Create(ctx, tok, access.CreateInput{Name: "grandchild", Role: access.RoleAdmin}); err == nil {
			t.Fatal("a narrowed token created an admin token")
		}
		// The stored row is unchanged: the narrowing is computed at use.
		list, _, err := l.s.List(ctx, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range list {
			if x.Name == "child" && (x.Role != access.RoleAdmin || !slices.Equal(x.Scopes.Envs, []string{"prod", "dev"})) {
				t.Fatalf("the listed child = %+v", x)
			}
		}
	})
}
