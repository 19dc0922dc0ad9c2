// Package promptd runs promptd in process: a Go agent runtime (or a test)
// opens the SQL store, and gets the prompt store, releases, sessions and
// the resolver chain wired exactly as the promptd server wires them, without
// HTTP in between.
//
//	rt, err := promptd.Open(ctx, sqlstore.Config{SQLitePath: "promptd.db"}, promptd.Options{Instance: "agent-1"})
//	defer rt.Close()
//	go rt.Run(jobsCtx)                            // the server's scheduled jobs: steps, guards, sweeps, retention
//	v, _ := rt.Prompts.CreateVersion(ctx, ...)   // publish
//	rel, _ := rt.Releases.Create(ctx, ...)       // roll out
//	p, _ := rt.Prompt(ctx, promptstore.Request{Agent: "support", Env: "prod", UserID: "u1"})
//	s, _, _ := rt.Sessions.Create(ctx, ...)      // pin a conversation
//	out, _ := rt.Assemble(ctx, promptstore.AssembleInput{...})
//
// Resolution follows the server's order: a session's pin, then an active
// release's arm, then the env pointer. Several processes may share one
// MySQL database: give each a Redis-backed locks.Locker and the same
// Redis client (Options.Locker, Options.Redis), as cmd/promptd does.
//
// promptd is licensed under the Apache License, Version 2.0 (the LICENSE
// file at the repository's root).
package promptd

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/api/idempotency"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/board"
	"github.com/promptd/promptd/changes"
	"github.com/promptd/promptd/events"
	"github.com/promptd/promptd/exposure"
	"github.com/promptd/promptd/intent"
	"github.com/promptd/promptd/leases"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/prompt"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/session"
	"github.com/promptd/promptd/sqlstore"
	"github.com/promptd/promptd/webhook"
)

// Migrations are the schema migrations of every component, in the order
// promptd applies them at start (sqlstore.Migrate).
func Migrations() []sqlstore.Migration {
	var ms []sqlstore.Migration
	for _, m := range [][]sqlstore.Migration{audit.Migrations(), promptstore.Migrations(), idempotency.Migrations(),
		release.Migrations(), session.Migrations(), intent.Migrations(), board.Migrations(), webhook.Migrations(), exposure.Migrations(),
		access.Migrations(), changes.Migrations(), promptstore.DraftMigrations()} {
		ms = append(ms, m...)
	}
	return ms
}

// Options configure a Runtime. The per-service options are templates: New
// fills in what wires the services together (the database, the lock
// service, the event bus and mirror, the resolver, the event batcher) and
// leaves everything else as given.
type Options struct {
	// Instance names this process in audit events and leases.
	Instance string
	// Logger receives the services' logs; nil means slog.Default().
	Logger *slog.Logger
	// Locker is the lease service every component shares (a Redis one for
	// several processes); nil means an in-memory one (one process).
	Locker locks.Locker
	// Keys builds lock keys and the Redis key prefix (PROMPTD_KEY_PREFIX).
	Keys locks.Keys
	// Redis, when set, carries change events between instances and holds
	// the read mirror; nil: one instance, no mirror.
	Redis redis.UniversalClient
	// RedisTimeout bounds each event and mirror call; zero means 100ms.
	RedisTimeout time.Duration
	// Etcd carries change events between instances when Redis is nil (the
	// bus is an etcd watch); EtcdTimeout bounds each of its calls.
	Etcd        events.EtcdClient
	EtcdTimeout time.Duration
	// Prompts configures the prompt store (metrics, limits, timeouts).
	Prompts promptstore.Options
	// Releases configures the release service.
	Releases release.Options
	// Sessions configures the session service (idle TTL, limits).
	Sessions session.Options
	// Boards configures the board service (limits, retention, metrics).
	Boards board.Options
	// Intents configures the intent graph (its limit per space).
	Intents intent.Options
	// EventFlush is how often lease events and rejected writes are written
	// to the audit log; zero means 200ms.
	EventFlush time.Duration
	// EventRetention bounds how far back a change-feed reader may resume
	// (PROMPTD_EVENT_RETENTION); zero means 168h.
	EventRetention time.Duration
	// FeedMetrics receives the change feed's metrics; nil records none.
	FeedMetrics *events.FeedMetrics
	// Webhooks configures webhook deliveries (secret key cipher, address
	// guard, backoff, metrics); New fills in the database, feed and locks.
	Webhooks webhook.Options
	// Exposures configures exposure and outcome recording (metrics, flush
	// period); New fills in the database and the release service.
	Exposures exposure.Options
	// Access configures managed tokens (the bootstrap names it reserves,
	// limits); New fills in the database, bus and instance.
	Access access.Options
	// Idempotency configures the stored outcomes of Idempotency-Key
	// requests (their TTL, PROMPTD_IDEMPOTENCY_TTL).
	Idempotency idempotency.Options
	// Jobs configures the scheduled jobs of Run.
	Jobs JobOptions
	// LeaseMaxPerOwner bounds the live generic leases of one owner (a
	// token), counted in Redis across instances when Redis is set
	// (PROMPTD_LEASE_MAX_PER_TOKEN); zero means leases.DefaultMaxPerOwner.
	LeaseMaxPerOwner int
}

