package promptstore

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/promptd/promptd/locks"
)

// Event kinds on the events channel.
const (
	KindPointer = "pointer" // an env pointer row changed (version, release, revocations)
	KindRelease = "release"
	KindSession = "session"
)

// Event tells every instance what changed and its new revision.
type Event struct {
	Kind     string `json:"kind"`
	Agent    string `json:"agent,omitempty"`
	Env      string `json:"env,omitempty"`
	ID       string `json:"id,omitempty"`
	Revision int64  `json:"revision"`
}

var (
	//go:embed mirror.lua
	mirrorLua    string
	mirrorScript = redis.NewScript(mirrorLua)
)

// snapshotTTL keeps mirrored snapshots for a week; an evicted one falls
// through to SQL.
const snapshotTTL = 7 * 24 * time.Hour

// Bus publishes change events on P:events and keeps the Redis mirror. With
// no Redis it delivers events in process only.
type Bus struct {
	rdb     redis.UniversalClient
	keys    locks.Keys
	timeout time.Duration
	log     *slog.Logger
	down    *breaker

	mu       sync.RWMutex
	handlers map[string][]func(context.Context, Event)
	sub      *redis.PubSub
	closed   bool
}

func newBus(rdb redis.UniversalClient, keys locks.Keys, timeout time.Duration, log *slog.Logger, down *breaker) *Bus {
	b := &Bus{rdb: rdb, keys: keys, timeout: timeout, log: log, down: down, handlers: map[string][]func(context.Context, Event){}}
	if rdb != nil {
		b.sub = rdb.Subscribe(context.Background(), b.channel())
		go b.receive(b.sub.Channel())
	}
	return b
}

func (b *Bus) prefix() string {
	if b.keys.Prefix == "" {
		return locks.DefaultPrefix
	}
	return b.keys.Prefix
}

func (b *Bus) channel() string { return b.prefix() + ":events" }

// Subscribe calls fn for every event of kind, from this or another instance.
func (b *Bus) Subscribe(kind string, fn func(context.Context, Event)) {
	b.mu.Lock()
	b.handlers[kind] = append(b.handlers[kind], fn)
	b.mu.Unlock()
}

// Publish announces ev. Handlers of this instance run at once; other
// instances hear it through Redis. A lost message is healed by the
// reconciler.
func (b *Bus) Publish(ctx context.Context, ev Event) {
	b.deliver(ctx, ev)
	if !b.usable() {
		return
	}
	raw, _ := json.Marshal(ev)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.timeout)
	defer cancel()
	if err := b.rdb.Publish(cctx, b.channel(), raw).Err(); err != nil {
		b.down.fail()
		b.log.Warn("event not published; the reconciler will spread it", "kind", ev.Kind, "agent", ev.Agent, "env", ev.Env, "err", err)
	}
}

func (b *Bus) deliver(ctx context.Context, ev Event) {
	b.mu.RLock()
	hs := b.handlers[ev.Kind]
	b.mu.RUnlock()
	for _, h := range hs {
		h(ctx, ev)
	}
}

func (b *Bus) receive(ch <-chan *redis.Message) {
	for m := range ch {
		var ev Event
		if err := json.Unmarshal([]byte(m.Payload), &ev); err != nil {
			b.log.Warn("bad event", "err", err)
			continue
		}
		b.deliver(context.Background(), ev)
	}
}

// Close ends the subscription.
func (b *Bus) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.sub == nil {
		return nil
	}
	b.closed = true
	return b.sub.Close()
}

func (b *Bus) snapKey(agent string, version int) string {
	return b.prefix() + ":snap:{" + agent + "}:" + strconv.Itoa(version)
}

func (b *Bus) ptrKey(agent, env string) string {
	return b.prefix() + ":ptr:{" + agent + "}:" + env
}

// usable reports whether Redis is configured and not known to be down.
func (b *Bus) usable() bool { return b.rdb != nil && !b.down.open() }

// failed records a Redis error other than a missing key.
func (b *Bus) failed(err error) {
	if err != nil && !errors.Is(err, redis.Nil) {
		b.down.fail()
	}
}

func (b *Bus) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), b.timeout)
}

// mirrorSnapshot stores an immutable snapshot in Redis (best effort).
func (b *Bus) mirrorSnapshot(ctx context.Context, v *Version) {
	if !b.usable() {
		return
	}
	raw, _ := json.Marshal(v)
	cctx, cancel := b.bounded(ctx)
	defer cancel()
	b.failed(b.rdb.SetNX(cctx, b.snapKey(v.Agent, v.Version), raw, snapshotTTL).Err())
}

// readSnapshot reads a mirrored snapshot, nil when missing or unreachable.
func (b *Bus) readSnapshot(ctx context.Context, agent string, version int) *Version {
	if !b.usable() {
		return nil
	}
	cctx, cancel := b.bounded(ctx)
	defer cancel()
	raw, err := b.rdb.Get(cctx, b.snapKey(agent, version)).Bytes()
	if err != nil {
		b.failed(err)
		return nil
	}
	var v Version
	if json.Unmarshal(raw, &v) != nil || v.Agent != agent || v.Version != version || ContentHash(v.Config) != v.ContentHash {
		return nil
	}
	return &v
}

// mirrorPointer writes a pointer state unless Redis has a newer one.
func (b *Bus) mirrorPointer(ctx context.Context, p *PointerState) {
	if !b.usable() {
		return
	}
	raw, _ := json.Marshal(p)
	cctx, cancel := b.bounded(ctx)
	defer cancel()
	if err := mirrorScript.Run(cctx, b.rdb, []string{b.ptrKey(p.Agent, p.Env)}, p.Revision, raw).Err(); err != nil {
		b.failed(err)
		b.log.Debug("pointer mirror not written", "agent", p.Agent, "env", p.Env, "err", err)
	}
}

// readPointer reads a mirrored pointer state, nil when missing or unreachable.
func (b *Bus) readPointer(ctx context.Context, agent, env string) *PointerState {
	if !b.usable() {
		return nil
	}
	cctx, cancel := b.bounded(ctx)
	defer cancel()
	raw, err := b.rdb.HGet(cctx, b.ptrKey(agent, env), "doc").Bytes()
	if err != nil {
		b.failed(err)
		return nil
	}
	var p PointerState
	if json.Unmarshal(raw, &p) != nil || p.Agent != agent || p.Env != env {
		return nil
	}
	return &p
}
