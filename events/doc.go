// Package events tells every promptd instance what changed, and keeps the
// Redis mirror that lets an instance answer reads while SQL is down.
//
// A Bus delivers an Event (a kind, what it names and its new revision) to
// this process's subscribers at once and, through one Redis pub/sub
// channel (P:events), to every other instance. Messages can be lost; each
// package that caches keeps a reconciler, so a lost event leaves an
// instance stale for a bounded time, never wrong for ever. With etcd and
// no Redis (Options.Etcd), each bus puts its events in batches under one key
// of its own, P/events/<origin>, and watches P/events/ for the others'.
//
// A Mirror keeps immutable snapshots (7 days, refilled from SQL) and the
// latest state of each env pointer, written through a compare-on-revision
// script so a late writer never moves it backwards. Mirror and Bus share a
// Health: after a Redis failure, fast-path Redis work is skipped for a
// cool-down instead of each call waiting out its timeout.
//
// The package knows no promptd kinds or types: each package names its own
// event kinds and encodes its own mirror documents.
package events
