package events

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// EtcdClient is what the etcd transport of a Bus uses (a *clientv3.Client
// fits).
type EtcdClient interface {
	clientv3.KV
	clientv3.Lease
	clientv3.Watcher
}

// The etcd transport: each bus owns one key, P/events/<origin>, and puts
// the events it publishes there, in batches (the key's value is a JSON
// array); every bus watches P/events/ and delivers the batches of the other
// origins. Puts are made by one goroutine from a bounded queue, so Publish
// never waits for raft. The key hangs on a lease of etcdBusTTL, granted
// anew every etcdBusRegrant, so the key of an instance that is gone
// disappears. A batch that cannot be put, a full queue or a watch that
// missed revisions (compacted) lose events; the reconcilers heal them.
const (
	etcdBusQueue    = 4096
	etcdBusBatch    = 256
	etcdBusTTL      = 30 // seconds
	etcdBusRegrant  = 10 * time.Second
	etcdBusRetryMin = 100 * time.Millisecond
	etcdBusRetryMax = 2 * time.Second
)

type etcdTransport struct {
	c       EtcdClient
	prefix  string // P/events/
	key     string // P/events/<origin>
	timeout time.Duration
	log     *slog.Logger
	deliver func(context.Context, Event)

	q      chan Event
	stop   chan struct{} // ends publishLoop after a last batch
	ctx    context.Context
	cancel context.CancelFunc // ends the watch
	done   chan struct{}

	lease   clientv3.LeaseID
	leaseAt time.Time

	dropped  atomic.Int64 // events dropped on a full queue since the last warning
	warnedAt atomic.Int64 // unix nanoseconds of that warning
}

func startEtcdTransport(o Options, deliver func(context.Context, Event)) *etcdTransport {
	var b [8]byte
	_, _ = rand.Read(b[:])
	ctx, cancel := context.WithCancel(context.Background())
	t := &etcdTransport{c: o.Etcd, prefix: o.Prefix + "/events/", timeout: o.EtcdTimeout, log: o.Logger, deliver: deliver,
		q: make(chan Event, etcdBusQueue), stop: make(chan struct{}), ctx: ctx, cancel: cancel, done: make(chan struct{})}
	t.key = t.prefix + hex.EncodeToString(b[:])
	// the revision to watch from is read before NewBus returns, so no event
	// published after it is missed
	rev := t.currentRevision()
	watching := make(chan struct{})
	go func() { defer close(watching); t.watchLoop(rev) }()
	go func() {
		defer close(t.done)
		t.publishLoop()
		t.cancel()
		<-watching
	}()
	return t
}

// currentRevision is the store's revision now, 0 when etcd does not answer
// (the watch then starts at whatever revision it reaches).
func (t *etcdTransport) currentRevision() int64 {
	ctx, cancel := context.WithTimeout(t.ctx, t.timeout)
	defer cancel()
	resp, err := t.c.Get(ctx, t.key, clientv3.WithCountOnly())
	if err != nil {
		t.log.Warn("etcd event bus: reading the revision failed; events until the watch starts may be missed", "err", err)
		return 0
	}
	return resp.Header.Revision
}

// publish queues ev for the other instances; a full queue drops it.
func (t *etcdTransport) publish(ev Event) {
	select {
	case <-t.stop: // closed
	case t.q <- ev:
	default:
		// at most one warning a second: a full queue means etcd is slow or
		// away, and every write would say so
		n := t.dropped.Add(1)
		if now := time.Now().UnixNano(); now-t.warnedAt.Load() > int64(time.Second) {
			t.warnedAt.Store(now)
			t.dropped.Add(-n)
			t.log.Warn("etcd event bus: queue full, events dropped; the reconcilers will spread them", "dropped", n, "kind", ev.Kind)
		}
	}
}

func (t *etcdTransport) publishLoop() {
	for {
		var batch []Event
		stopping := false
		select {
		case ev := <-t.q:
			batch = append(batch, ev)
		case <-t.stop:
			stopping = true
		}
	more:
		for len(batch) < etcdBusBatch {
			select {
			case ev := <-t.q:
				batch = append(batch, ev)
			default:
				break more
			}
		}
		if len(batch) > 0 {
			if err := t.put(batch); err != nil {
				t.log.Warn("etcd event bus: events not published; the reconciler will spread them", "events", len(batch), "err", err)
				t.lease = 0 // perhaps expired while etcd was away: grant a new one
			}
		}
		if stopping {
			return
		}
	}
}

// put writes batch as the value of this bus's key, on a lease granted at
// most etcdBusRegrant ago.
func (t *etcdTransport) put(batch []Event) error { return t.putOnce(batch, true) }

func (t *etcdTransport) putOnce(batch []Event, retry bool) error {
	raw, err := json.Marshal(batch)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.timeout)
	defer cancel()
	if t.lease == 0 || time.Since(t.leaseAt) > etcdBusRegrant {
		g, err := t.c.Grant(ctx, etcdBusTTL)
		if err != nil {
			return err
		}
		t.lease, t.leaseAt = g.ID, time.Now()
	}
	_, err = t.c.Put(ctx, t.key, string(raw), clientv3.WithLease(t.lease))
	if retry && errors.Is(err, rpctypes.ErrLeaseNotFound) { // expired or revoked: once more on a new one
		t.lease = 0
		return t.putOnce(batch, false)
	}
	return err
}

// watchLoop delivers the batches other buses put after rev, watching again
// (from the last revision seen) whenever the watch ends.
func (t *etcdTransport) watchLoop(rev int64) {
	retry := etcdBusRetryMin
	for t.ctx.Err() == nil {
		opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithFilterDelete()}
		if rev > 0 {
			opts = append(opts, clientv3.WithRev(rev+1))
		}
		// WithRequireLeader: a member cut off from its cluster ends the
		// watch instead of keeping it silent
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(t.ctx))
		for wr := range t.c.Watch(wctx, t.prefix, opts...) {
			if wr.CompactRevision > 0 {
				t.log.Warn("etcd event bus: revisions compacted before they were read; the reconciler heals what they carried",
					"from", rev+1, "compacted", wr.CompactRevision)
				rev = wr.CompactRevision - 1
			}
			if err := wr.Err(); err != nil {
				if t.ctx.Err() == nil {
					t.log.Warn("etcd event bus: watch ended; watching again", "err", err)
				}
				break
			}
			retry = etcdBusRetryMin
			for _, e := range wr.Events {
				rev = max(rev, e.Kv.ModRevision)
				if string(e.Kv.Key) == t.key || !strings.HasPrefix(string(e.Kv.Key), t.prefix) {
					continue
				}
				var batch []Event
				if err := json.Unmarshal(e.Kv.Value, &batch); err != nil {
					t.log.Warn("bad event", "key", string(e.Kv.Key), "err", err)
					continue
				}
				for _, ev := range batch {
					t.deliver(context.Background(), ev)
				}
			}
		}
		cancel()
		select {
		case <-t.ctx.Done():
		case <-time.After(retry):
		}
		retry = min(2*retry, etcdBusRetryMax)
	}
}

// close puts what is queued (one last batch, bounded by the timeout) and
// stops watching.
func (t *etcdTransport) close() {
	close(t.stop)
	<-t.done
}
