package sqlstore_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/sqlstore"
)

// forEachDialect runs f against a fresh SQLite file and a fresh MariaDB
// database (skipped, or failed with PROMPTD_REQUIRE_INTEGRATION=1, when no
// server is configured).
func forEachDialect(t *testing.T, f func(t *testing.T, db *gorm.DB)) {
	t.Helper()
	t.Run(sqlstore.SQLite, func(t *testing.T) { f(t, openSQLite(t)) })
	t.Run(sqlstore.MySQL, func(t *testing.T) { f(t, openMySQL(t)) })
}

func openSQLite(t *testing.T) *gorm.DB {
	t.Helper()
	return open(t, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "promptd.db")})
}

func openMySQL(t *testing.T) *gorm.DB {
	t.Helper()
	return open(t, sqlstore.Config{MySQLDSN: testenv.MySQLDSN(t)})
}

func open(t *testing.T, cfg sqlstore.Config) *gorm.DB {
	t.Helper()
	db, err := sqlstore.Open(ctx(t), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := sqlstore.Close(db); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// exec runs statements and fails the test on the first error.
func exec(t *testing.T, db *gorm.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if err := db.Exec(s).Error; err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}
