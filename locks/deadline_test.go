package locks

import (
	"context"
	"errors"
	"testing"
	"time"
)

type ctxKey struct{}

func TestCallBound_endsWithinTimeoutAndASlot_keepsValues(t *testing.T) {
	const timeout = 80 * time.Millisecond
	b := newCallBound(timeout)
	parent := context.WithoutCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
	start := time.Now()
	ctx := b.context(parent)
	bg := b.context(context.Background())
	for _, c := range []context.Context{ctx, bg} {
		d, ok := c.Deadline()
		if !ok || d.Before(start.Add(timeout)) || d.After(time.Now().Add(timeout+timeout/16)) {
			t.Fatalf("deadline %v after start, want [%v, %v]", d.Sub(start), timeout, timeout+timeout/16)
		}
		if c.Err() != nil {
			t.Fatalf("err before the deadline: %v", c.Err())
		}
	}
	if ctx.Value(ctxKey{}) != "v" {
		t.Fatalf("value lost: %v", ctx.Value(ctxKey{}))
	}
	child, cancel := context.WithCancel(ctx) // follows ctx through AfterFunc
	defer cancel()
	select {
	case <-child.Done():
	case <-time.After(10 * timeout):
		t.Fatal("not done after 10 timeouts")
	}
	if took := time.Since(start); took < timeout {
		t.Fatalf("done after %v, before the timeout %v", took, timeout)
	}
	for _, c := range []context.Context{ctx, bg, child} {
		if !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Fatalf("err = %v", c.Err())
		}
	}
	later := b.context(context.Background())
	if later.Err() != nil {
		t.Fatalf("a call after the slot ended got an ended context: %v", later.Err())
	}
}
