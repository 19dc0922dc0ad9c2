package locks_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/promptd/promptd/locks"
)

// A lease guards work; its fence goes into the storage write; its context
// ends the work if the lease is lost.
func Example() {
	ctx := context.Background()
	m := locks.NewMemory(locks.Options{Holder: "runtime-1"})
	defer m.Close(ctx)

	key, _ := locks.Keys{}.Key("session", "sess-42")
	lease, err := m.Acquire(ctx, key, 5*time.Second)
	if err != nil {
		panic(err)
	}
	fmt.Println("fenced:", lease.Fence() > 0)

	// Another owner is turned away and told who holds the key.
	_, err = m.Acquire(ctx, key, time.Second, locks.WithHolder("runtime-2"))
	var held *locks.HeldError
	fmt.Println("held by:", errors.As(err, &held), held.Conflicts[0].Holder)

	// Nested code re-enters the lease through its context.
	inner, _ := m.Acquire(lease.Context(), key, 5*time.Second)
	fmt.Println("same lease:", inner == lease, "holds:", lease.Count())
	_ = inner.Release(ctx)
	_ = lease.Release(ctx)

	<-lease.Done()
	fmt.Println("after release:", lease.Err())
	// Output:
	// fenced: true
	// held by: true runtime-1
	// same lease: true holds: 2
	// after release: locks: lease released
}

// Several resources are taken all or nothing, in sorted order.
func ExampleManager_AcquireAll() {
	ctx := context.Background()
	m := locks.NewMemory(locks.Options{Holder: "tool-runner"})
	defer m.Close(ctx)

	keys := locks.Keys{}
	a, _ := keys.Key("lease", "order/1001")
	b, _ := keys.Key("lease", "machine:7")
	g, err := m.AcquireAll(ctx, []string{a, b}, 10*time.Second, locks.WithWait(time.Second))
	if err != nil {
		panic(err)
	}
	defer g.Release(ctx)
	for _, l := range g.Leases() {
		fmt.Println(l.Key())
	}
	// Output:
	// prompt:lock:lease:{machine:7}
	// prompt:lock:lease:{order/1001}
}