// Runtime is promptd's domain services over one database. Safe for
// concurrent use.
type Runtime struct {
	Prompts  *promptstore.Store
	Releases *release.Service
	Sessions *session.Service
	// Leases holds generic leases on business resources (an order, a
	// machine) over the same lock service.
	Leases *leases.Service
	// Events writes lease events and rejected writes in batches.
	Events *audit.Batcher
	// Resolver decides who gets which version: session pin -> release arm
	// -> env pointer.
	Resolver promptstore.Resolver
	// Bus carries change events between the services and instances.
	Bus *events.Bus
	// Feed is the change feed: every committed change, in commit order,
	// resumable by position (seq). Its sequencer runs on one instance of
	// those sharing the database at a time (a job lease).
	Feed *events.Feed
	// Boards holds the shared blackboards of agent groups.
	Boards *board.Service
	// Intents is the intent graph: the scopes agents register before a
	// batch of work, checked by the writes made under them.
	Intents *intent.Service
	// Webhooks keeps webhooks and delivers the feed to them (its
	// dispatcher on one instance at a time, deliverers on every one).
	Webhooks *webhook.Service
	// Exposures records exposures (reported, and this process's own
	// resolves, flushed in batches and at Close) and release outcomes.
	Exposures *exposure.Service
	// Access keeps managed tokens; revocations travel on Bus.
	Access *access.Service
	// Changes runs the writes a protected env gates (a pointer switch,
	// release create, promote, ...) and approves their change requests:
	// call it, not Prompts or Releases, for those writes, and a protected
	// env is gated for this program as for an HTTP client.
	Changes *changes.Service
	// Idempotency keeps the outcomes of Idempotency-Key requests (Run
	// sweeps the expired ones).
	Idempotency *idempotency.Store

	db     *gorm.DB
	ownsDB bool
	stop   context.CancelFunc
	done   chan struct{}
	// what Run schedules with
	running atomic.Bool
	jobs    JobOptions
	locker  locks.Locker
	keys    locks.Keys
	log     *slog.Logger
}

