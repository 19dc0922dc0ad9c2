package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

type resultA struct{ n int }
type resultB struct{ n int }

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

// recordA is a hook for writes whose result is resultA: it records the
// result in the write's transaction and counts its runs.
func recordA(runs *int) func(ctx context.Context, tx *gorm.DB, r resultA) error {
	return func(ctx context.Context, tx *gorm.DB, r resultA) error {
		*runs++
		return tx.Exec(`INSERT INTO tx_hooked (id) VALUES (?)`, r.n).Error
	}
}

// The hook of a write whose result is A, and a transaction whose result is
// B (the write's result type changed): the transaction fails and writes
// nothing, instead of committing without the hook.
func TestTransact_whenTheHookIsForAnotherResultType_rollsBackWithErrHookType(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db *gorm.DB) {
		notesTable(t, db)
		runs := 0
		hctx := sqlstore.OnCommit(ctx(t), recordA(&runs))
		_, err := sqlstore.Transact(hctx, db, insertNote(1, resultB{1}))
		if !errors.Is(err, sqlstore.ErrHookType) {
			t.Errorf("Transact = %v, want ErrHookType", err)
		}
		if n := count(t, db, "tx_notes"); n != 0 || runs != 0 {
			t.Fatalf("%d rows written, hook ran %d times", n, runs)
		}
		// The hook is still there for the write it was registered for.
		if _, err := sqlstore.Transact(hctx, db, insertNote(2, resultA{2})); err != nil {
			t.Fatal(err)
		}
		if runs != 1 || count(t, db, "tx_hooked") != 1 {
			t.Fatalf("hook ran %d times", runs)
		}
	})
}

func TestTransact_afterTheHooksTransactionCommitted_doesNotRunItAgain(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db *gorm.DB) {
		notesTable(t, db)
		runs := 0
		hctx := sqlstore.OnCommit(ctx(t), recordA(&runs))
		for i := 1; i <= 2; i++ {
			if _, err := sqlstore.Transact(hctx, db, insertNote(i, resultA{i})); err != nil {
				t.Fatal(err)
			}
		}
		// A spent hook does not make a later transaction of another type fail.
		if _, err := sqlstore.Transact(hctx, db, insertNote(3, resultB{3})); err != nil {
			t.Fatal(err)
		}
		if runs != 1 {
			t.Fatalf("the hook ran %d times, want once", runs)
		}
	})
}

// A hook that fails rolls its write back, and stays for the retry, whose
// commit records it once.
func TestTransact_whenTheHookFails_rollsBackTheWrite_andTheRetryRunsIt(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db *gorm.DB) {
		notesTable(t, db)
		boom := errors.New("boom")
		runs := 0
		hctx := sqlstore.OnCommit(ctx(t), func(ctx context.Context, tx *gorm.DB, r resultA) error {
			if runs++; runs == 1 {
				return boom
			}
			return tx.Exec(`INSERT INTO tx_hooked (id) VALUES (?)`, r.n).Error
		})
		if _, err := sqlstore.Transact(hctx, db, insertNote(1, resultA{1})); !errors.Is(err, boom) {
			t.Fatalf("first attempt = %v", err)
		}
		if n := count(t, db, "tx_notes"); n != 0 {
			t.Fatalf("the failed hook left %d rows", n)
		}
		if _, err := sqlstore.Transact(hctx, db, insertNote(1, resultA{1})); err != nil {
			t.Fatal(err)
		}
		if runs != 2 || count(t, db, "tx_notes") != 1 || count(t, db, "tx_hooked") != 1 {
			t.Fatalf("runs %d, notes %d, hooked %d", runs, count(t, db, "tx_notes"), count(t, db, "tx_hooked"))
		}
	})
}

// A side transaction of the request, deliberately without the hooks,
// commits without them and leaves them to the write that answers.
func TestTransact_withoutCommitHooks_leavesTheHookToTheWrite(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db *gorm.DB) {
		notesTable(t, db)
		runs := 0
		hctx := sqlstore.OnCommit(ctx(t), recordA(&runs))
		if _, err := sqlstore.Transact(sqlstore.WithoutCommitHooks(hctx), db, insertNote(1, resultB{1})); err != nil {
			t.Fatal(err)
		}
		if runs != 0 {
			t.Fatal("a side transaction ran the hook")
		}
		if _, err := sqlstore.Transact(hctx, db, insertNote(2, resultA{2})); err != nil || runs != 1 {
			t.Fatalf("the write: %v, hook ran %d times", err, runs)
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
