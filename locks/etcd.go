package locks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// EtcdClient is the narrowest etcd client surface the backend needs: key
// value, leases and watches. *clientv3.Client fits.
type EtcdClient interface {
	clientv3.KV
	clientv3.Lease
	clientv3.Watcher
}

// EtcdOptions configure the etcd backend.
type EtcdOptions struct {
	Keys    Keys          // prefix of P/fence_base
	Timeout time.Duration // bound on one etcd call (PROMPTD_ETCD_TIMEOUT); default 1s
	Logger  *slog.Logger
}

// EtcdBackend keeps each lease in an etcd key (etcd_value.go describes the
// value) on an etcd lease: the process's session lease for its TTL when
// the lease is kept alive by a Manager (etcd_session.go), a lease of its
// own when it is not (Request.Detached: held by an HTTP client that renews
// and releases it by token). TTLs are whole seconds, rounded up, and at
// least the cluster's minimum. Fences are max(previous + 1, fence_base +
// the grant's revision): etcd's revision grows with every write of the
// cluster, across leader changes and restarts, and fence_base (µs at the
// first use of the cluster, written once at P/fence_base) puts them above
// fences a Redis backend handed out before.
type EtcdBackend struct {
	c       EtcdClient
	timeout time.Duration
	baseKey string
	log     *slog.Logger
	notify  *notifier
	rev     atomic.Int64 // highest revision seen, where watches start
	base    atomic.Int64 // fence_base once read
	baseMu  sync.Mutex

	grantMu  sync.Mutex
	smu      sync.Mutex
	sessions map[int64]*etcdSession // by TTL in seconds
	closed   bool
	stop     chan struct{}
	wg       sync.WaitGroup

	omu   sync.Mutex
	owned map[heldKey]*etcdOwn

	wmu     sync.Mutex
	watches map[string]*etcdWatch
}

