package leases_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/leases"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
)

func newService(t *testing.T) *leases.Service {
	m := locks.NewMemory(locks.Options{})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	return leases.New(leases.Options{Locker: m, Keys: locks.Keys{Prefix: "leases-test"}})
}

func TestParseID_roundTrips_andRefusesWhatNoLeaseHas(t *testing.T) {
	svc := newService(t)
	l, err := svc.Acquire(context.Background(), leases.AcquireInput{Resources: []string{"b", "a", "b"}, Holder: "h"})
	if err != nil {
		t.Fatal(err)
	}
	id, err := leases.ParseID(l.ID.String())
	if err != nil || len(id.Resources()) != 2 || id.String() != l.ID.String() {
		t.Fatalf("round trip: %v %v", id.Resources(), err)
	}
	for _, bad := range []string{"", "ls_", "x_YQ", "ls_YQ=", "ls_!!", "ls_Ygph" /* b\na: not sorted */, "ls_YQph" /* a\na: not distinct */} {
		if _, err := leases.ParseID(bad); !errors.Is(err, leases.ErrNotFound) {
			t.Fatalf("ParseID(%q) = %v, want ErrNotFound", bad, err)
		}
	}
	if err := svc.Release(context.Background(), leases.ID{}, l.Token); !errors.Is(err, leases.ErrNotFound) {
		t.Fatalf("release of the zero ID: %v", err)
	}
}

func TestAcquire_badInput_isTypedAndTakesNothing(t *testing.T) {
	svc := newService(t)
	ctx := context.Background()
	var invalidID *ident.InvalidError
	var invalid *promptstore.InvalidError
	for name, in := range map[string]leases.AcquireInput{
		"no resources":   {Holder: "h"},
		"17 resources":   {Resources: make([]string, leases.MaxResources+1), Holder: "h"},
		"bad resource":   {Resources: []string{"ok", "not ok"}, Holder: "h"},
		"no holder":      {Resources: []string{"ok"}},
		"ttl too long":   {Resources: []string{"ok"}, Holder: "h", TTL: time.Hour},
		"negative wait":  {Resources: []string{"ok"}, Holder: "h", Wait: -time.Second},
		"wait above max": {Resources: []string{"ok"}, Holder: "h", Wait: leases.MaxWait + time.Millisecond},
		"ttl below min":  {Resources: []string{"ok"}, Holder: "h", TTL: time.Millisecond},
	} {
		_, err := svc.Acquire(ctx, in)
		if !errors.As(err, &invalidID) && !errors.As(err, &invalid) {
			t.Fatalf("%s: %v, want an invalid-input error", name, err)
		}
	}
	if l, err := svc.Acquire(ctx, leases.AcquireInput{Resources: []string{"ok"}, Holder: "h"}); err != nil || l.Fences["ok"] <= 0 {
		t.Fatalf("after the refusals the resource is free: %v", err)
	}
}

func TestRenew_afterAResourceWasTakenOver_namesIt_andRenewsTheRest(t *testing.T) {
	m := locks.NewMemory(locks.Options{})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	keys := locks.Keys{Prefix: "leases-test"}
	svc := leases.New(leases.Options{Locker: m, Keys: keys})
	ctx := context.Background()
	l, err := svc.Acquire(ctx, leases.AcquireInput{Resources: []string{"a", "b"}, Holder: "h", TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := leases.Key(keys, "b")
	other, err := m.Acquire(ctx, kb, time.Second, locks.WithPreempt(), locks.WithoutKeepalive())
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.Renew(ctx, l.ID, l.Token, 2*time.Second)
	var lost *leases.LostError
	if !errors.As(err, &lost) || len(lost.Resources) != 1 || lost.Resources[0] != "b" || !errors.Is(err, locks.ErrLeaseLost) {
		t.Fatalf("renew: %v", err)
	}
	if info, err := m.Holder(ctx, kb); err != nil || info.Fence != other.Fence() {
		t.Fatalf("the other holder's lease was touched: %+v %v", info, err)
	}
	if err := svc.Release(ctx, l.ID, l.Token); !errors.As(err, &lost) || lost.Resources[0] != "b" {
		t.Fatalf("release: %v", err)
	}
}
