package sqlstore_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"gorm.io/gorm"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/sqlstore"
)

// counting returns migrations of component that create table <component>_t
// and add a column per version, counting how often each Up runs.
func counting(component string, n int, runs *[8]atomic.Int32) []sqlstore.Migration {
	var ms []sqlstore.Migration
	for v := 1; v <= n; v++ {
		ms = append(ms, sqlstore.Migration{
			Component: component, Version: v, Name: fmt.Sprintf("step %d", v),
			Up: func(tx *gorm.DB) error {
				runs[v].Add(1)
				d := sqlstore.Dialect(tx)
				if v == 1 {
					return tx.Exec("CREATE TABLE IF NOT EXISTS " + component + "_t (id " +
						sqlstore.IDColumnType(d) + " NOT NULL PRIMARY KEY)" + sqlstore.TableOptions(d)).Error
				}
				return tx.Exec(fmt.Sprintf("ALTER TABLE %s_t ADD COLUMN c%d INTEGER", component, v)).Error
			},
		})
	}
	return ms
}

func TestMigrate_appliesOnce_andRerunIsNoop(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db *gorm.DB) {
		var runs [8]atomic.Int32
		ms := counting("alpha", 3, &runs)
		// Given out of order: Migrate sorts.
		ms[0], ms[2] = ms[2], ms[0]
		for range 2 {
			if err := sqlstore.Migrate(ctx(t), db, ms...); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
		}
		for v := 1; v <= 3; v++ {
			if got := runs[v].Load(); got != 1 {
				t.Errorf("version %d ran %d times, want 1", v, got)
			}
		}
		exec(t, db, "INSERT INTO alpha_t (id, c2, c3) VALUES ('x', 2, 3)")
		var n int64
		db.Raw("SELECT COUNT(*) FROM schema_migrations WHERE component = 'alpha'").Scan(&n)
		if n != 3 {
			t.Errorf("schema_migrations has %d rows for alpha, want 3", n)
		}

		// A fourth version added later is applied alone.
		var more [8]atomic.Int32
		if err := sqlstore.Migrate(ctx(t), db, counting("alpha", 4, &more)...); err != nil {
			t.Fatalf("Migrate with a new version: %v", err)
		}
		if more[3].Load() != 0 || more[4].Load() != 1 {
			t.Errorf("after adding version 4: runs %d %d %d %d, want only version 4",
				more[1].Load(), more[2].Load(), more[3].Load(), more[4].Load())
		}
	})
}

func TestMigrate_databaseNewerThanCode_isRefused(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db *gorm.DB) {
		var runs [8]atomic.Int32
		if err := sqlstore.Migrate(ctx(t), db, counting("beta", 3, &runs)...); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
		var old [8]atomic.Int32
		err := sqlstore.Migrate(ctx(t), db, counting("beta", 2, &old)...)
		var tooNew *sqlstore.SchemaTooNewError
		if !errors.Is(err, sqlstore.ErrSchemaTooNew) || !errors.As(err, &tooNew) {
			t.Fatalf("Migrate with older code: err = %v, want ErrSchemaTooNew", err)
		}
		if tooNew.Component != "beta" || tooNew.Applied != 3 || tooNew.Known != 2 {
			t.Errorf("error = %+v, want beta applied 3 known 2", tooNew)
		}
		if !strings.Contains(err.Error(), "newer promptd") {
			t.Errorf("error text %q does not explain the downgrade", err)
		}
	})
}

func TestMigrate_failingUp_isNotRecorded_andRetried(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db *gorm.DB) {
		fail := true
		m := sqlstore.Migration{Component: "gamma", Version: 1, Name: "flaky", Up: func(tx *gorm.DB) error {
			if err := tx.Exec("CREATE TABLE IF NOT EXISTS gamma_t (id INTEGER PRIMARY KEY)").Error; err != nil {
				return err
			}
			if fail {
				return errors.New("boom")
			}
			return nil
		}}
		if err := sqlstore.Migrate(ctx(t), db, m); err == nil || !strings.Contains(err.Error(), "gamma/1 (flaky): boom") {
			t.Fatalf("Migrate with a failing Up: err = %v", err)
		}
		fail = false
		if err := sqlstore.Migrate(ctx(t), db, m); err != nil {
			t.Fatalf("Migrate again: %v", err)
		}
	})
}

func TestMigrate_missingLowerVersion_isRefused(t *testing.T) {
	forEachDialect(t, func(t *testing.T, db *gorm.DB) {
		var runs [8]atomic.Int32
		ms := counting("delta", 3, &runs)
		if err := sqlstore.Migrate(ctx(t), db, ms[0], ms[2]); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
		err := sqlstore.Migrate(ctx(t), db, ms...)
		if err == nil || !strings.Contains(err.Error(), "increasing versions") {
			t.Fatalf("Migrate with a hole: err = %v, want a refusal", err)
		}
	})
}

func TestMigrate_invalidList_isRejected(t *testing.T) {
	up := func(*gorm.DB) error { return nil }
	for name, ms := range map[string][]sqlstore.Migration{
		"no component": {{Version: 1, Name: "x", Up: up}},
		"zero version": {{Component: "c", Name: "x", Up: up}},
		"nil up":       {{Component: "c", Version: 1, Name: "x"}},
		"duplicate":    {{Component: "c", Version: 1, Up: up}, {Component: "c", Version: 1, Up: up}},
	} {
		t.Run(name, func(t *testing.T) {
			if err := sqlstore.Migrate(ctx(t), nil, ms...); err == nil {
				t.Fatal("Migrate: no error")
			}
		})
	}
}

// Several instances starting at once against one MySQL apply each
// migration once: they take turns through GET_LOCK.
func TestMigrate_concurrentInstances_applyOnce(t *testing.T) {
	dsn := testenv.MySQLDSN(t)
	var runs [8]atomic.Int32
	ms := counting("epsilon", 5, &runs)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		db := open(t, sqlstore.Config{MySQLDSN: dsn})
		wg.Go(func() { errs[i] = sqlstore.Migrate(ctx(t), db, ms...) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("instance %d: %v", i, err)
		}
	}
	for v := 1; v <= 5; v++ {
		if got := runs[v].Load(); got != 1 {
			t.Errorf("version %d ran %d times, want 1", v, got)
		}
	}
}
