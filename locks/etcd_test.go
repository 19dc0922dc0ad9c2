package locks_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
)

// etcdTiming: a 100 ms lease is a 1 s etcd lease, expired by the leader's
// next check (every 500 ms) through a raft proposal.
var etcdTiming = suiteTiming{expiryGrace: 2 * time.Second}

func etcdBackends(endpoints []string) func(t *testing.T, prefix string) (locks.Backend, locks.Backend) {
	return func(t *testing.T, prefix string) (locks.Backend, locks.Backend) {
		o := locks.EtcdOptions{Keys: locks.Keys{Prefix: prefix}, Timeout: time.Second}
		return locks.NewEtcdBackend(testenv.EtcdClient(t, endpoints), o), locks.NewEtcdBackend(testenv.EtcdClient(t, endpoints), o)
	}
}

func TestEtcdBackend_behaviour(t *testing.T) {
	runSuite(t, etcdBackends(testenv.EtcdEndpoints(t)), etcdTiming)
}

// The same behaviour on three members: each process's client talks to
// another member first, so reads, writes and watches cross the cluster.
func TestEtcdClusterBackend_behaviour(t *testing.T) {
	c := testenv.StartEtcdCluster(t, 3)
	eps := c.Endpoints()
	runSuite(t, func(t *testing.T, prefix string) (locks.Backend, locks.Backend) {
		o := locks.EtcdOptions{Keys: locks.Keys{Prefix: prefix}, Timeout: 2 * time.Second}
		return locks.NewEtcdBackend(testenv.EtcdClient(t, []string{eps[1], eps[0], eps[2]}), o),
			locks.NewEtcdBackend(testenv.EtcdClient(t, []string{eps[2], eps[1], eps[0]}), o)
	}, etcdTiming)
}

func etcdPair(t *testing.T) (*locks.EtcdBackend, *locks.EtcdBackend) {
	t.Helper()
	eps := testenv.EtcdEndpoints(t)
	o := locks.EtcdOptions{Keys: locks.Keys{Prefix: "t" + locks.NewToken()[:8]}, Timeout: time.Second}
	a, b := locks.NewEtcdBackend(testenv.EtcdClient(t, eps), o), locks.NewEtcdBackend(testenv.EtcdClient(t, eps), o)
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	return a, b
}

// A key on the process's session lease is kept alive by the session, not
// by its holder: when the holder stops renewing it, the process deletes it
// a TTL later, as Redis would let it expire.
func TestEtcdBackend_sessionKeyNotRenewed_isFreedAfterItsTTL(t *testing.T) {
	a, b := etcdPair(t)
	k := "t:lock:lease:{" + locks.NewToken() + "}"
	if _, err := a.Acquire(ctxT(t), k, locks.Request{Token: "tok-a", Holder: "a", TTL: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := b.Acquire(ctxT(t), k, locks.Request{Token: "tok-b", Holder: "b", TTL: time.Second, Detached: true})
		if err == nil {
			break
		}
		if !errors.Is(err, locks.ErrHeld) || time.Now().After(deadline) {
			t.Fatalf("key not freed 5s after its 300ms TTL: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A renewal with a longer TTL moves the key to a lease of that TTL: it
// outlives the lease it was granted on.
func TestEtcdBackend_renewWithAnotherTTL_movesTheKeyToALeaseOfThatTTL(t *testing.T) {
	a, b := etcdPair(t)
	k := "t:lock:lease:{" + locks.NewToken() + "}"
	g, err := a.Acquire(ctxT(t), k, locks.Request{Token: "tok", Holder: "a", TTL: time.Second, Detached: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Renew(ctxT(t), k, "tok", 6*time.Second)
	if err != nil || r.Fence != g.Fence {
		t.Fatalf("renew: %+v %v", r, err)
	}
	time.Sleep(2500 * time.Millisecond) // the first lease (1 s) has expired
	h, err := b.Holder(ctxT(t), k)
	if err != nil || h.Fence != g.Fence || h.TTL <= 2*time.Second || h.TTL > 6*time.Second {
		t.Fatalf("holder after the first lease expired: %+v %v", h, err)
	}
	if freed, err := a.Release(ctxT(t), k, "tok", ""); err != nil || !freed {
		t.Fatalf("release: %v %v", freed, err)
	}
}

// '/' and '%' are encoded in etcd keys: keys that differ only there are
// different locks.
func TestEtcdBackend_keysWithSlashAndPercent_doNotCollide(t *testing.T) {
	a, _ := etcdPair(t)
	id := locks.NewToken()
	for i, k := range []string{"t:{" + id + "/x}", "t:{" + id + "%2Fx}", "t:{" + id + "%252Fx}"} {
		if _, err := a.Acquire(ctxT(t), k, locks.Request{Token: fmt.Sprint("tok", i), Holder: "a", TTL: time.Second, Detached: true}); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
}
