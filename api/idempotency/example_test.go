package idempotency_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"gorm.io/gorm"

	"github.com/promptd/promptd/api/idempotency"
	"github.com/promptd/promptd/sqlstore"
)

// A write records its answer in its own transaction; a retry with the same
// key and body finds it and replays it.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "idempotency-example")
	defer os.RemoveAll(dir)
	db, _ := sqlstore.Open(ctx, sqlstore.Config{SQLitePath: filepath.Join(dir, "db")})
	defer sqlstore.Close(db)
	_ = sqlstore.Migrate(ctx, db, idempotency.Migrations()...)
	store := idempotency.New(db, idempotency.Options{})

	body := []byte(`{"name":"x"}`)
	key := idempotency.NewKey("ops", "POST", "/v1/things", nil, "client-key-1", idempotency.HashBody(body))
	write := func() string {
		if r, _ := store.Lookup(ctx, key); r != nil {
			return fmt.Sprintf("replayed %d %s", r.Status, r.Body)
		}
		end, _ := store.Begin(key)
		defer end()
		var answer []byte
		// The answer is recorded inside the write's transaction, by the
		// Then handed to it.
		record := func(tx *gorm.DB, result string) error {
			r := idempotency.Response{Status: 201, ContentType: "application/json", Body: []byte(result)}
			if err := store.Insert(ctx, tx, key, r); err != nil {
				return err
			}
			answer = r.Body
			return nil
		}
		_, _ = sqlstore.Transact(ctx, db, func(tx *gorm.DB) (string, error) {
			return `{"id":1}`, nil // the write itself
		}, record)
		return fmt.Sprintf("created 201 %s", answer)
	}
	fmt.Println(write())
	fmt.Println(write())
	// Output:
	// created 201 {"id":1}
	// replayed 201 {"id":1}
}