// NewEtcdBackend returns a backend over c.
func NewEtcdBackend(c EtcdClient, o EtcdOptions) *EtcdBackend {
	if o.Timeout <= 0 {
		o.Timeout = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &EtcdBackend{c: c, timeout: o.Timeout, baseKey: o.Keys.prefix() + "/fence_base", log: o.Logger,
		notify: newNotifier(), sessions: map[int64]*etcdSession{}, stop: make(chan struct{}),
		owned: map[heldKey]*etcdOwn{}, watches: map[string]*etcdWatch{}}
}

// NewEtcd returns a Manager over an etcd backend.
func NewEtcd(c EtcdClient, eo EtcdOptions, opts Options) *Manager {
	return New(NewEtcdBackend(c, eo), opts)
}

// etcdSeconds is a TTL in whole seconds, rounded up, at least 1.
func etcdSeconds(ttl time.Duration) int64 {
	return max(int64((ttl+time.Second-1)/time.Second), 1)
}

// Acquire grants key in one transaction when it is free (put if its
// create_revision is 0); otherwise it reads the key in the same
// transaction and decides from what it holds, writing with a compare on
// the key's mod_revision. A retry after a lost reply finds its own grant.
func (b *EtcdBackend) Acquire(ctx context.Context, key string, req Request) (_ Grant, err error) {
	base, err := b.fenceBase(ctx)
	if err != nil {
		return Grant{}, err
	}
	ek := encodeEtcdKey(key)
	sec := etcdSeconds(req.TTL)
	sent := time.Now()
	val := etcdValue{token: req.Token, count: 1, floor: max(req.MinFence, 0) + 1, since: sent.UnixMicro(), ttlSec: sec, holder: req.Holder}
	var lease clientv3.LeaseID
	var sess *etcdSession
	var kv *mvccpb.KeyValue
	granted := false
	switch {
	case req.Mode == ModeReenter:
		if kv, err = b.get(ctx, "acquire", ek); err != nil {
			return Grant{}, err
		}
		if kv == nil {
			return Grant{}, ErrLeaseLost
		}
	case req.Detached:
		if lease, err = b.grantLease(ctx, sec); err != nil {
			return Grant{}, err
		}
		defer func() {
			if !granted {
				b.revokeLater(lease)
			}
		}()
	default:
		if sess, err = b.session(ctx, sec); err != nil {
			return Grant{}, err
		}
		lease = sess.id
		// armed before the write: a grant whose reply is lost is still
		// deleted a TTL later, never kept alive by the session for ever
		b.own(key, req.Token, 0, etcdValue{}, req.TTL)
		defer func() {
			if !granted && (errors.Is(err, ErrHeld) || errors.Is(err, ErrLeaseLost)) {
				b.disown(key, req.Token, true) // surely not granted
			}
		}()
	}
	grant := func(v etcdValue, modRev int64, preempted bool) Grant {
		g := Grant{Token: req.Token, Holder: v.holder, Fence: v.fenceAt(base, modRev), Since: time.UnixMicro(v.since),
			TTL: req.TTL, Count: v.count, Preempted: preempted}
		reap := time.Duration(0)
		if sess != nil {
			g.TTL = min(req.TTL, sess.remaining(sent))
			reap = req.TTL
		}
		b.own(key, req.Token, modRev, v, reap)
		granted = true
		return g
	}
	regranted := false
	for range 8 {
		cmp := clientv3.Compare(clientv3.CreateRevision(ek), "=", 0)
		nv, preempt := val, false
		var put clientv3.Op
		if kv == nil {
			put = clientv3.OpPut(ek, nv.encode(), clientv3.WithLease(lease))
		} else {
			cur, tomb, err := decodeEtcdValue(kv.Value)
			if err != nil {
				return Grant{}, fmt.Errorf("%w: %s", err, key)
			}
			cmp = clientv3.Compare(clientv3.ModRevision(ek), "=", kv.ModRevision)
			switch {
			case tomb > 0 && req.Mode == ModeReenter:
				return Grant{}, ErrLeaseLost
			case tomb > 0:
				nv.floor = max(nv.floor, tomb+1)
				put = clientv3.OpPut(ek, nv.encode(), clientv3.WithLease(lease))
			case cur.token == req.Token && (req.Mode != ModeReenter || cur.nonce == req.Nonce):
				return grant(cur, kv.ModRevision, false), nil // a retried call: the same grant
			case cur.token == req.Token:
				nv = cur
				nv.count++
				nv.nonce = req.Nonce
				nv.fence = cur.fenceAt(base, kv.ModRevision)
				put = clientv3.OpPut(ek, nv.encode(), clientv3.WithIgnoreLease())
			case req.Mode == ModeReenter:
				return Grant{}, ErrLeaseLost
			case req.Mode != ModePreempt:
				c := Conflict{Key: key, Holder: cur.holder, Fence: cur.fenceAt(base, kv.ModRevision),
					ExpiresAt: time.Now().Add(time.Duration(cur.ttlSec) * time.Second)}
				return Grant{}, &HeldError{Conflicts: []Conflict{c}}
			default:
				nv.floor = max(nv.floor, cur.fenceAt(base, kv.ModRevision)+1)
				put, preempt = clientv3.OpPut(ek, nv.encode(), clientv3.WithLease(lease)), true
			}
		}
		resp, err := b.txn(ctx, "acquire", cmp, put, ek)
		if errors.Is(err, rpctypes.ErrLeaseNotFound) && lease != 0 && !regranted {
			// the lease ran out between its grant (or the session's last
			// keepalive) and this write, which wrote nothing: once more on
			// a new one
			regranted = true
			if sess, lease, err = b.newAcquireLease(ctx, sess, sec); err != nil {
				return Grant{}, err
			}
			continue
		}
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return Grant{}, unavailable("acquire", err)
		}
		if err != nil {
			return Grant{}, err
		}
		if resp.Succeeded {
			return grant(nv, resp.Header.Revision, preempt), nil
		}
		kv = elseKV(resp)
		if kv == nil && req.Mode == ModeReenter {
			return Grant{}, ErrLeaseLost
		}
	}
	return Grant{}, unavailable("acquire", errors.New("key changed under every attempt"))
}

// newAcquireLease replaces a lease that etcd no longer has: the session
// sess is marked lost (its keys are gone with it) and a new one granted;
// without a session (Detached), a new lease of its own.
func (b *EtcdBackend) newAcquireLease(ctx context.Context, sess *etcdSession, sec int64) (*etcdSession, clientv3.LeaseID, error) {
	if sess == nil {
		id, err := b.grantLease(ctx, sec)
		return nil, id, err
	}
	sess.mu.Lock()
	sess.lost = true
	sess.mu.Unlock()
	b.smu.Lock()
	if b.sessions[sec] == sess {
		delete(b.sessions, sec)
	}
	b.smu.Unlock()
	s, err := b.session(ctx, sec)
	if err != nil {
		return nil, 0, err
	}
	return s, s.id, nil
}

