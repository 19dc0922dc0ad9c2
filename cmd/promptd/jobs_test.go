package main

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promptd/promptd/locks"
)

func TestSingletonJob_runsOnOneReplicaAtATime(t *testing.T) {
	backend := locks.NewMemoryBackend(nil) // one lock store, two replicas
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	keys := locks.Keys{Prefix: "jobs-test"}
	replica := func(name string) *scheduler {
		m := locks.New(backend, locks.Options{Holder: name})
		t.Cleanup(func() { _ = m.Close(context.Background()) })
		s := newScheduler(m, keys, quiet)
		t.Cleanup(func() { s.stop(context.Background()) })
		return s
	}
	a, b := replica("a"), replica("b")
	key, _ := keys.Job("idempotency-sweep")

	var runs atomic.Int32
	inside, release := make(chan struct{}), make(chan struct{})
	job := func(ctx context.Context) error {
		runs.Add(1)
		close(inside)
		<-release
		return nil
	}
	done := make(chan bool)
	go func() { done <- a.runSingleton("idempotency-sweep", key, job) }()
	<-inside
	if b.runSingleton("idempotency-sweep", key, func(context.Context) error { runs.Add(1); return nil }) {
		t.Fatal("replica b ran the job while a held its lease")
	}
	close(release)
	if !<-done {
		t.Fatal("replica a did not run the job")
	}
	if !b.runSingleton("idempotency-sweep", key, func(context.Context) error { runs.Add(1); return nil }) {
		t.Fatal("replica b could not run the job after a finished")
	}
	if runs.Load() != 2 {
		t.Fatalf("runs = %d", runs.Load())
	}
}

func TestEveryInstanceJob_runsPeriodically_andStops(t *testing.T) {
	s := newScheduler(locks.NewMemory(locks.Options{}), locks.Keys{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	var runs atomic.Int32
	s.everyInstance("tick", time.Second, func(context.Context) error { runs.Add(1); return nil })
	s.start()
	deadline := time.Now().Add(5 * time.Second)
	for runs.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	s.stop(context.Background())
	n := runs.Load()
	if n == 0 {
		t.Fatal("the job never ran")
	}
	time.Sleep(1500 * time.Millisecond)
	if runs.Load() != n {
		t.Fatal("the job ran after stop")
	}
}
