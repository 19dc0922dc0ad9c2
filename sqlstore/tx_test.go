package sqlstore_test

import (
	"database/sql"
	"errors"
	"testing"

	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

type resultA struct{ n int }

func notesTable(t *testing.T, db *gorm.DB) {
	t.Helper()
	exec(t, db, `CREATE TABLE tx_notes (id INTEGER NOT NULL PRIMARY KEY)`, `CREATE TABLE tx_hooked (id INTEGER NOT NULL PRIMARY KEY)`)
}

func count(t *testing.T, db *gorm.DB, table string) int64 {
	t.Helper()
	var n int64
	if err := db.Raw(`SELECT COUNT(*) FROM ` + table).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// insertNote is a write whose result is T.
func insertNote[T any](id int, out T) func(tx *gorm.DB) (T, error) {
	return func(tx *gorm.DB) (T, error) { return out, tx.Exec(`INSERT INTO tx_notes (id) VALUES (?)`, id).Error }
}

// recordA is a Then for writes whose result is resultA: it records the
// result in the write's transaction and counts its runs.
func recordA(runs *int) sqlstore.Then[resultA] {
	return func(tx *gorm.DB, r resultA) error {
		*runs++
		return tx.Exec(`INSERT INTO tx_hooked (id) VALUES (?)`, r.n).Error
	}
}

// A Then runs inside the write's transaction with its result: both rows
// commit together; nil Thens are skipped.
func TestTransact_then_runsInTheWritesTransaction_withItsResult(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db *gorm.DB) {
		notesTable(t, db)
		runs := 0
		if _, err := sqlstore.Transact(ctx(t), db, insertNote(1, resultA{7}), nil, recordA(&runs)); err != nil {
			t.Fatal(err)
		}
		var hooked int
		if err := db.Raw(`SELECT id FROM tx_hooked`).Scan(&hooked).Error; err != nil || runs != 1 || hooked != 7 || count(t, db, "tx_notes") != 1 {
			t.Fatalf("runs %d, hooked id %d (%v), notes %d", runs, hooked, err, count(t, db, "tx_notes"))
		}
		// A write without Thens runs none (the control: the count stays).
		if _, err := sqlstore.Transact(ctx(t), db, insertNote(2, resultA{8})); err != nil || runs != 1 || count(t, db, "tx_hooked") != 1 {
			t.Fatalf("a write without Thens: %v, runs %d", err, runs)
		}
	})
}

// A Then that fails rolls its write back; the retry that runs it again
// commits both, once.
func TestTransact_whenTheThenFails_rollsBackTheWrite_andTheRetryRunsIt(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db *gorm.DB) {
		notesTable(t, db)
		boom := errors.New("boom")
		runs := 0
		then := func(tx *gorm.DB, r resultA) error {
			if runs++; runs == 1 {
				return boom
			}
			return tx.Exec(`INSERT INTO tx_hooked (id) VALUES (?)`, r.n).Error
		}
		if _, err := sqlstore.Transact(ctx(t), db, insertNote(1, resultA{1}), then); !errors.Is(err, boom) {
			t.Fatalf("first attempt = %v", err)
		}
		if n := count(t, db, "tx_notes"); n != 0 {
			t.Fatalf("the failed Then left %d rows", n)
		}
		if _, err := sqlstore.Transact(ctx(t), db, insertNote(1, resultA{1}), then); err != nil {
			t.Fatal(err)
		}
		if runs != 2 || count(t, db, "tx_notes") != 1 || count(t, db, "tx_hooked") != 1 {
			t.Fatalf("runs %d, notes %d, hooked %d", runs, count(t, db, "tx_notes"), count(t, db, "tx_hooked"))
		}
	})
}

// READ COMMITTED on MySQL: a second read in the transaction sees a row
// another connection committed after the first read; the default level
// (REPEATABLE READ, the control) keeps the first read's snapshot.
func TestTransactIsolated_readCommittedOnMySQL_seesCommitsMadeDuringTheTransaction(t *testing.T) {
	db := openMySQL(t)
	exec(t, db, `CREATE TABLE tx_iso (id INTEGER NOT NULL PRIMARY KEY, v INTEGER NOT NULL)`, `INSERT INTO tx_iso VALUES (1, 0)`)
	reads := func(tx *gorm.DB) ([2]int, error) {
		var out [2]int
		if err := tx.Raw(`SELECT v FROM tx_iso WHERE id = 1`).Scan(&out[0]).Error; err != nil {
			return out, err
		}
		if err := db.Exec(`UPDATE tx_iso SET v = v + 1 WHERE id = 1`).Error; err != nil { // another connection, committed
			return out, err
		}
		return out, tx.Raw(`SELECT v FROM tx_iso WHERE id = 1`).Scan(&out[1]).Error
	}
	rr, err := sqlstore.Transact(ctx(t), db, reads)
	if err != nil || rr[0] != rr[1] {
		t.Fatalf("Transact (repeatable read) read %v, %v: want one value twice", rr, err)
	}
	rc, err := sqlstore.TransactIsolated(ctx(t), db, sql.LevelReadCommitted, reads)
	if err != nil || rc[1] != rc[0]+1 {
		t.Fatalf("TransactIsolated(read committed) read %v, %v: want the second read to see the commit", rc, err)
	}
	// the level was the transaction's only: the next one is back to the default
	if rr, err := sqlstore.Transact(ctx(t), db, reads); err != nil || rr[0] != rr[1] {
		t.Fatalf("Transact after TransactIsolated read %v, %v", rr, err)
	}
}
