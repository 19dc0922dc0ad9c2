package access_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/sqlstore"
)

// TestAuthenticate_whenSQLCannotConfirm_isUnavailable: a cached check is
// trusted for CacheTTL; past it, with the database gone, the managed token
// is ErrUnavailable (503), never accepted on stale evidence.
func TestAuthenticate_whenSQLCannotConfirm_isUnavailable(t *testing.T) {
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "promptd.db")})
	if err != nil {
		t.Fatal(err)
	}
	if err := sqlstore.Migrate(ctx, db, append(audit.Migrations(), access.Migrations()...)...); err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Now()}
	s := access.New(access.Options{DB: db, Now: c.now})
	ops := &access.Token{Name: "ops", Role: access.RoleAdmin, Principal: "ops", Bootstrap: true}
	tok, err := s.Create(ctx, ops, access.CreateInput{Name: "rt", Role: access.RoleRuntime})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, tok.Secret); err != nil {
		t.Fatal(err)
	}
	_ = sqlstore.Close(db)
	c.add(500 * time.Millisecond)
	if _, err := s.Authenticate(ctx, tok.Secret); err != nil {
		t.Fatalf("within the TTL the cached check holds: %v", err)
	}
	c.add(time.Second)
	if _, err := s.Authenticate(ctx, tok.Secret); !errors.Is(err, access.ErrUnavailable) {
		t.Fatalf("past the TTL with SQL gone: %v, want ErrUnavailable", err)
	}
	if _, err := s.Authenticate(ctx, "not-a-managed-secret"); !errors.Is(err, access.ErrUnknown) {
		t.Fatalf("a secret of another form: %v, want ErrUnknown at once", err)
	}
}
