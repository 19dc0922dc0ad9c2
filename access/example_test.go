package access_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/sqlstore"
)

// A bootstrap admin creates a scoped runtime token; the secret
// authenticates until the token is revoked.
func Example() {
	dir, _ := os.MkdirTemp("", "access-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	db, _ := sqlstore.Open(ctx, sqlstore.Config{SQLitePath: filepath.Join(dir, "promptd.db")})
	defer sqlstore.Close(db)
	_ = sqlstore.Migrate(ctx, db, append(audit.Migrations(), access.Migrations()...)...)

	tokens := access.New(access.Options{DB: db, Reserved: []string{"ops"}})
	ops := &access.Token{Name: "ops", Role: access.RoleAdmin, Principal: "ops", Bootstrap: true}
	t, _ := tokens.Create(ctx, ops, access.CreateInput{Name: "team-a-runtime", Role: access.RoleRuntime,
		Scopes: &access.Scopes{Agents: []string{"team-a-*"}}})

	got, _ := tokens.Authenticate(ctx, t.Secret)
	fmt.Println(got.Name, got.Principal, got.Scopes.Allows(access.KindAgent, "team-a-bot"), got.Scopes.Allows(access.KindAgent, "team-b-bot"))
	_, _ = tokens.Revoke(ctx, "team-a-runtime")
	_, err := tokens.Authenticate(ctx, t.Secret)
	fmt.Println(err)
	// Output:
	// team-a-runtime ops true false
	// access: unknown, revoked or expired token
}
