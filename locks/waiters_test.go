package locks_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/promptd/promptd/locks"
)

func TestWaiters_overTheLimit_getErrTooManyWaiters_andTheLimitFreesUp(t *testing.T) {
	m := locks.NewMemory(locks.Options{Holder: "t", MaxWaiters: 2})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	keys := locks.Keys{Prefix: "w"}
	k, _ := keys.Key("lease", "printer:1")
	k2, _ := keys.Key("lease", "printer:2")
	holder, err := m.Acquire(ctxT(t), k, time.Minute, locks.WithoutKeepalive())
	if err != nil {
		t.Fatal(err)
	}
	holder2, err := m.Acquire(ctxT(t), k2, time.Minute, locks.WithoutKeepalive())
	if err != nil {
		t.Fatal(err)
	}

	// Two waiters (one single, one multi-resource) fill the limit.
	got := make(chan error, 2)
	go func() {
		l, err := m.Acquire(ctxT(t), k, time.Second, locks.WithWait(20*time.Second), locks.WithoutKeepalive())
		if err == nil {
			err = l.Release(context.Background())
		}
		got <- err
	}()
	go func() {
		g, err := m.AcquireAll(ctxT(t), []string{k2}, time.Second, locks.WithWait(20*time.Second), locks.WithoutKeepalive())
		if err == nil {
			err = g.Release(context.Background())
		}
		got <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for m.Waiters() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("waiters = %d, want 2", m.Waiters())
		}
		time.Sleep(10 * time.Millisecond)
	}

	// A third waiter is turned away at once, with a typed error.
	start := time.Now()
	_, err = m.Acquire(ctxT(t), k, time.Second, locks.WithWait(20*time.Second))
	var tooMany *locks.TooManyWaitersError
	if !errors.Is(err, locks.ErrTooManyWaiters) || !errors.As(err, &tooMany) || tooMany.Limit != 2 {
		t.Fatalf("third waiter: %v", err)
	}
	if _, err := m.AcquireAll(ctxT(t), []string{k, k2}, time.Second, locks.WithWait(20*time.Second)); !errors.Is(err, locks.ErrTooManyWaiters) {
		t.Fatalf("third multi-resource waiter: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("turned away only after %v", d)
	}
	// Not waiting is never limited.
	if _, err := m.Acquire(ctxT(t), k, time.Second); !errors.Is(err, locks.ErrHeld) {
		t.Fatalf("acquire without wait: %v", err)
	}

	// The releases let both waiters in; the limit is free again.
	_ = holder.Release(context.Background())
	_ = holder2.Release(context.Background())
	for i := 0; i < 2; i++ {
		if err := <-got; err != nil {
			t.Fatalf("waiter: %v", err)
		}
	}
	if n := m.Waiters(); n != 0 {
		t.Fatalf("waiters after they were served = %d", n)
	}
	again, err := m.Acquire(ctxT(t), k, time.Minute, locks.WithoutKeepalive())
	if err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(100 * time.Millisecond); _ = again.Release(context.Background()) }()
	l, err := m.Acquire(ctxT(t), k, time.Second, locks.WithWait(20*time.Second), locks.WithoutKeepalive())
	if err != nil {
		t.Fatalf("a waiter after the others were served: %v", err)
	}
	_ = l.Release(context.Background())
}
