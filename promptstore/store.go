package promptstore

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/events"
	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/sqlstore"
)

// Options configure a Store.
type Options struct {
	// Locker serialises writers per agent (versions) and per env (pointer
	// moves). It is the fast path; SQL conditions are the guarantee.
	Locker locks.Locker
	// Keys builds lock keys (PROMPTD_KEY_PREFIX).
	Keys locks.Keys
	// Bus carries change events between instances; nil means events stay
	// in this process (one instance). Close does not close it.
	Bus *events.Bus
	// Mirror is the Redis mirror of snapshots and pointers; nil: none.
	Mirror *events.Mirror
	// Health is shared with Bus and Mirror: while Redis is known to be
	// down, writes skip the locker and go on under SQL conditions alone.
	// Nil means the locker is always tried.
	Health *events.Health
	// Instance names this process in audit events.
	Instance string
	// LockWait is how long a writer waits for the agent or env lock before
	// going ahead on the SQL conditions alone. Default 2s.
	LockWait time.Duration
	// SQLTimeout bounds each SQL operation, so a stalled database turns
	// into ErrUnavailable instead of a hung request. Default 5s (imports
	// get 12 times as long).
	SQLTimeout time.Duration
	// SnapshotCacheSize bounds the in-process snapshot cache by count
	// (default 4096), SnapshotCacheBytes by the bytes of its configs
	// (default DefaultSnapshotCacheBytes, 64 MiB).
	SnapshotCacheSize  int
	SnapshotCacheBytes int
	Metrics            *Metrics
	Logger             *slog.Logger
	Now                func() time.Time

	// Limits bound assembly and diffs (assemble.go); zero fields take
	// their defaults.
	Limits Limits
}

// Store is the prompt store: versions, env pointers, revocations, the read
// caches and the pointer resolver. Safe for concurrent use.
type Store struct {
	db     *gorm.DB
	o      Options
	log    *slog.Logger
	audit  audit.Log
	snaps  *snapshotCache
	ptrs   *pointerCache
	diffs  *diffCache
	bus    *events.Bus
	ownBus bool // made by New: closed by Close
	mirror *events.Mirror
	redis  *events.Health
}

// New returns a Store over db (migrated with Migrations and
// audit.Migrations).
func New(db *gorm.DB, o Options) *Store {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.LockWait == 0 {
		o.LockWait = 2 * time.Second
	}
	if o.SQLTimeout <= 0 {
		o.SQLTimeout = 5 * time.Second
	}
	if o.SnapshotCacheSize <= 0 {
		o.SnapshotCacheSize = 4096
	}
	o.Limits = o.Limits.withDefaults()
	if o.Locker == nil {
		o.Locker = locks.NewMemory(locks.Options{Holder: o.Instance})
	}
	s := &Store{db: db, o: o, log: o.Logger, audit: audit.Log{Instance: o.Instance, Now: o.Now},
		snaps: newSnapshotCache(o.SnapshotCacheSize, cmp.Or(o.SnapshotCacheBytes, DefaultSnapshotCacheBytes)), ptrs: newPointerCache(), bus: o.Bus, mirror: o.Mirror, redis: o.Health,
		diffs: newDiffCache(o.Limits.DiffCacheBytes)}
	if s.bus == nil {
		s.bus, s.ownBus = events.NewBus(events.Options{Logger: o.Logger}), true
	}
	s.bus.Subscribe(KindPointer, s.onPointerEvent)
	return s
}

// Close closes the event bus when New made it (Options.Bus is the
// caller's to close).
func (s *Store) Close() error {
	if s.ownBus {
		return s.bus.Close()
	}
	return nil
}

// lock takes key for the duration of a write. When the locker cannot be
// reached the write goes on under its SQL conditions alone (degraded mode,
// counted); when another writer holds the key past LockWait, too.
func (s *Store) lock(ctx context.Context, key string) func() {
	if s.redis.Down() {
		s.o.Metrics.degraded("redis")
		return func() {}
	}
	l, err := s.o.Locker.Acquire(ctx, key, 10*time.Second, locks.WithWait(s.o.LockWait))
	if err != nil {
		if errors.Is(err, locks.ErrUnavailable) {
			s.redis.Fail()
			s.o.Metrics.degraded("redis")
			s.log.Warn("lock unavailable: writing on SQL conditions alone", "key", key, "err", err)
		}
		return func() {}
	}
	return func() { _ = l.Release(context.WithoutCancel(ctx)) }
}

func (s *Store) now() time.Time { return s.o.Now() }

// sqlCtx bounds one SQL operation.
func (s *Store) sqlCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.o.SQLTimeout)
}

// StoreErr is sqlstore.Err: an infrastructure error that reached a domain
// boundary, translated (a stalled database is ErrUnavailable).
func StoreErr(err error) error { return sqlstore.Err(err) }

func storeErr(err error) error { return sqlstore.Err(err) }

// Lock kinds of the prompt store (locks.Keys.Key).
const (
	// KindConfigLock is taken while creating a version of an agent.
	KindConfigLock = "config"
	// KindReleaseLock serialises pointer switches, release transitions and
	// revocations of one env (package release takes it too).
	KindReleaseLock = "release"
)

// ConfigLock is the key taken while creating a version of agent.
func ConfigLock(k locks.Keys, agent string) (string, error) {
	if err := ident.Validate("agent", agent); err != nil {
		return "", err
	}
	return k.Key(KindConfigLock, agent)
}

// ReleaseLock is the key of pointer switches, release transitions and
// revocations of agent in env. The hash tag is the agent, so all envs of an
// agent share a slot.
func ReleaseLock(k locks.Keys, agent, env string) (string, error) {
	if err := validateEnv(agent, env); err != nil {
		return "", err
	}
	return k.Key(KindReleaseLock, agent, env)
}
