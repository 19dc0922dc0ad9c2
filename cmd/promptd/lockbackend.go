package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/promptd/promptd/sqlstore"
)

// The lock backend in use is recorded in SQL, so that instances of one
// database never hold leases in two places at once: each instance keeps a
// row (backend, instance, heartbeat_at) fresh while it runs, and an
// instance configured with another backend refuses to start while a row
// of another backend is live (heartbeat younger than lockBackendLive).
// The row is written before the check, so of two instances with different
// backends that start together, both see the other and both refuse
// (start again; never both running). Clocks of the instances are compared:
// keep them within a few seconds (NTP).
const (
	lockBackendBeat = 5 * time.Second
	lockBackendLive = 4 * lockBackendBeat
)

// lockBackendRow is one running instance and the backend its leases use.
type lockBackendRow struct {
	Instance    string    `gorm:"primaryKey;size:128"`
	Backend     string    `gorm:"size:16;not null"`
	HeartbeatAt time.Time `gorm:"not null;index"`
}

func (lockBackendRow) TableName() string { return "lock_backends" }

// lockBackendMigrations create lock_backends, applied with promptd's own
// (sqlstore.Migrate), versioned like every other table.
func lockBackendMigrations() []sqlstore.Migration {
	return []sqlstore.Migration{{Component: "lockbackend", Version: 1, Name: "lock_backends", Up: func(tx *gorm.DB) error {
		return sqlstore.CreateTable(tx, sqlstore.Table{
			Name: "lock_backends",
			Columns: []string{
				"instance " + sqlstore.IDColumnType(sqlstore.Dialect(tx)) + " NOT NULL",
				"backend VARCHAR(16) NOT NULL",
				"heartbeat_at " + datetime(sqlstore.Dialect(tx)) + " NOT NULL",
			},
			Primary: []string{"instance"},
			Indexes: map[string]string{"lock_backends_heartbeat": "heartbeat_at"},
		})
	}}}
}

// datetime is a column type that gorm reads into a time.Time.
func datetime(dialect string) string {
	if dialect == sqlstore.MySQL {
		return "DATETIME(3)"
	}
	return "DATETIME"
}

// ErrOtherLockBackend: a live instance of this database uses another lock
// backend.
var ErrOtherLockBackend = errors.New("another lock backend is in use")

// lockBackendRecord keeps this instance's row fresh until stop.
type lockBackendRecord struct {
	db       *gorm.DB
	instance string
	backend  string
	log      *slog.Logger
	stopOnce sync.Once
	done     chan struct{}
	wg       sync.WaitGroup
}

// recordLockBackend writes this instance's row, then refuses with
// ErrOtherLockBackend when a live row names another backend.
func recordLockBackend(ctx context.Context, db *gorm.DB, instance, backend string, log *slog.Logger) (*lockBackendRecord, error) {
	r := &lockBackendRecord{db: db, instance: instance, backend: backend, log: log, done: make(chan struct{})}
	if err := r.beat(ctx); err != nil {
		return nil, err
	}
	var others []lockBackendRow
	err := db.WithContext(ctx).Where("backend <> ? AND heartbeat_at > ?", backend, time.Now().UTC().Add(-lockBackendLive)).
		Limit(5).Find(&others).Error
	if err != nil {
		return nil, fmt.Errorf("lock backend record: %w", err)
	}
	if len(others) > 0 {
		r.remove(ctx)
		o := others[0]
		return nil, fmt.Errorf("%w: instance %q uses %s (heartbeat %s); this instance is configured for %s; "+
			"stop the instances of %s first (their rows expire %s after they stop)",
			ErrOtherLockBackend, o.Instance, o.Backend, o.HeartbeatAt.UTC().Format(time.RFC3339), backend, o.Backend, lockBackendLive)
	}
	r.wg.Add(1)
	go r.loop()
	return r, nil
}

func (r *lockBackendRecord) beat(ctx context.Context) error {
	row := lockBackendRow{Instance: r.instance, Backend: r.backend, HeartbeatAt: time.Now().UTC()}
	err := r.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "instance"}},
		DoUpdates: clause.AssignmentColumns([]string{"backend", "heartbeat_at"}),
	}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("lock backend record: %w", err)
	}
	return nil
}

func (r *lockBackendRecord) loop() {
	defer r.wg.Done()
	t := time.NewTicker(lockBackendBeat)
	defer t.Stop()
	for {
		select {
		case <-r.done:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), lockBackendBeat)
			if err := r.beat(ctx); err != nil {
				r.log.Warn("lock backend heartbeat failed", "err", err)
			}
			cancel()
		}
	}
}

func (r *lockBackendRecord) remove(ctx context.Context) {
	_ = r.db.WithContext(ctx).Where("instance = ? AND backend = ?", r.instance, r.backend).Delete(&lockBackendRow{}).Error
}

// stop ends the heartbeat and removes the row. Nil-safe.
func (r *lockBackendRecord) stop(ctx context.Context) {
	if r == nil {
		return
	}
	r.stopOnce.Do(func() {
		close(r.done)
		r.wg.Wait()
		r.remove(ctx)
	})
}