// Renew checks that token holds key. A key on this process's session for
// the same TTL needs nothing more (the session is kept alive); a key on a
// lease of its own gets a KeepAliveOnce; another TTL moves the key to a
// lease of that TTL in one transaction compared on mod_revision.
func (b *EtcdBackend) Renew(ctx context.Context, key, token string, ttl time.Duration) (Grant, error) {
	base, err := b.fenceBase(ctx)
	if err != nil {
		return Grant{}, err
	}
	ek := encodeEtcdKey(key)
	sec := etcdSeconds(ttl)
	sent := time.Now()
	kv, err := b.get(ctx, "renew", ek)
	for range 8 {
		if err != nil {
			return Grant{}, err
		}
		v, ok := heldBy(kv, token)
		if !ok {
			return Grant{}, ErrLeaseLost
		}
		g := Grant{Token: token, Holder: v.holder, Fence: v.fenceAt(base, kv.ModRevision), Since: time.UnixMicro(v.since), TTL: ttl, Count: v.count}
		onSession, sessSec := b.sessionOf(clientv3.LeaseID(kv.Lease))
		switch {
		case onSession != nil && sessSec == sec:
			rem := onSession.remaining(sent)
			if rem <= 0 {
				return Grant{}, unavailable("renew", errors.New("the session's keepalive is not getting through"))
			}
			g.TTL = min(ttl, rem)
			b.own(key, token, kv.ModRevision, v, ttl)
			return g, nil
		case onSession == nil && v.ttlSec == sec && kv.Lease != 0:
			err := b.do(ctx, "renew", func(ctx context.Context, _ int) error {
				_, err := b.c.KeepAliveOnce(ctx, clientv3.LeaseID(kv.Lease))
				return err
			})
			if errors.Is(err, rpctypes.ErrLeaseNotFound) {
				return Grant{}, ErrLeaseLost
			}
			return g, err
		}
		var lease clientv3.LeaseID
		var sess *etcdSession
		if onSession != nil {
			if sess, err = b.session(ctx, sec); err != nil {
				return Grant{}, err
			}
			lease = sess.id
		} else if lease, err = b.grantLease(ctx, sec); err != nil {
			return Grant{}, err
		}
		nv := v
		nv.fence, nv.ttlSec = v.fenceAt(base, kv.ModRevision), sec
		cmp := clientv3.Compare(clientv3.ModRevision(ek), "=", kv.ModRevision)
		resp, err := b.txn(ctx, "renew", cmp, clientv3.OpPut(ek, nv.encode(), clientv3.WithLease(lease)), ek)
		if errors.Is(err, rpctypes.ErrLeaseNotFound) { // the new lease ran out before the move: nothing moved
			return Grant{}, unavailable("renew", err)
		}
		if err != nil {
			return Grant{}, err
		}
		if resp.Succeeded {
			if sess != nil {
				g.TTL = min(ttl, sess.remaining(sent))
				b.own(key, token, resp.Header.Revision, nv, ttl)
			} else {
				b.revokeLater(clientv3.LeaseID(kv.Lease))
			}
			return g, nil
		}
		if sess == nil {
			b.revokeLater(lease)
		}
		kv = elseKV(resp)
	}
	return Grant{}, unavailable("renew", errors.New("key changed under every attempt"))
}

// Release drops one hold of key by token: a compare-and-delete on the
// revision this process wrote last when it has one (one round trip), else
// read and then write on the key's mod_revision. A key whose fence is
// above what fence_base + revision will give stays as a tombstone.
func (b *EtcdBackend) Release(ctx context.Context, key, token, nonce string) (bool, error) {
	return b.releaseLoop(ctx, key, token, nonce, false)
}

