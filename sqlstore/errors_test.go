package sqlstore_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

func TestTranslate_duplicateKey_isErrDuplicate(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db *gorm.DB) {
		d := sqlstore.Dialect(db)
		exec(t, db, "CREATE TABLE dup (id "+sqlstore.IDColumnType(d)+" NOT NULL PRIMARY KEY, u "+
			sqlstore.IDColumnType(d)+" NOT NULL, UNIQUE (u))"+sqlstore.TableOptions(d),
			"INSERT INTO dup (id, u) VALUES ('a', 'x')")
		for name, stmt := range map[string]string{
			"primary key": "INSERT INTO dup (id, u) VALUES ('a', 'y')",
			"unique key":  "INSERT INTO dup (id, u) VALUES ('b', 'x')",
		} {
			err := sqlstore.Translate(db.Exec(stmt).Error)
			if !errors.Is(err, sqlstore.ErrDuplicate) || errors.Is(err, sqlstore.ErrUnavailable) {
				t.Errorf("%s: Translate = %v, want ErrDuplicate", name, err)
			}
			if !sqlstore.IsDuplicate(err) {
				t.Errorf("%s: IsDuplicate = false", name)
			}
		}
	})
}

func TestConditionalUpdate_staleRevision_affectsNoRow(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db *gorm.DB) {
		d := sqlstore.Dialect(db)
		exec(t, db, "CREATE TABLE rev (id "+sqlstore.IDColumnType(d)+" NOT NULL PRIMARY KEY, v INTEGER NOT NULL, revision INTEGER NOT NULL)"+sqlstore.TableOptions(d),
			"INSERT INTO rev (id, v, revision) VALUES ('k', 1, 1)")
		update := func(v, expected int) int64 {
			t.Helper()
			res := db.Exec("UPDATE rev SET v = ?, revision = revision + 1 WHERE id = ? AND revision = ?", v, "k", expected)
			if res.Error != nil {
				t.Fatalf("UPDATE: %v", res.Error)
			}
			return res.RowsAffected
		}
		if n := update(2, 1); n != 1 {
			t.Fatalf("update at the current revision affected %d rows, want 1", n)
		}
		if n := update(3, 1); n != 0 {
			t.Fatalf("update at a stale revision affected %d rows, want 0", n)
		}
		// Matched rows count even when nothing changes (clientFoundRows on
		// MySQL), so an identical write is not mistaken for a conflict.
		if n := db.Exec("UPDATE rev SET v = v WHERE id = ? AND revision = ?", "k", 2).RowsAffected; n != 1 {
			t.Fatalf("no-change update at the current revision affected %d rows, want 1", n)
		}
	})
}

func TestIDColumn_isCaseSensitive(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db *gorm.DB) {
		d := sqlstore.Dialect(db)
		// On MySQL the table default is case-insensitive on purpose: the
		// id column's own type must win.
		opts := ""
		if d == sqlstore.MySQL {
			opts = " DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"
		}
		exec(t, db, "CREATE TABLE ids (id "+sqlstore.IDColumnType(d)+" NOT NULL PRIMARY KEY, note VARCHAR(10))"+opts,
			"INSERT INTO ids (id, note) VALUES ('Abc', 'upper')",
			"INSERT INTO ids (id, note) VALUES ('abc', 'lower')")
		var note string
		if err := db.Raw("SELECT note FROM ids WHERE id = ?", "abc").Scan(&note).Error; err != nil || note != "lower" {
			t.Fatalf("lookup of 'abc' = %q, %v; want lower", note, err)
		}
		var n int64
		db.Raw("SELECT COUNT(*) FROM ids WHERE id = ?", "ABC").Scan(&n)
		if n != 0 {
			t.Fatalf("'ABC' matched %d rows, want 0", n)
		}
	})
}

func TestTranslate_sqliteBusy_isUnavailable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.db")
	db := open(t, sqlstore.Config{SQLitePath: path})
	exec(t, db, "CREATE TABLE t (id INTEGER)")
	tx := db.Begin() // BEGIN IMMEDIATE: holds the write lock
	t.Cleanup(func() { tx.Rollback() })
	exec(t, tx, "INSERT INTO t VALUES (1)")

	// Another process's connection that does not wait.
	other, err := sql.Open(sqlite.DriverName, path+"?_pragma=busy_timeout(0)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, err = other.Exec("INSERT INTO t VALUES (2)")
	if !sqlstore.IsUnavailable(err) || !errors.Is(sqlstore.Translate(err), sqlstore.ErrUnavailable) {
		t.Fatalf("write while locked: Translate = %v, want ErrUnavailable", sqlstore.Translate(err))
	}
}

func TestOpen_mysqlUnreachable_isUnavailable(t *testing.T) {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := sqlstore.Open(c, sqlstore.Config{MySQLDSN: "u:secret-pw@tcp(127.0.0.1:1)/db?timeout=1s"})
	if !errors.Is(err, sqlstore.ErrUnavailable) {
		t.Fatalf("Open on a closed port: %v, want ErrUnavailable", err)
	}
}

func TestTranslate_driverErrors(t *testing.T) {
	for _, tc := range []struct {
		err               error
		unavailable, dupe bool
	}{
		{nil, false, false},
		{driver.ErrBadConn, true, false},
		{fmt.Errorf("query: %w", mysql.ErrInvalidConn), true, false},
		{sql.ErrConnDone, true, false},
		{&mysql.MySQLError{Number: 1213, Message: "Deadlock found"}, true, false},
		{&mysql.MySQLError{Number: 1205, Message: "Lock wait timeout"}, true, false},
		{&mysql.MySQLError{Number: 1062, Message: "Duplicate entry"}, false, true},
		{&mysql.MySQLError{Number: 1064, Message: "syntax"}, false, false},
		{gorm.ErrDuplicatedKey, false, true},
		{gorm.ErrRecordNotFound, false, false},
		{errors.New("other"), false, false},
	} {
		if got := sqlstore.IsUnavailable(tc.err); got != tc.unavailable {
			t.Errorf("IsUnavailable(%v) = %v", tc.err, got)
		}
		if got := sqlstore.IsDuplicate(tc.err); got != tc.dupe {
			t.Errorf("IsDuplicate(%v) = %v", tc.err, got)
		}
		if tr := sqlstore.Translate(tc.err); tc.err != nil && !errors.Is(tr, tc.err) {
			t.Errorf("Translate(%v) lost the cause: %v", tc.err, tr)
		}
	}
}

func TestDialect_andKeyColumnType(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db *gorm.DB) {
		d := sqlstore.Dialect(db)
		want := map[string]string{
			sqlstore.MySQL:  "VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
			sqlstore.SQLite: "TEXT",
		}[d]
		if want == "" {
			t.Fatalf("Dialect = %q", d)
		}
		if got := sqlstore.IDColumnType(d); got != want {
			t.Errorf("IDColumnType(%q) = %q, want %q", d, got, want)
		}
	})
}
