package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

func Example() {
	dir, _ := os.MkdirTemp("", "sqlstore-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	db, err := sqlstore.Open(ctx, sqlstore.Config{SQLitePath: filepath.Join(dir, "promptd.db")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sqlstore.Close(db)

	err = sqlstore.Migrate(ctx, db, sqlstore.Migration{
		Component: "notes", Version: 1, Name: "create notes",
		Up: func(tx *gorm.DB) error {
			d := sqlstore.Dialect(tx)
			return tx.Exec("CREATE TABLE IF NOT EXISTS notes (id " + sqlstore.IDColumnType(d) +
				" NOT NULL PRIMARY KEY, body TEXT NOT NULL, revision INTEGER NOT NULL)" + sqlstore.TableOptions(d)).Error
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	db.Exec("INSERT INTO notes (id, body, revision) VALUES (?, ?, 1)", "n1", "hello")
	err = sqlstore.Translate(db.Exec("INSERT INTO notes (id, body, revision) VALUES (?, ?, 1)", "n1", "again").Error)
	fmt.Println("second insert duplicate:", errors.Is(err, sqlstore.ErrDuplicate))

	// A write that read revision 1 after someone else moved it to 2.
	db.Exec("UPDATE notes SET body = ?, revision = revision + 1 WHERE id = ? AND revision = ?", "v2", "n1", 1)
	res := db.Exec("UPDATE notes SET body = ?, revision = revision + 1 WHERE id = ? AND revision = ?", "lost?", "n1", 1)
	fmt.Println("stale write rows affected:", res.RowsAffected)
	// Output:
	// second insert duplicate: true
	// stale write rows affected: 0
}
