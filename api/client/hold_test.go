package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/promptd/promptd/api/client"
)

func newSession(t *testing.T, s *server) string {
	t.Helper()
	publish(t, s, "support", "prod", "You are helpful.")
	sess, err := s.rt.CreateSession(ctxT(t), client.CreateSessionRequest{Agent: "support", Env: "prod", UserID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	return sess.SessionID
}

// TestHoldLease_preempted_cancelsContextWithinTTL: another runtime takes
// the lease over; the holder's context ends within one TTL, with
// ErrLeaseLost, and its late write is refused.
func TestHoldLease_preempted_cancelsContextWithinTTL(t *testing.T) {
	s := startPromptd(t)
	ctx := ctxT(t)
	id := newSession(t, s)
	const ttl = 900 * time.Millisecond
	h, err := s.rt.HoldLease(ctx, id, "runtime-a", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.rt.AppendTurns(h.Context(), id, h.Condition(0), client.TextTurn("user", "hello")); err != nil {
		t.Fatal(err)
	}
	other, err := s.rt.AcquireSessionLease(ctx, id, client.LeaseRequest{Holder: "runtime-b", TTL: 5 * time.Second, Mode: client.ModePreempt})
	if err != nil {
		t.Fatal(err)
	}
	preempted := time.Now()
	select {
	case <-h.Done():
	case <-time.After(ttl):
		t.Fatalf("the holder's context is still live %v after the preemption", ttl)
	}
	t.Logf("context ended %v after the preemption (TTL %v)", time.Since(preempted).Round(time.Millisecond), ttl)
	if !errors.Is(h.Err(), client.ErrLeaseLost) || !errors.Is(context.Cause(h.Context()), client.ErrLeaseLost) {
		t.Fatalf("cause %v, want lease_lost", h.Err())
	}
	_, err = s.rt.AppendTurns(ctx, id, h.Condition(1), client.TextTurn("assistant", "late"))
	if e := wantCode(t, err, client.ErrStaleFence); e.CurrentFence() != other.Fence {
		t.Fatalf("CurrentFence %d, want %d", e.CurrentFence(), other.Fence)
	}
	wantCode(t, h.Release(ctx), client.ErrLeaseLost)
}

// TestHoldLease_renews_untilReleased: a lease held for several TTLs stays
// held (another holder is refused); Release frees it at once.
func TestHoldLease_renews_untilReleased(t *testing.T) {
	s := startPromptd(t)
	ctx := ctxT(t)
	id := newSession(t, s)
	const ttl = 300 * time.Millisecond
	h, err := s.rt.HoldLease(ctx, id, "runtime-a", ttl)
	if err != nil {
		t.Fatal(err)
	}
	first := h.ExpiresAt()
	time.Sleep(4 * ttl)
	if h.Err() != nil || !h.ExpiresAt().After(first) {
		t.Fatalf("lease lost or not renewed: %v, expires %v (first %v)", h.Err(), h.ExpiresAt(), first)
	}
	_, err = s.rt.AcquireSessionLease(ctx, id, client.LeaseRequest{Holder: "runtime-b", TTL: time.Second})
	wantCode(t, err, client.ErrLeaseHeld)
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(h.Err(), client.ErrLeaseReleased) {
		t.Fatalf("cause %v", h.Err())
	}
	if _, err := s.rt.AcquireSessionLease(ctx, id, client.LeaseRequest{Holder: "runtime-b", TTL: time.Second}); err != nil {
		t.Fatalf("after release: %v", err)
	}
}

// TestHoldLease_promptdUnreachable_expiresWithinTTL: with promptd paused
// no renewal succeeds, so the context ends before the TTL runs out.
func TestHoldLease_promptdUnreachable_expiresWithinTTL(t *testing.T) {
	s := startPromptd(t)
	ctx := ctxT(t)
	id := newSession(t, s)
	const ttl = 600 * time.Millisecond
	h, err := s.rt.HoldLease(ctx, id, "runtime-a", ttl)
	if err != nil {
		t.Fatal(err)
	}
	acquired := time.Now()
	s.p.Pause()
	defer s.p.Resume()
	select {
	case <-h.Done():
	case <-time.After(2 * ttl):
		t.Fatal("the context outlived the lease")
	}
	if since := time.Since(acquired); since > ttl {
		t.Fatalf("context ended %v after the last grant, after the TTL %v", since, ttl)
	}
	if !errors.Is(h.Err(), client.ErrLeaseExpired) {
		t.Fatalf("cause %v, want ErrLeaseExpired", h.Err())
	}
}
