package leases

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"
)

// DefaultMaxPerOwner is how many live generic leases one owner (the
// token that took them) may hold at once (PROMPTD_LEASE_MAX_PER_TOKEN).
const DefaultMaxPerOwner = 1000

// Ledger counts the live generic leases of each owner: every instance of
// a cluster shares one (RedisLedger), or one process counts its own
// (MemoryLedger). A lease is counted from its acquire until it is
// released or its recorded expiry passes.
type Ledger interface {
	// Reserve counts lease for owner until expires, unless owner already
	// has max live leases: then ok is false and first is when the first
	// of them expires. Reserving a lease already counted moves its expiry.
	Reserve(ctx context.Context, owner, lease string, expires time.Time, max int) (ok bool, first time.Time, err error)
	// Extend moves the expiry of a lease counted for owner (a lease not
	// counted stays uncounted).
	Extend(ctx context.Context, owner, lease string, expires time.Time) error
	// Drop stops counting lease.
	Drop(ctx context.Context, owner, lease string) error
}

// ledgerMember names a lease in a Ledger: a digest of its owner token, so
// that the ledger keeps no secret.
func ledgerMember(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:12])
}

// MemoryLedger is a Ledger of one process: exact with one instance, a
// per-instance bound with several.
type MemoryLedger struct {
	mu     sync.Mutex
	owners map[string]map[string]time.Time
	now    func() time.Time
}

// NewMemoryLedger returns an empty MemoryLedger.
func NewMemoryLedger() *MemoryLedger {
	return &MemoryLedger{owners: map[string]map[string]time.Time{}, now: time.Now}
}

// Reserve implements Ledger.
func (m *MemoryLedger) Reserve(_ context.Context, owner, lease string, expires time.Time, max int) (bool, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	live := m.owners[owner]
	var first time.Time
	for l, exp := range live {
		if !exp.After(now) {
			delete(live, l)
		} else if first.IsZero() || exp.Before(first) {
			first = exp
		}
	}
	if _, ok := live[lease]; !ok && len(live) >= max {
		return false, first, nil
	}
	if live == nil {
		live = map[string]time.Time{}
		m.owners[owner] = live
	}
	live[lease] = expires
	return true, time.Time{}, nil
}

// Extend implements Ledger.
func (m *MemoryLedger) Extend(_ context.Context, owner, lease string, expires time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.owners[owner][lease]; ok {
		m.owners[owner][lease] = expires
	}
	return nil
}

// Drop implements Ledger.
func (m *MemoryLedger) Drop(_ context.Context, owner, lease string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.owners[owner], lease)
	if len(m.owners[owner]) == 0 {
		delete(m.owners, owner)
	}
	return nil
}