// New builds the services over db, which must be migrated (Migrations).
// Every dependency is passed to each service here; no service reaches for
// another's.
func New(db *gorm.DB, o Options) *Runtime {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.EventFlush <= 0 {
		o.EventFlush = 200 * time.Millisecond
	}
	if o.Locker == nil {
		o.Locker = locks.NewMemory(locks.Options{Holder: o.Instance})
	}
	health := &events.Health{} // Redis's: shared by the bus, the mirror and the store's lock fast path
	eo := events.Options{Redis: o.Redis, Prefix: o.Keys.Prefix, Timeout: o.RedisTimeout, Health: health, Logger: o.Logger,
		Etcd: o.Etcd, EtcdTimeout: o.EtcdTimeout}
	bus := events.NewBus(eo)
	var mirror *events.Mirror
	if o.Redis != nil {
		mirror = events.NewMirror(eo)
	}

	po := o.Prompts
	po.Instance, po.Locker, po.Keys, po.Bus, po.Mirror, po.Health = o.Instance, o.Locker, o.Keys, bus, mirror, health
	if po.Logger == nil {
		po.Logger = o.Logger
	}
	store := promptstore.New(db, po)
	batcher := audit.NewBatcher(db, audit.Log{Instance: o.Instance}, o.Logger, o.EventFlush)

	ro := o.Releases
	ro.Store, ro.DB, ro.Bus, ro.Locker, ro.Keys, ro.Instance = store, db, bus, o.Locker, o.Keys, o.Instance
	if ro.Logger == nil {
		ro.Logger = o.Logger
	}
	if ro.Outcomes == nil { // guards read the outcomes package exposure stores
		ro.Outcomes = release.SQLOutcomes{DB: db}
	}
	releases := release.New(ro)
	// The resolver chain, each a decorator of the next: session pin ->
	// release arm -> env pointer. New sessions are pinned to what the arm
	// (or the pointer) gives.
	arm := release.Resolver{S: releases, Next: store}
	so := o.Sessions
	so.Store, so.DB, so.Bus, so.Locker, so.Keys, so.Instance = store, db, bus, o.Locker, o.Keys, o.Instance
	so.Resolver, so.Events = arm, batcher
	if so.Logger == nil {
		so.Logger = o.Logger
	}
	sessions := session.New(so)
	io := o.Intents
	io.DB, io.Instance = db, o.Instance
	if io.Logger == nil {
		io.Logger = o.Logger
	}
	intents := intent.New(io)
	bo := o.Boards
	bo.DB, bo.Bus, bo.Locker, bo.Keys, bo.Instance, bo.Intents = db, bus, o.Locker, o.Keys, o.Instance, intents
	if bo.Logger == nil {
		bo.Logger = o.Logger
	}

	// The change feed: the sequencer stamps committed audit events with
	// their positions; the feed reads them for this instance's readers.
	poll := 100 * time.Millisecond // without Redis the store is the only signal
	if o.Redis != nil || o.Etcd != nil {
		poll = time.Second // KindFeed arrives through Redis or etcd; polling only heals a lost message
	}
	feed := events.NewFeed(events.FeedOptions{DB: db, Bus: bus, Poll: poll, Retention: o.EventRetention,
		Logger: o.Logger, Metrics: o.FeedMetrics})
	seq := events.NewSequencer(events.SequencerOptions{DB: db, Bus: bus, Locker: o.Locker, Keys: o.Keys,
		Logger: o.Logger, Metrics: o.FeedMetrics})
	wo := o.Webhooks
	wo.DB, wo.Feed, wo.Locker, wo.Keys, wo.Instance = db, feed, o.Locker, o.Keys, o.Instance
	if wo.Logger == nil {
		wo.Logger = o.Logger
	}
	hooks := webhook.New(wo)
	xo := o.Exposures
	xo.DB, xo.Releases, xo.Envs = db, releases, store
	if xo.Logger == nil {
		xo.Logger = o.Logger
	}
	exposures := exposure.New(xo)
	ao := o.Access
	ao.DB, ao.Bus, ao.Instance = db, bus, o.Instance
	if ao.Logger == nil {
		ao.Logger = o.Logger
	}
	tokens := access.New(ao)
	var ledger leases.Ledger // nil: counted in this process
	if o.Redis != nil {
		ledger = leases.NewRedisLedger(o.Redis, o.Keys, o.RedisTimeout)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		wg.Go(func() { feed.Run(ctx) })
		wg.Go(func() { seq.Run(ctx) })
		wg.Go(func() { hooks.Run(ctx) })
		wg.Go(func() { exposures.Run(ctx) }) // its last flush runs after ctx ends
		wg.Go(func() { tokens.Run(ctx) })
		wg.Wait()
	}()
	return &Runtime{Prompts: store, Releases: releases, Sessions: sessions, Events: batcher, Boards: board.New(bo), Intents: intents,
		Leases:   leases.New(leases.Options{Locker: o.Locker, Keys: o.Keys, Events: batcher, Ledger: ledger, MaxPerOwner: o.LeaseMaxPerOwner}),
		Resolver: session.Resolver{S: sessions, Next: arm}, Bus: bus, Feed: feed, Webhooks: hooks, Exposures: exposures, Access: tokens,
		Idempotency: idempotency.New(db, o.Idempotency),
		Changes:     changes.New(changes.Options{Access: tokens, Prompts: store, Releases: releases}),
		db:          db, stop: stop, done: done, jobs: o.Jobs, locker: o.Locker, keys: o.Keys, log: o.Logger}
}

// Open opens the database of cfg, migrates it and builds the services;
// Close closes the database too.
func Open(ctx context.Context, cfg sqlstore.Config, o Options) (*Runtime, error) {
	if cfg.Logger == nil {
		cfg.Logger = o.Logger
	}
	db, err := sqlstore.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := sqlstore.Migrate(ctx, db, Migrations()...); err != nil {
		return nil, errors.Join(err, sqlstore.Close(db))
	}
	r := New(db, o)
	r.ownsDB = true
	return r, nil
}

// Audit lists the audit events f selects, newest first, with the number
// that match (GET /v1/audit).
func (r *Runtime) Audit(ctx context.Context, f audit.Filter) ([]audit.Event, int64, error) {
	return audit.List(ctx, r.db, f)
}

// Prompt resolves the version req gets and returns it with its config (the
// runtime path of GET .../prompt).
func (r *Runtime) Prompt(ctx context.Context, req promptstore.Request) (*promptstore.Prompt, error) {
	return r.Prompts.ResolvePrompt(ctx, r.Resolver, req)
}

// Assemble renders the prompt req gets, with the session's history when
// asked (the runtime path of POST .../assemble).
func (r *Runtime) Assemble(ctx context.Context, in promptstore.AssembleInput) (*prompt.Assembled, error) {
	return r.Prompts.Assemble(ctx, r.Resolver, r.Sessions, in)
}

// Close stops the change feed and webhook deliveries (end Run's context
// first) (attempts in flight end first), writes the queued events, ends the event subscription and, when
// Open opened it, closes the database. The Locker and Redis client are the
// caller's.
func (r *Runtime) Close() error {
	r.stop()
	<-r.done
	r.Events.Close()
	err := errors.Join(r.Prompts.Close(), r.Bus.Close())
	if r.ownsDB {
		err = errors.Join(err, sqlstore.Close(r.db))
	}
	return err
}
