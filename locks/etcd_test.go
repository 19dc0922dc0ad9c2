package locks_test

import (
	"testing"
	"time"

	"github.com/promptd/promptd/internal/testenv"
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
