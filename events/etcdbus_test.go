package events_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/promptd/promptd/events"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
)

// received collects the events a bus delivers.
type received struct {
	mu  sync.Mutex
	evs []events.Event
}

func (r *received) add(_ context.Context, ev events.Event) {
	r.mu.Lock()
	r.evs = append(r.evs, ev)
	r.mu.Unlock()
}

func (r *received) count(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ev := range r.evs {
		if ev.ID == id {
			n++
		}
	}
	return n
}

// waitFor waits up to d for n events with id.
func (r *received) waitFor(t *testing.T, id string, n int, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); r.count(id) < n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("event %q delivered %d times within %v, want %d", id, r.count(id), d, n)
		}
	}
}

func etcdBus(t *testing.T, endpoints []string, prefix string) (*events.Bus, *received) {
	t.Helper()
	b := events.NewBus(events.Options{Etcd: testenv.EtcdClient(t, endpoints), Prefix: prefix, EtcdTimeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { _ = b.Close() })
	r := &received{}
	b.SubscribeAll(r.add)
	return b, r
}

func uniquePrefix() string { return "bus" + locks.NewToken()[:12] }

// Without Redis, a bus on etcd carries each event to every other bus once;
// its own subscribers get it once, at Publish, not again from the watch.
func TestEtcdBus_publish_reachesOtherBusesOnce(t *testing.T) {
	eps := testenv.EtcdEndpoints(t)
	prefix := uniquePrefix()
	a, ra := etcdBus(t, eps, prefix)
	_, rb := etcdBus(t, eps, prefix)
	_, rc := etcdBus(t, eps, prefix)
	for _, id := range []string{"e1", "e2", "e3"} {
		a.Publish(context.Background(), events.Event{Kind: "pointer", Agent: "a", Env: "prod", ID: id, Revision: 1})
	}
	for _, id := range []string{"e1", "e2", "e3"} {
		rb.waitFor(t, id, 1, 5*time.Second)
		rc.waitFor(t, id, 1, 5*time.Second)
	}
	time.Sleep(300 * time.Millisecond) // a duplicate would arrive by now
	for _, id := range []string{"e1", "e2", "e3"} {
		if ra.count(id) != 1 || rb.count(id) != 1 || rc.count(id) != 1 {
			t.Errorf("%s delivered %d/%d/%d times (publisher/others), want once each", id, ra.count(id), rb.count(id), rc.count(id))
		}
	}
	_, rOther := etcdBus(t, eps, uniquePrefix())
	a.Publish(context.Background(), events.Event{Kind: "pointer", ID: "e4"})
	rb.waitFor(t, "e4", 1, 5*time.Second)
	if rOther.count("e4") != 0 {
		t.Errorf("a bus of another prefix got the event")
	}
}

// An event published just before Close still reaches the other buses.
func TestEtcdBus_close_putsWhatWasQueued(t *testing.T) {
	eps := testenv.EtcdEndpoints(t)
	prefix := uniquePrefix()
	a, _ := etcdBus(t, eps, prefix)
	_, rb := etcdBus(t, eps, prefix)
	a.Publish(context.Background(), events.Event{Kind: "release", ID: "last"})
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	rb.waitFor(t, "last", 1, 5*time.Second)
}

// The watch comes back after its member is killed and restarted: events
// published after the restart are delivered, and Close does not hang on an
// etcd that is down.
func TestEtcdBus_afterMemberRestart_keepsDelivering(t *testing.T) {
	m := testenv.StartEtcd(t)
	eps := []string{m.Endpoint()}
	prefix := uniquePrefix()
	a, _ := etcdBus(t, eps, prefix)
	_, rb := etcdBus(t, eps, prefix)
	a.Publish(context.Background(), events.Event{Kind: "pointer", ID: "before"})
	rb.waitFor(t, "before", 1, 5*time.Second)
	m.Kill()
	a.Publish(context.Background(), events.Event{Kind: "pointer", ID: "during"}) // may be lost: the reconcilers heal it
	time.Sleep(500 * time.Millisecond)
	m.Restart()
	deadline := time.Now().Add(15 * time.Second)
	for rb.count("after") == 0 { // the watch resumes within its backoff; publish until it has
		if time.Now().After(deadline) {
			t.Fatalf("no event delivered within 15 s of the member's restart")
		}
		a.Publish(context.Background(), events.Event{Kind: "pointer", ID: "after"})
		time.Sleep(200 * time.Millisecond)
	}
	m.Kill()
	c, _ := etcdBus(t, eps, prefix)
	c.Publish(context.Background(), events.Event{Kind: "pointer", ID: "down"})
	done := make(chan struct{})
	go func() { _ = c.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung with etcd down")
	}
}

// A bus whose lease is gone (revoked, or expired while etcd was away)
// grants a new one and still delivers the batch.
func TestEtcdBus_leaseRevoked_nextEventStillDelivered(t *testing.T) {
	eps := testenv.EtcdEndpoints(t)
	prefix := uniquePrefix()
	a, _ := etcdBus(t, eps, prefix)
	_, rb := etcdBus(t, eps, prefix)
	a.Publish(context.Background(), events.Event{Kind: "pointer", ID: "first"})
	rb.waitFor(t, "first", 1, 5*time.Second)
	c := testenv.EtcdClient(t, eps)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := c.Get(ctx, prefix+"/events/", clientv3.WithPrefix())
	if err != nil || len(got.Kvs) != 1 || got.Kvs[0].Lease == 0 {
		t.Fatalf("the bus's key: %v %v, want one key on a lease", got, err)
	}
	if _, err := c.Revoke(ctx, clientv3.LeaseID(got.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	a.Publish(context.Background(), events.Event{Kind: "pointer", ID: "second"})
	rb.waitFor(t, "second", 1, 5*time.Second)
}
