package locks

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// etcdWatch is the one etcd watch of a key while this process has waiters
// for it; the watches of a client share one gRPC stream.
type etcdWatch struct {
	refs   int
	cancel context.CancelFunc
}

// Watch registers for the release of key. The etcd watch starts at the
// revision after the highest this backend has seen, so a release that
// comes after the call, even before the watch reaches the server, is
// delivered. Deletes (release, expiry) and tombstones wake a waiter; a
// broken or compacted watch wakes one too, spuriously, and starts again.
func (b *EtcdBackend) Watch(key string) (<-chan struct{}, func()) {
	ch, stop := b.notify.watch(key)
	b.wmu.Lock()
	w := b.watches[key]
	if w == nil {
		ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
		w = &etcdWatch{cancel: cancel}
		b.watches[key] = w
		go b.runWatch(ctx, key, b.rev.Load()+1)
	}
	w.refs++
	b.wmu.Unlock()
	return ch, func() {
		stop()
		b.wmu.Lock()
		defer b.wmu.Unlock()
		if w.refs--; w.refs == 0 {
			w.cancel()
			if b.watches[key] == w {
				delete(b.watches, key)
			}
		}
	}
}

func (b *EtcdBackend) runWatch(ctx context.Context, key string, rev int64) {
	ek := encodeEtcdKey(key)
	for ctx.Err() == nil {
		var opts []clientv3.OpOption
		if rev > 1 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		for resp := range b.c.Watch(ctx, ek, opts...) {
			if resp.CompactRevision != 0 || resp.Err() != nil {
				rev = 0 // from now on; the waiter retries and sees the key
				break
			}
			for _, ev := range resp.Events {
				rev = ev.Kv.ModRevision + 1
				if ev.Type == clientv3.EventTypeDelete || len(ev.Kv.Value) > 0 && ev.Kv.Value[0] == '-' {
					b.notify.fire(key)
				}
			}
		}
		if ctx.Err() != nil {
			return
		}
		b.notify.fire(key)
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}