func (b *EtcdBackend) releaseLoop(ctx context.Context, key, token, nonce string, all bool) (bool, error) {
	base, err := b.fenceBase(ctx)
	if err != nil {
		return false, err
	}
	ek := encodeEtcdKey(key)
	var kv *mvccpb.KeyValue
	var v etcdValue
	known := false
	if o, ok := b.ownedBy(key, token); ok {
		kv, v, known = &mvccpb.KeyValue{Key: []byte(ek), ModRevision: o.modRev}, o.val, true
	} else if kv, err = b.get(ctx, "release", ek); err != nil {
		return false, err
	}
	uncertain := false // a timed-out attempt may have freed the key
	for range 8 {
		if !known {
			var ok bool
			if v, ok = heldBy(kv, token); !ok {
				if uncertain {
					b.disown(key, token, false)
					return true, nil
				}
				return false, ErrLeaseLost
			}
		}
		known = false
		if nonce != "" && v.nonce == nonce {
			return false, nil // a retried release whose first attempt already counted
		}
		var op clientv3.Op
		freed := true
		f := v.fenceAt(base, kv.ModRevision)
		switch {
		case v.count > 1 && !all:
			nv := v
			nv.count--
			nv.nonce, nv.fence = nonce, f
			op, freed = clientv3.OpPut(ek, nv.encode(), clientv3.WithIgnoreLease()), false
		case f > base+kv.ModRevision:
			op = clientv3.OpPut(ek, "-"+strconv.FormatInt(f, 10))
		default:
			op = clientv3.OpDelete(ek)
		}
		cmp := clientv3.Compare(clientv3.ModRevision(ek), "=", kv.ModRevision)
		var resp *clientv3.TxnResponse
		err := b.do(ctx, "release", func(ctx context.Context, attempt int) (err error) {
			uncertain = uncertain || attempt > 0
			resp, err = b.c.Txn(ctx).If(cmp).Then(op).Else(clientv3.OpGet(ek)).Commit()
			return err
		})
		if err != nil {
			return false, err
		}
		b.seen(resp.Header.Revision)
		if resp.Succeeded {
			if freed {
				b.disown(key, token, false)
			} else {
				nv, _, _ := decodeEtcdValue([]byte(op.ValueBytes()))
				b.own(key, token, resp.Header.Revision, nv, 0)
			}
			return freed, nil
		}
		kv = elseKV(resp)
	}
	return false, unavailable("release", errors.New("key changed under every attempt"))
}

// Holder reads key and its lease's remaining time. etcd reports whole
// seconds, rounded down: the expiry given is the latest it can be, capped
// at the lease's TTL.
func (b *EtcdBackend) Holder(ctx context.Context, key string) (Grant, error) {
	base, err := b.fenceBase(ctx)
	if err != nil {
		return Grant{}, err
	}
	kv, err := b.get(ctx, "holder", encodeEtcdKey(key))
	if err != nil {
		return Grant{}, err
	}
	v, tomb, err := decodeEtcdValue(valueOf(kv))
	if kv == nil || tomb > 0 || kv.Lease == 0 {
		return Grant{}, ErrNotHeld
	}
	if err != nil {
		return Grant{}, fmt.Errorf("%w: %s", err, key)
	}
	var ttl *clientv3.LeaseTimeToLiveResponse
	err = b.do(ctx, "holder", func(ctx context.Context, _ int) (err error) {
		ttl, err = b.c.TimeToLive(ctx, clientv3.LeaseID(kv.Lease))
		return err
	})
	if errors.Is(err, rpctypes.ErrLeaseNotFound) || err == nil && ttl.TTL < 0 {
		return Grant{}, ErrNotHeld
	}
	if err != nil {
		return Grant{}, err
	}
	return Grant{Holder: v.holder, Fence: v.fenceAt(base, kv.ModRevision), Since: time.UnixMicro(v.since),
		TTL: min(time.Duration(ttl.TTL+1)*time.Second, time.Duration(ttl.GrantedTTL)*time.Second), Count: v.count}, nil
}

// Ping reads P/fence_base (a linearizable read: it needs a leader).
func (b *EtcdBackend) Ping(ctx context.Context) error {
	_, err := b.get(ctx, "ping", b.baseKey)
	return err
}

// Close stops the session keepalives and the watches. Leases stay until
// their TTL runs out.
func (b *EtcdBackend) Close() error {
	b.smu.Lock()
	if b.closed {
		b.smu.Unlock()
		return nil
	}
	b.closed = true
	close(b.stop)
	b.smu.Unlock()
	b.wmu.Lock()
	for k, w := range b.watches {
		w.cancel()
		delete(b.watches, k)
	}
	b.wmu.Unlock()
	b.omu.Lock()
	for _, o := range b.owned {
		if o.reap != nil {
			o.reap.Stop()
		}
	}
	b.owned = nil
	b.omu.Unlock()
	b.wg.Wait()
	return nil
}

