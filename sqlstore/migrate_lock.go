package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// migrateLockWait is how long Migrate waits for another instance's
// migrations (GET_LOCK timeout, in seconds).
const migrateLockWait = 30

// lockMigrations takes the MySQL named lock that serialises Migrate across
// instances, on a connection of its own that holds it until unlock. The
// lock is named after the database, so deployments sharing a server do not
// wait for each other; the server drops it if the connection dies.
func lockMigrations(ctx context.Context, db *gorm.DB) (unlock func(), err error) {
	if Dialect(db) != MySQL {
		return func() {}, nil
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: migration lock: %w", Translate(err))
	}
	var name string
	var got sql.NullInt64
	err = conn.QueryRowContext(ctx, "SELECT LEFT(CONCAT('promptd_migrate.', DATABASE()), 64)").Scan(&name)
	if err == nil {
		err = conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", name, migrateLockWait).Scan(&got)
	}
	switch {
	case err != nil:
		_ = conn.Close()
		return nil, fmt.Errorf("sqlstore: migration lock: %w", Translate(err))
	case !got.Valid || got.Int64 != 1:
		_ = conn.Close()
		return nil, fmt.Errorf("sqlstore: migration lock %q: another instance has been migrating for %ds; "+
			"retry when it is done", name, migrateLockWait)
	}
	return func() {
		// A fresh bounded context: ctx may be cancelled by now.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = conn.ExecContext(rctx, "DO RELEASE_LOCK(?)", name)
		_ = conn.Close()
	}, nil
}
