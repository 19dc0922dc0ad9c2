// Package promptd runs promptd in process: a Go agent runtime (or a test)
// opens the SQL store, and gets the prompt store, releases, sessions and
// the resolver chain wired exactly as the promptd server wires them, without
// HTTP in between.
//
//	rt, err := promptd.Open(ctx, sqlstore.Config{SQLitePath: "promptd.db"}, promptd.Options{Instance: "agent-1"})
//	defer rt.Close()
//	v, _ := rt.Prompts.CreateVersion(ctx, ...)   // publish
//	rel, _ := rt.Releases.Create(ctx, ...)       // roll out
//	p, _ := rt.Prompt(ctx, promptstore.Request{Agent: "support", Env: "prod", UserID: "u1"})
//	s, _, _ := rt.Sessions.Create(ctx, ...)      // pin a conversation
//	out, _ := rt.Assemble(ctx, promptstore.AssembleInput{...})
//
// Resolution follows the server's order: a session's pin, then an active
// release's arm, then the env pointer. Several processes may share one
// MySQL database: give each a Redis-backed locks.Locker and the same
// Redis client (Options.Prompts.Locker, .Redis), as cmd/promptd does.
package promptd

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/api/idempotency"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/session"
	"github.com/promptd/promptd/sqlstore"
)

// Migrations are the schema migrations of every component, in the order
// promptd applies them at start (sqlstore.Migrate).
func Migrations() []sqlstore.Migration {
	var ms []sqlstore.Migration
	for _, m := range [][]sqlstore.Migration{audit.Migrations(), promptstore.Migrations(), idempotency.Migrations(),
		release.Migrations(), session.Migrations()} {
		ms = append(ms, m...)
	}
	return ms
}

// Options configure a Runtime. The per-service options are templates: New
// fills in what wires the services together (the store, the resolver, the
// event batcher) and leaves everything else as given.
type Options struct {
	// Instance names this process in audit events and leases.
	Instance string
	// Logger receives the services' logs; nil means slog.Default().
	Logger *slog.Logger
	// Prompts configures the prompt store (locker, Redis mirror, limits).
	Prompts promptstore.Options
	// Releases configures the release service.
	Releases release.Options
	// Sessions configures the session service (idle TTL, limits).
	Sessions session.Options
	// EventFlush is how often lease events and rejected writes are written
	// to the audit log; zero means 200ms.
	EventFlush time.Duration
}

// Runtime is promptd's domain services over one database. Safe for
// concurrent use.
type Runtime struct {
	Prompts  *promptstore.Store
	Releases *release.Service
	Sessions *session.Service
	// Events writes lease events and rejected writes in batches.
	Events *audit.Batcher
	// Resolver decides who gets which version: session pin -> release arm
	// -> env pointer.
	Resolver promptstore.Resolver

	db     *gorm.DB
	ownsDB bool
}

// New builds the services over db, which must be migrated (Migrations).
func New(db *gorm.DB, o Options) *Runtime {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.EventFlush <= 0 {
		o.EventFlush = 200 * time.Millisecond
	}
	po := o.Prompts
	if po.Instance == "" {
		po.Instance = o.Instance
	}
	if po.Logger == nil {
		po.Logger = o.Logger
	}
	store := promptstore.New(db, po)
	events := audit.NewBatcher(db, store.Audit(), o.Logger, o.EventFlush)
	ro := o.Releases
	ro.Store = store
	if ro.Logger == nil {
		ro.Logger = o.Logger
	}
	releases := release.New(ro)
	// New sessions are pinned to what the release arm (or the pointer)
	// gives; resolving a session's prompt puts its pin in front of that.
	so := o.Sessions
	so.Store, so.Resolver, so.Events = store, releases, events
	if so.Logger == nil {
		so.Logger = o.Logger
	}
	sessions := session.New(so)
	return &Runtime{Prompts: store, Releases: releases, Sessions: sessions, Events: events,
		Resolver: session.Resolver{S: sessions, Next: releases}, db: db}
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

// Prompt resolves the version req gets and returns it with its config (the
// runtime path of GET .../prompt).
func (r *Runtime) Prompt(ctx context.Context, req promptstore.Request) (*promptstore.Prompt, error) {
	return r.Prompts.ResolvePrompt(ctx, r.Resolver, req)
}

// Assemble renders the prompt req gets, with the session's history when
// asked (the runtime path of POST .../assemble).
func (r *Runtime) Assemble(ctx context.Context, in promptstore.AssembleInput) (*promptstore.Assembled, error) {
	return r.Prompts.Assemble(ctx, r.Resolver, r.Sessions, in)
}

// Close writes the queued events, stops the store's event subscription
// and, when Open opened it, closes the database.
func (r *Runtime) Close() error {
	r.Events.Close()
	err := r.Prompts.Close()
	if r.ownsDB {
		err = errors.Join(err, sqlstore.Close(r.db))
	}
	return err
}
