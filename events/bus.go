package events

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultPrefix is the key prefix when Options.Prefix is empty
// (PROMPTD_KEY_PREFIX).
const DefaultPrefix = "prompt"

// Event tells every instance what changed and its new revision. Kind is
// the publishing package's own (promptstore's "pointer", ...).
type Event struct {
	Kind     string `json:"kind"`
	Agent    string `json:"agent,omitempty"`
	Env      string `json:"env,omitempty"`
	ID       string `json:"id,omitempty"`
	Revision int64  `json:"revision"`
}

// Options configure a Bus or a Mirror.
type Options struct {
	// Redis carries events between instances and holds the mirror; nil:
	// events stay in process and there is no mirror.
	Redis redis.UniversalClient
	// Etcd carries a Bus's events between instances when Redis is nil
	// (etcdbus.go); nil: events stay in process.
	Etcd EtcdClient
	// EtcdTimeout bounds each etcd call (PROMPTD_ETCD_TIMEOUT); zero means
	// 1s.
	EtcdTimeout time.Duration
	// Prefix is the key prefix (PROMPTD_KEY_PREFIX); empty means
	// DefaultPrefix.
	Prefix string
	// Timeout bounds each Redis call (PROMPTD_REDIS_TIMEOUT); zero means
	// 100ms.
	Timeout time.Duration
	// Health is shared with the other Redis users of the process; nil
	// means a Health of its own.
	Health *Health
	Logger *slog.Logger
}

func (o *Options) defaults() {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.Timeout <= 0 {
		o.Timeout = 100 * time.Millisecond
	}
	if o.EtcdTimeout <= 0 {
		o.EtcdTimeout = time.Second
	}
	if o.Health == nil {
		o.Health = &Health{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Bus publishes change events on P:events (or, with etcd and no Redis,
// under P/events/). Safe for concurrent use.
type Bus struct {
	o Options

	mu       sync.RWMutex
	handlers map[string][]func(context.Context, Event)
	all      []func(context.Context, Event)
	sub      *redis.PubSub
	etcd     *etcdTransport
	closed   bool
}

// NewBus returns a bus, subscribed to the events channel when o.Redis is
// set, else watching etcd when o.Etcd is. Close ends the subscription.
func NewBus(o Options) *Bus {
	o.defaults()
	b := &Bus{o: o, handlers: map[string][]func(context.Context, Event){}}
	if o.Redis != nil {
		b.sub = o.Redis.Subscribe(context.Background(), b.channel())
		go b.receive(b.sub.Channel())
	} else if o.Etcd != nil {
		b.etcd = startEtcdTransport(o, b.deliver)
	}
	return b
}

func (b *Bus) channel() string { return b.o.Prefix + ":events" }

// Subscribe calls fn for every event of kind, from this or another
// instance.
func (b *Bus) Subscribe(kind string, fn func(context.Context, Event)) {
	b.mu.Lock()
	b.handlers[kind] = append(b.handlers[kind], fn)
	b.mu.Unlock()
}

// SubscribeAll calls fn for every event of every kind, from this or
// another instance.
func (b *Bus) SubscribeAll(fn func(context.Context, Event)) {
	b.mu.Lock()
	b.all = append(b.all, fn)
	b.mu.Unlock()
}

// Publish announces ev. Handlers of this instance run at once; other
// instances hear it through Redis. A lost message is healed by the
// reconcilers.
func (b *Bus) Publish(ctx context.Context, ev Event) {
	b.deliver(ctx, ev)
	if b.etcd != nil {
		b.etcd.publish(ev)
		return
	}
	if b.o.Redis == nil || b.o.Health.Down() {
		return
	}
	raw, _ := json.Marshal(ev)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.o.Timeout)
	defer cancel()
	if err := b.o.Redis.Publish(cctx, b.channel(), raw).Err(); err != nil {
		b.o.Health.Fail()
		b.o.Logger.Warn("event not published; the reconciler will spread it", "kind", ev.Kind, "agent", ev.Agent, "env", ev.Env, "err", err)
	}
}

func (b *Bus) deliver(ctx context.Context, ev Event) {
	b.mu.RLock()
	hs, all := b.handlers[ev.Kind], b.all
	b.mu.RUnlock()
	for _, h := range hs {
		h(ctx, ev)
	}
	for _, h := range all {
		h(ctx, ev)
	}
}

func (b *Bus) receive(ch <-chan *redis.Message) {
	for m := range ch {
		var ev Event
		if err := json.Unmarshal([]byte(m.Payload), &ev); err != nil {
			b.o.Logger.Warn("bad event", "err", err)
			continue
		}
		b.deliver(context.Background(), ev)
	}
}

// Close ends the subscription. Safe to call more than once.
func (b *Bus) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	if b.etcd != nil {
		b.etcd.close() // not under mu: its watch may be delivering
	}
	if b.sub == nil {
		return nil
	}
	return b.sub.Close()
}