// fenceBase reads P/fence_base, writing it (µs now) if it does not exist.
func (b *EtcdBackend) fenceBase(ctx context.Context) (int64, error) {
	if v := b.base.Load(); v != 0 {
		return v, nil
	}
	b.baseMu.Lock()
	defer b.baseMu.Unlock()
	if v := b.base.Load(); v != 0 {
		return v, nil
	}
	now := strconv.FormatInt(time.Now().UnixMicro(), 10)
	cmp := clientv3.Compare(clientv3.CreateRevision(b.baseKey), "=", 0)
	resp, err := b.txn(ctx, "fence base", cmp, clientv3.OpPut(b.baseKey, now), b.baseKey)
	if err != nil {
		return 0, err
	}
	s := now
	if !resp.Succeeded {
		s = string(valueOf(elseKV(resp)))
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("locks: etcd: %s holds %q, not a positive integer", b.baseKey, s)
	}
	b.base.Store(v)
	return v, nil
}

func (b *EtcdBackend) grantLease(ctx context.Context, sec int64) (clientv3.LeaseID, error) {
	var resp *clientv3.LeaseGrantResponse
	err := b.do(ctx, "lease grant", func(ctx context.Context, _ int) (err error) {
		resp, err = b.c.Grant(ctx, sec)
		return err
	})
	if err != nil {
		return 0, err
	}
	return resp.ID, nil
}

// revokeLater revokes a lease this call granted but did not use; it would
// expire by itself, this only frees it sooner.
func (b *EtcdBackend) revokeLater(id clientv3.LeaseID) {
	if id == 0 {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
		defer cancel()
		_, _ = b.c.Revoke(ctx, id)
	}()
}

// sessionOf returns this process's session with lease id and its TTL key.
func (b *EtcdBackend) sessionOf(id clientv3.LeaseID) (*etcdSession, int64) {
	b.smu.Lock()
	defer b.smu.Unlock()
	for sec, s := range b.sessions {
		if s.id == id {
			return s, sec
		}
	}
	return nil, 0
}

func (b *EtcdBackend) get(ctx context.Context, op, ek string) (*mvccpb.KeyValue, error) {
	var resp *clientv3.GetResponse
	err := b.do(ctx, op, func(ctx context.Context, _ int) (err error) {
		resp, err = b.c.Get(ctx, ek)
		return err
	})
	if err != nil {
		return nil, err
	}
	b.seen(resp.Header.Revision)
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	return resp.Kvs[0], nil
}

func (b *EtcdBackend) txn(ctx context.Context, op string, cmp clientv3.Cmp, then clientv3.Op, ek string) (*clientv3.TxnResponse, error) {
	var resp *clientv3.TxnResponse
	err := b.do(ctx, op, func(ctx context.Context, _ int) (err error) {
		resp, err = b.c.Txn(ctx).If(cmp).Then(then).Else(clientv3.OpGet(ek)).Commit()
		return err
	})
	if err != nil {
		return nil, err
	}
	b.seen(resp.Header.Revision)
	return resp, nil
}

// do runs one call bounded by b.timeout (by ctx alone when its deadline is
// sooner), and once more after a timeout: every write here is compared on
// a revision or is idempotent per token and nonce. Failures come back
// wrapped in ErrUnavailable, except a lease that is not found.
func (b *EtcdBackend) do(ctx context.Context, op string, call func(context.Context, int) error) error {
	var err error
	for attempt := range 2 {
		cctx, cancel := ctx, context.CancelFunc(func() {})
		if d, ok := ctx.Deadline(); !ok || time.Until(d) > b.timeout {
			cctx, cancel = context.WithTimeout(ctx, b.timeout)
		}
		err = call(cctx, attempt)
		cancel()
		if err == nil || errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return err
		}
		if ctx.Err() != nil || !isTimeout(err) {
			break
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return unavailable(op, err)
}

func (b *EtcdBackend) seen(rev int64) {
	for {
		cur := b.rev.Load()
		if rev <= cur || b.rev.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// heldBy decodes kv when it is a lease held by token.
func heldBy(kv *mvccpb.KeyValue, token string) (etcdValue, bool) {
	if kv == nil {
		return etcdValue{}, false
	}
	v, tomb, err := decodeEtcdValue(kv.Value)
	if err != nil || tomb > 0 || v.token != token {
		return etcdValue{}, false
	}
	return v, true
}

func elseKV(resp *clientv3.TxnResponse) *mvccpb.KeyValue {
	if len(resp.Responses) == 0 {
		return nil
	}
	r := resp.Responses[0].GetResponseRange()
	if r == nil || len(r.Kvs) == 0 {
		return nil
	}
	return r.Kvs[0]
}

func valueOf(kv *mvccpb.KeyValue) []byte {
	if kv == nil {
		return nil
	}
	return kv.Value
}
