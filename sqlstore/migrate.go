package sqlstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"gorm.io/gorm"
)

// Migration is one versioned schema change of a component.
//
// Up runs in its own transaction and the migration is recorded in the same
// transaction after Up succeeds. MySQL commits DDL (CREATE, ALTER, ...)
// implicitly, so on MySQL a failed Up may leave part of its DDL behind and
// will run again at the next start: write DDL that can run twice
// (CREATE TABLE IF NOT EXISTS, one ALTER per migration). Use Dialect(tx),
// KeyColumnType and TableOptions for the parts that differ by dialect.
type Migration struct {
	Component string // "promptstore", "session", ...: up to 64 bytes
	Version   int    // 1, 2, 3, ... per component
	Name      string // what it does, recorded for operators
	Up        func(tx *gorm.DB) error
}

// ErrSchemaTooNew is returned (as a *SchemaTooNewError) when the database
// holds migrations of a component newer than any this binary knows: it was
// migrated by a newer promptd, and this one refuses to run against it.
var ErrSchemaTooNew = errors.New("sqlstore: database schema is newer than this binary")

// SchemaTooNewError names the component whose schema is too new.
type SchemaTooNewError struct {
	Component string
	Applied   int // highest version recorded in the database
	Known     int // highest version this binary has
}

func (e *SchemaTooNewError) Error() string {
	return fmt.Sprintf("sqlstore: database schema of %q is at version %d, but this binary knows only up to %d: "+
		"it was migrated by a newer promptd; run that version (downgrades are not supported)",
		e.Component, e.Applied, e.Known)
}

// Is makes errors.Is(err, ErrSchemaTooNew) true.
func (e *SchemaTooNewError) Is(target error) bool { return target == ErrSchemaTooNew }

// migrationsTable is the name of the table recording applied migrations.
const migrationsTable = "schema_migrations"

// Migrate creates the schema_migrations table if needed and applies the
// migrations not yet recorded there, in (component, version) order, each in
// its own transaction. Running it again is a no-op.
//
// Give Migrate every migration of every component each time (what cmd does
// at start). For each component it is given, it refuses to run when the
// database has a newer version than the code (ErrSchemaTooNew), and when
// a migration is missing below the highest applied one (a migration added
// out of order). Components it is not given are left alone.
//
// On MySQL, instances starting at once take turns: Migrate holds a named
// server lock (GET_LOCK, scoped to the database, waiting up to 30s) on a
// dedicated connection while it works. SQLite needs no lock: promptd uses
// it from one process with one connection.
func Migrate(ctx context.Context, db *gorm.DB, migrations ...Migration) (err error) {
	ms, err := checkMigrations(migrations)
	if err != nil {
		return err
	}
	unlock, err := lockMigrations(ctx, db)
	if err != nil {
		return err
	}
	defer unlock()

	db = db.WithContext(ctx)
	if err := createMigrationsTable(db); err != nil {
		return fmt.Errorf("sqlstore: create %s: %w", migrationsTable, Translate(err))
	}
	applied, err := appliedMigrations(db)
	if err != nil {
		return fmt.Errorf("sqlstore: read %s: %w", migrationsTable, Translate(err))
	}
	if err := checkApplied(ms, applied); err != nil {
		return err
	}
	for _, m := range ms {
		if applied[m.Component][m.Version] {
			continue
		}
		err := db.Transaction(func(tx *gorm.DB) error {
			if err := m.Up(tx); err != nil {
				return err
			}
			return tx.Exec("INSERT INTO "+migrationsTable+" (component, version, name, applied_at) VALUES (?, ?, ?, ?)",
				m.Component, m.Version, m.Name, time.Now().UTC()).Error
		})
		if err != nil {
			return fmt.Errorf("sqlstore: migration %s/%d (%s): %w", m.Component, m.Version, m.Name, Translate(err))
		}
	}
	return nil
}

// checkMigrations validates the list and returns it sorted.
func checkMigrations(migrations []Migration) ([]Migration, error) {
	ms := slices.Clone(migrations)
	slices.SortFunc(ms, func(a, b Migration) int {
		return cmp.Or(cmp.Compare(a.Component, b.Component), cmp.Compare(a.Version, b.Version))
	})
	for i, m := range ms {
		switch {
		case m.Component == "" || len(m.Component) > 64:
			return nil, fmt.Errorf("sqlstore: migration %q: component must be 1..64 bytes", m.Name)
		case m.Version < 1:
			return nil, fmt.Errorf("sqlstore: migration %s/%d: version must be positive", m.Component, m.Version)
		case m.Up == nil:
			return nil, fmt.Errorf("sqlstore: migration %s/%d: Up is nil", m.Component, m.Version)
		case i > 0 && ms[i-1].Component == m.Component && ms[i-1].Version == m.Version:
			return nil, fmt.Errorf("sqlstore: migration %s/%d is defined twice", m.Component, m.Version)
		}
	}
	return ms, nil
}

// checkApplied refuses a database that is ahead of the code, or that has
// a hole below its highest applied version.
func checkApplied(ms []Migration, applied map[string]map[int]bool) error {
	known := map[string]int{}
	for _, m := range ms {
		known[m.Component] = max(known[m.Component], m.Version)
	}
	top := map[string]int{}
	for c, vs := range applied {
		for v := range vs {
			top[c] = max(top[c], v)
		}
	}
	for _, c := range slices.Sorted(maps.Keys(known)) {
		if top[c] > known[c] {
			return &SchemaTooNewError{Component: c, Applied: top[c], Known: known[c]}
		}
	}
	for _, m := range ms {
		if !applied[m.Component][m.Version] && m.Version < top[m.Component] {
			return fmt.Errorf("sqlstore: migration %s/%d (%s) is not applied but version %d is: "+
				"migrations must be added with increasing versions", m.Component, m.Version, m.Name, top[m.Component])
		}
	}
	return nil
}

func createMigrationsTable(db *gorm.DB) error {
	d := Dialect(db)
	applied := "DATETIME NOT NULL"
	if d == MySQL {
		applied = "DATETIME(6) NOT NULL"
	}
	return db.Exec("CREATE TABLE IF NOT EXISTS " + migrationsTable + " (" +
		"component " + KeyColumnType(d, 64) + " NOT NULL, " +
		"version INTEGER NOT NULL, " +
		"name VARCHAR(255) NOT NULL, " +
		"applied_at " + applied + ", " +
		"PRIMARY KEY (component, version))" + TableOptions(d)).Error
}

func appliedMigrations(db *gorm.DB) (map[string]map[int]bool, error) {
	var rows []struct {
		Component string
		Version   int
	}
	if err := db.Raw("SELECT component, version FROM " + migrationsTable).Scan(&rows).Error; err != nil {
		return nil, err
	}
	applied := map[string]map[int]bool{}
	for _, r := range rows {
		if applied[r.Component] == nil {
			applied[r.Component] = map[int]bool{}
		}
		applied[r.Component][r.Version] = true
	}
	return applied, nil
}
