package testenv

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// ForEachDialect runs f against a fresh, migrated SQLite file and a fresh,
// migrated MariaDB database (skipped, or failed when Required, without a
// server).
func ForEachDialect(t *testing.T, migrations []sqlstore.Migration, f func(t *testing.T, db *gorm.DB)) {
	t.Helper()
	t.Run(sqlstore.SQLite, func(t *testing.T) {
		f(t, OpenDB(t, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "promptd.db")}, migrations))
	})
	t.Run(sqlstore.MySQL, func(t *testing.T) {
		f(t, OpenDB(t, sqlstore.Config{MySQLDSN: MySQLDSN(t)}, migrations))
	})
}

// OpenDB opens and migrates a database, closed when t ends.
func OpenDB(t testing.TB, cfg sqlstore.Config, migrations []sqlstore.Migration) *gorm.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	db, err := sqlstore.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("testenv: open: %v", err)
	}
	t.Cleanup(func() { _ = sqlstore.Close(db) })
	if err := sqlstore.Migrate(ctx, db, migrations...); err != nil {
		t.Fatalf("testenv: migrate: %v", err)
	}
	return db
}
