package locks_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
)

// revokingClient revokes the first lease it grants right away, as if the
// lease had run out between its grant (or last keepalive) and the write
// that uses it: a leader paused or changing under a 1 s TTL.
type revokingClient struct {
	*clientv3.Client
	grants atomic.Int64
}

func (c *revokingClient) Grant(ctx context.Context, ttl int64) (*clientv3.LeaseGrantResponse, error) {
	resp, err := c.Client.Grant(ctx, ttl)
	if err == nil && c.grants.Add(1) == 1 {
		_, err = c.Client.Revoke(ctx, resp.ID)
	}
	return resp, err
}

// An acquire whose lease is gone by the time it writes is granted on a new
// lease (the failed write wrote nothing), on the process's session and on a
// lease of its own alike, and never fails with etcd's raw "lease not
// found" (which the API could only answer with a 500).
func TestEtcdBackend_acquireWhoseLeaseRanOut_isGrantedOnANewLease(t *testing.T) {
	for _, detached := range []bool{false, true} {
		name := map[bool]string{false: "session", true: "detached"}[detached]
		t.Run(name, func(t *testing.T) {
			c := &revokingClient{Client: testenv.EtcdClient(t, testenv.EtcdEndpoints(t))}
			keys := locks.Keys{Prefix: "leaselost" + locks.NewToken()[:8]}
			b := locks.NewEtcdBackend(c, locks.EtcdOptions{Keys: keys, Timeout: time.Second})
			t.Cleanup(func() { _ = b.Close() })
			key, err := keys.Key("lease", "k")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			g, err := b.Acquire(ctx, key, locks.Request{Token: locks.NewToken(), Holder: "h", TTL: 2 * time.Second, Detached: detached})
			if err != nil {
				t.Fatalf("acquire: %v (%T)", err, err)
			}
			if h, err := b.Holder(ctx, key); err != nil || h.Holder != "h" || h.Fence != g.Fence {
				t.Fatalf("holder = %+v %v, want h at fence %d", h, err, g.Fence)
			}
		})
	}
}
