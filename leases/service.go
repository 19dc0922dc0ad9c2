package leases

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/problem"
)

// Limits of a generic lease (api/openapi.yaml, Generic leases).
const (
	MaxResources = 16
	DefaultTTL   = 5 * time.Second
	MinTTL       = 100 * time.Millisecond
	MaxTTL       = 60 * time.Second
	MaxWait      = 30 * time.Second
)

// Options configure a Service.
type Options struct {
	// Locker holds the leases; Keys builds their lock keys
	// (P:lock:lease:{<resource>}).
	Locker locks.Locker
	Keys   locks.Keys
	// Events receives lease.acquired, lease.released and
	// lease.renew_failed, written asynchronously; nil drops them. Their
	// details are a few bounded fields (see event), never the request.
	Events *audit.Batcher
	// Ledger counts each owner's live leases; nil: a MemoryLedger (this
	// process only). MaxPerOwner bounds them (PROMPTD_LEASE_MAX_PER_TOKEN);
	// zero means DefaultMaxPerOwner.
	Ledger      Ledger
	MaxPerOwner int
}

// Service grants, renews and releases generic leases.
type Service struct {
	o Options
}

// New returns a Service.
func New(o Options) *Service {
	if o.Ledger == nil {
		o.Ledger = NewMemoryLedger()
	}
	if o.MaxPerOwner <= 0 {
		o.MaxPerOwner = DefaultMaxPerOwner
	}
	return &Service{o: o}
}

// AcquireInput asks for a lease.
type AcquireInput struct {
	// Resources are 1..MaxResources resource names (ident.ValidateResource);
	// duplicates count once.
	Resources []string
	// Holder names the holder (1..256 bytes of printable UTF-8).
	Holder string
	// TTL is MinTTL..MaxTTL; zero means DefaultTTL.
	TTL time.Duration
	// Wait is how long to wait for held resources, 0..MaxWait.
	Wait time.Duration
	// Owner is who takes the lease (the token's name), counted against
	// Options.MaxPerOwner; empty: audit.Actor(ctx).
	Owner string
}

// Lease is a granted lease. The token renews and releases it; it never
// appears in URLs or logs.
type Lease struct {
	ID    ID
	Token string
	// Fences are the fencing tokens by resource.
	Fences map[string]int64
	// ExpiresAt is when the first of its resources expires.
	ExpiresAt time.Time
}

// ValidateResources checks the resources of a lease: 1..MaxResources of
// them (a *promptstore.InvalidError on "resources"), each a valid resource
// name (a *ident.InvalidError on "resources[i]").
func ValidateResources(resources []string) error {
	if len(resources) == 0 || len(resources) > MaxResources {
		return &problem.InvalidError{Code: problem.InvalidField, Field: "resources",
			Detail: fmt.Sprintf("resources must name 1..%d resources", MaxResources)}
	}
	for i, r := range resources {
		if err := ident.ValidateResource(fmt.Sprintf("resources[%d]", i), r); err != nil {
			return err
		}
	}
	return nil
}

// validateTTL checks a TTL; zero means DefaultTTL.
func validateTTL(ttl time.Duration) (time.Duration, error) {
	if ttl == 0 {
		return DefaultTTL, nil
	}
	if ttl < MinTTL || ttl > MaxTTL {
		return 0, &problem.InvalidError{Code: problem.InvalidField, Field: "ttl_ms",
			Detail: fmt.Sprintf("ttl_ms must be %d..%d", MinTTL.Milliseconds(), MaxTTL.Milliseconds())}
	}
	return ttl, nil
}

// Acquire takes every resource or none, in sorted order; on a conflict
// everything taken is released, and it waits (up to in.Wait) for the
// blocking resource's release and retries the whole set. One token holds
// them all. A final conflict is a *HeldError.
func (s *Service) Acquire(ctx context.Context, in AcquireInput) (*Lease, error) {
	if err := ValidateResources(in.Resources); err != nil {
		return nil, err
	}
	if err := ident.CheckOpaque("holder", in.Holder); err != nil {
		return nil, err
	}
	ttl, err := validateTTL(in.TTL)
	if err != nil {
		return nil, err
	}
	if in.Wait < 0 || in.Wait > MaxWait {
		return nil, &problem.InvalidError{Code: problem.InvalidField, Field: "wait_ms",
			Detail: fmt.Sprintf("wait_ms must be 0..%d", MaxWait.Milliseconds())}
	}
	resources := slices.Compact(slices.Sorted(slices.Values(in.Resources)))
	keys, back, err := s.keys(resources)
	if err != nil {
		return nil, err
	}
	token := locks.NewToken()
	owner, member := ownerOf(ctx, in.Owner), ledgerMember(token)
	// The owner's live leases are counted before anything is taken, and
	// the count fails closed: a ledger error takes nothing.
	ok, first, err := s.o.Ledger.Reserve(ctx, owner, member, time.Now().Add(in.Wait+ttl), s.o.MaxPerOwner)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &QuotaError{Limit: s.o.MaxPerOwner, RetryAfter: max(time.Until(first), time.Second)}
	}
	g, err := s.o.Locker.AcquireAll(ctx, keys, ttl, locks.WithWait(in.Wait), locks.WithoutKeepalive(),
		locks.WithHolder(in.Holder), locks.WithOwnerToken(token))
	if err != nil {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_ = s.o.Ledger.Drop(dctx, owner, member) // else counted until its reserved expiry
		cancel()
	}
	var held *locks.HeldError
	switch {
	case errors.As(err, &held):
		e := &HeldError{cause: held, Conflicts: make([]Conflict, len(held.Conflicts))}
		for i, c := range held.Conflicts {
			e.Conflicts[i] = Conflict{Resource: back[c.Key], Holder: c.Holder, ExpiresAt: c.ExpiresAt}
		}
		return nil, e
	case err != nil:
		return nil, err
	}
	l := &Lease{ID: idOf(resources), Token: token, Fences: make(map[string]int64, len(resources))}
	for _, m := range g.Leases() {
		l.Fences[back[m.Key()]] = m.Fence()
		if e := m.ExpiresAt(); l.ExpiresAt.IsZero() || e.Before(l.ExpiresAt) {
			l.ExpiresAt = e
		}
	}
	s.event(ctx, "lease.acquired", resources, map[string]any{"holder": eventHolder(in.Holder), "fence": l.Fences[resources[0]]})
	return l, nil
}

