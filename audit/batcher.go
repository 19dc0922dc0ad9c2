package audit

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/telemetry"
)

// Batcher writes events asynchronously in batches (lease events,
// write.rejected), so they never slow the path that emits them. When the
// queue is full, events are dropped and counted, never waited for.
type Batcher struct {
	db       *gorm.DB
	log      Log
	logger   *slog.Logger
	ch       chan Event
	done     chan struct{}
	once     sync.Once
	mu       sync.Mutex
	closeMu  sync.RWMutex
	closed   bool
	dropped  int64
	interval time.Duration
}

// NewBatcher starts a batcher writing to db every interval (or every 200
// events). Close flushes and stops it.
func NewBatcher(db *gorm.DB, l Log, logger *slog.Logger, interval time.Duration) *Batcher {
	if logger == nil {
		logger = slog.Default()
	}
	if interval <= 0 {
		interval = 200 * time.Millisecond
	}
	b := &Batcher{db: db, log: l, logger: logger, ch: make(chan Event, 10000), done: make(chan struct{}), interval: interval}
	go b.run()
	return b
}

// Add queues an event; details are marshalled now. Nil-safe.
func (b *Batcher) Add(ctx context.Context, ev Event, details any) {
	if b == nil {
		return
	}
	if ev.Actor == "" {
		ev.Actor = Actor(ctx)
	}
	now := time.Now
	if b.log.Now != nil {
		now = b.log.Now
	}
	ev.At = now()
	ev.Details, _ = json.Marshal(details)
	ev.TraceID, ev.SpanID = telemetry.IDs(ctx)
	b.closeMu.RLock()
	defer b.closeMu.RUnlock()
	if b.closed {
		return
	}
	select {
	case b.ch <- ev:
	default:
		b.mu.Lock()
		b.dropped++
		b.mu.Unlock()
	}
}

// Dropped counts events dropped because the queue was full.
func (b *Batcher) Dropped() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped
}

func (b *Batcher) run() {
	defer close(b.done)
	t := time.NewTicker(b.interval)
	defer t.Stop()
	var batch []Event
	flush := func() {
		if len(batch) == 0 {
			return
		}
		if err := b.write(batch); err != nil {
			b.logger.Warn("audit batch not written", "events", len(batch), "err", err)
		}
		batch = batch[:0]
	}
	for {
		select {
		case ev, ok := <-b.ch:
			if !ok {
				flush()
				return
			}
			batch = append(batch, ev)
			if len(batch) >= 200 {
				flush()
			}
		case <-t.C:
			flush()
		}
	}
}

func (b *Batcher) write(batch []Event) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	q := `INSERT INTO audit_events (at_ms, actor, instance, action, agent, env, session_id, resource, details, trace_id, span_id) VALUES ` +
		strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?), ", len(batch)), ", ")
	args := make([]any, 0, 11*len(batch))
	for _, ev := range batch {
		args = append(args, ev.At.UnixMilli(), ev.Actor, b.log.Instance, ev.Action, ev.Agent, ev.Env, ev.SessionID, ev.Resource,
			string(ev.Details), ev.TraceID, ev.SpanID)
	}
	return b.db.WithContext(ctx).Exec(q, args...).Error
}

// Close flushes queued events and stops the batcher.
func (b *Batcher) Close() {
	if b == nil {
		return
	}
	b.once.Do(func() {
		b.closeMu.Lock()
		b.closed = true
		close(b.ch)
		b.closeMu.Unlock()
	})
	<-b.done
}
