package sqlstore_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// With SQLite, a read outside a transaction does not queue behind a
// transaction that holds the writer (embedded mode used to have one
// connection: one client's long transaction or heavy read made every
// other request wait, then 503). It sees what committed before it, not
// the open transaction's writes; reads inside a transaction stay on it.
func TestSQLite_readsOutsideATransaction_doNotWaitForTheWriter(t *testing.T) {
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "p.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer sqlstore.Close(db)
	if err := db.Exec(`CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT NOT NULL)`).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Exec(`INSERT INTO kv (k, v) VALUES ('a', 'committed')`).Error; err != nil {
		t.Fatal(err)
	}
	held, release := make(chan struct{}), make(chan struct{})
	txDone := make(chan error, 1)
	go func() {
		txDone <- db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec(`UPDATE kv SET v = 'open' WHERE k = 'a'`).Error; err != nil {
				return err
			}
			var v string
			if err := tx.Raw(`SELECT v FROM kv WHERE k = 'a'`).Scan(&v).Error; err != nil || v != "open" {
				t.Errorf("a read inside the transaction = %q, %v; want its own write", v, err)
			}
			if v := directRead(tx); v != "open" {
				t.Errorf("a direct read inside the transaction = %q; want its own write", v)
			}
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	read := make(chan string, 2)
	go func() {
		var v string
		if err := db.WithContext(ctx).Raw(`SELECT v FROM kv WHERE k = 'a'`).Scan(&v).Error; err != nil {
			v = "error: " + err.Error()
		}
		read <- v
	}()
	// sqlstore.QueryDirect outside a transaction: the read pool too
	go func() { read <- directRead(db.WithContext(ctx)) }()
	for range 2 {
		select {
		case v := <-read:
			if v != "committed" {
				t.Errorf("read beside the open transaction = %q, want the committed value", v)
			}
		case <-time.After(10 * time.Second):
			t.Error("a read outside the transaction waited 10 s for the writer")
		}
	}
	close(release)
	if err := <-txDone; err != nil {
		t.Fatal(err)
	}
	var v string
	if err := db.Raw(`SELECT v FROM kv WHERE k = 'a'`).Scan(&v).Error; err != nil || v != "open" {
		t.Fatalf("after the commit = %q, %v", v, err)
	}
}

// directRead reads kv's a with sqlstore.QueryDirect.
func directRead(db *gorm.DB) string {
	rows, err := sqlstore.QueryDirect(db, `SELECT v FROM kv WHERE k = ?`, "a")
	if err != nil {
		return "error: " + err.Error()
	}
	defer rows.Close()
	var v string
	if !rows.Next() || rows.Scan(&v) != nil {
		return "no row"
	}
	return v
}