// Renew extends every resource of the lease that token still holds by ttl
// (zero: DefaultTTL) and returns when the first of them expires. If any was
// lost, the error is a *LostError naming them (the rest stays held until
// released).
func (s *Service) Renew(ctx context.Context, id ID, token string, ttl time.Duration) (time.Time, error) {
	ttl, err := validateTTL(ttl)
	if err != nil {
		return time.Time{}, err
	}
	keys, back, err := s.keys(id.resources)
	if err != nil {
		return time.Time{}, err
	}
	var lost []string
	var expires time.Time
	for _, k := range keys {
		exp, err := s.o.Locker.Renew(ctx, k, token, ttl)
		switch {
		case errors.Is(err, locks.ErrLeaseLost):
			lost = append(lost, back[k])
		case err != nil:
			return time.Time{}, err
		case expires.IsZero() || exp.Before(expires):
			expires = exp
		}
	}
	if len(lost) > 0 {
		s.event(ctx, "lease.renew_failed", id.resources, map[string]any{"lost": len(lost)})
		return time.Time{}, &LostError{Resources: lost}
	}
	// Best effort: a count not extended ends at its former expiry.
	_ = s.o.Ledger.Extend(ctx, ownerOf(ctx, ""), ledgerMember(token), expires)
	return expires, nil
}

// Release frees every resource of the lease that token still holds, in
// reverse order like a group release. If token no longer held some, the
// error is a *LostError naming them. Another holder's lease is never
// touched.
func (s *Service) Release(ctx context.Context, id ID, token string) error {
	keys, back, err := s.keys(id.resources)
	if err != nil {
		return err
	}
	var lost, freed []string
	for i := len(keys) - 1; i >= 0; i-- {
		_, err := s.o.Locker.Release(ctx, keys[i], token)
		switch {
		case errors.Is(err, locks.ErrLeaseLost):
			lost = append(lost, back[keys[i]])
		case err != nil:
			return err
		default:
			freed = append(freed, back[keys[i]])
		}
	}
	_ = s.o.Ledger.Drop(ctx, ownerOf(ctx, ""), ledgerMember(token)) // best effort, as Extend
	if len(freed) > 0 {
		slices.Sort(freed)
		s.event(ctx, "lease.released", freed, map[string]any{})
	}
	if len(lost) > 0 {
		slices.Sort(lost)
		return &LostError{Resources: lost}
	}
	return nil
}

// keys maps resources to their lock keys, and back.
func (s *Service) keys(resources []string) (keys []string, back map[string]string, err error) {
	if len(resources) == 0 {
		return nil, nil, ErrNotFound // the zero ID
	}
	back = make(map[string]string, len(resources))
	for _, r := range resources {
		key, err := Key(s.o.Keys, r)
		if err != nil {
			return nil, nil, err
		}
		keys = append(keys, key)
		back[key] = r
	}
	return keys, back, nil
}

// MaxEventHolder bounds the bytes of the holder a lease event keeps.
const MaxEventHolder = 64

// event queues an audit event of a lease (asynchronously, never slowing the
// lease path). The row stays small whatever the request: its resource is
// the first one (at most 256 bytes) and its details a fixed set of small
// fields: "resources" (how many), "holder" (cut to MaxEventHolder bytes)
// and "fence" (the first resource's) on lease.acquired, "lost" (how many)
// on lease.renew_failed. No list, fence map or lease id (which encodes
// every resource) is copied.
func (s *Service) event(ctx context.Context, action string, resources []string, details map[string]any) {
	details["resources"] = len(resources)
	s.o.Events.Add(ctx, audit.Event{Action: action, Resource: "leases/" + resources[0]}, details)
}

// eventHolder is holder cut to MaxEventHolder bytes, on a rune boundary.
func eventHolder(holder string) string {
	if len(holder) <= MaxEventHolder {
		return holder
	}
	cut := MaxEventHolder
	for cut > 0 && !utf8.RuneStart(holder[cut]) {
		cut--
	}
	return holder[:cut]
}

// ownerOf is the owner a lease is counted for.
func ownerOf(ctx context.Context, owner string) string {
	if owner != "" {
		return owner
	}
	return audit.Actor(ctx)
}

// KindLock is the lock kind of generic leases (locks.Keys.Key).
const KindLock = "lease"

// Key is the lock key of a generic lease on resource.
func Key(k locks.Keys, resource string) (string, error) {
	if err := ident.ValidateResource("resources", resource); err != nil {
		return "", err
	}
	return k.Key(KindLock, resource)
}
