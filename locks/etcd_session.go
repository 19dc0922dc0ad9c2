package locks

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// etcdSession is one etcd lease of this process that carries the keys of
// every lease granted with keepalive for one TTL (in whole seconds): one
// keepalive per process and TTL, however many keys. It is kept alive by
// its own loop, a KeepAliveOnce every third of its TTL, which records when
// the last successful one was sent: the lease lives at least until then +
// its TTL, and no grant or renewal on it promises more than that.
type etcdSession struct {
	id  clientv3.LeaseID
	ttl time.Duration // as granted (at least the cluster's minimum)

	mu         sync.Mutex
	validUntil time.Time // send time of the last successful keepalive + ttl
	lost       bool
	done       chan struct{} // closed when the loop ends
}

// remaining is how long the lease is sure to live from at, or <= 0 when
// that is not known (keepalives failing) or the lease was lost.
func (s *etcdSession) remaining(at time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lost {
		return 0
	}
	return s.validUntil.Sub(at)
}

// session returns this process's lease for sec seconds, granting it (and
// starting its keepalive) on first use or after a loss.
func (b *EtcdBackend) session(ctx context.Context, sec int64) (*etcdSession, error) {
	b.smu.Lock()
	s := b.sessions[sec]
	b.smu.Unlock()
	if s != nil && s.remaining(time.Now()) > 0 {
		return s, nil
	}
	b.grantMu.Lock() // one grant at a time, so a burst of acquires grants once
	defer b.grantMu.Unlock()
	b.smu.Lock()
	s = b.sessions[sec]
	b.smu.Unlock()
	if s != nil && s.remaining(time.Now()) > 0 {
		return s, nil
	}
	sent := time.Now()
	var resp *clientv3.LeaseGrantResponse
	err := b.do(ctx, "lease grant", func(ctx context.Context, _ int) (err error) {
		resp, err = b.c.Grant(ctx, sec)
		return err
	})
	if err != nil {
		return nil, err
	}
	s = &etcdSession{id: resp.ID, ttl: time.Duration(resp.TTL) * time.Second, done: make(chan struct{})}
	s.validUntil = sent.Add(s.ttl)
	b.smu.Lock()
	if b.closed {
		b.smu.Unlock()
		return nil, ErrClosed
	}
	b.sessions[sec] = s
	b.smu.Unlock()
	b.wg.Add(1)
	go b.keepSession(sec, s)
	return s, nil
}

// keepSession is the keepalive loop of s. It ends when the lease is gone
// (not found, or no keepalive got through before it ran out) or the
// backend closes; a later acquire then grants a new lease.
func (b *EtcdBackend) keepSession(sec int64, s *etcdSession) {
	defer b.wg.Done()
	defer close(s.done)
	every := max(s.ttl/3, 100*time.Millisecond)
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
		}
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), every)
		resp, err := b.c.KeepAliveOnce(ctx, s.id)
		cancel()
		s.mu.Lock()
		switch {
		case err == nil && resp.TTL > 0:
			s.validUntil = sent.Add(time.Duration(resp.TTL) * time.Second)
		case errors.Is(err, rpctypes.ErrLeaseNotFound) || err == nil || !time.Now().Before(s.validUntil):
			s.lost = true
		}
		lost := s.lost
		s.mu.Unlock()
		if lost {
			b.smu.Lock()
			if b.sessions[sec] == s {
				delete(b.sessions, sec)
			}
			b.smu.Unlock()
			b.log.Warn("etcd lease lost", "lease", int64(s.id), "ttl", s.ttl)
			return
		}
		next := every
		if err != nil {
			next = max(every/4, 50*time.Millisecond) // try again soon
		}
		t.Reset(next)
	}
}

// etcdOwn is what this process knows of a key it was granted: the revision
// it wrote last (so a release is one compare-and-delete), and, for a key
// on a session, a timer that deletes the key when its holder stops
// renewing it (the session itself lives as long as the process).
type etcdOwn struct {
	token  string
	modRev int64
	val    etcdValue
	reap   *time.Timer // nil for a key on a lease of its own
}

// own records a grant or renewal of key by token (modRev 0: a grant about
// to be sent, so only the reaper is armed); ttl > 0 arms the reaper.
func (b *EtcdBackend) own(key, token string, modRev int64, v etcdValue, ttl time.Duration) {
	hk := heldKey{key, token}
	b.omu.Lock()
	defer b.omu.Unlock()
	if b.owned == nil {
		return // closed
	}
	o := b.owned[hk]
	if o == nil {
		o = &etcdOwn{token: token}
		b.owned[hk] = o
	}
	if modRev > 0 {
		o.modRev, o.val = modRev, v
	}
	if ttl > 0 {
		if o.reap == nil {
			o.reap = time.AfterFunc(ttl, func() { b.reapKey(key, token) })
		} else {
			o.reap.Reset(ttl)
		}
	}
}

// ownedBy returns a copy of what this process knows of key held by token.
func (b *EtcdBackend) ownedBy(key, token string) (etcdOwn, bool) {
	b.omu.Lock()
	defer b.omu.Unlock()
	o := b.owned[heldKey{key, token}]
	if o == nil || o.modRev == 0 {
		return etcdOwn{}, false
	}
	return *o, true
}

// disown forgets key held by token; placeholder only forgets an entry of a
// grant that was never confirmed.
func (b *EtcdBackend) disown(key, token string, placeholder bool) {
	hk := heldKey{key, token}
	b.omu.Lock()
	defer b.omu.Unlock()
	if o := b.owned[hk]; o != nil && (!placeholder || o.modRev == 0) {
		if o.reap != nil {
			o.reap.Stop()
		}
		delete(b.owned, hk)
	}
}

// reapKey deletes key if token still holds it, whatever its hold count:
// its holder stopped renewing it for a TTL, which on Redis would have let
// it expire.
func (b *EtcdBackend) reapKey(key, token string) {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	_, err := b.releaseLoop(ctx, key, token, "", true)
	if err != nil && !errors.Is(err, ErrLeaseLost) {
		// try again later: until then the key stays held
		b.own(key, token, 0, etcdValue{}, b.timeout)
		return
	}
	b.disown(key, token, false)
}
