package session

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/sqlstore"
)

// Lease modes (double texting).
const (
	ModeReject  = "reject"  // answer lease_held at once
	ModeWait    = "wait"    // wait up to Wait, woken by the release
	ModePreempt = "preempt" // take over now with a higher fence
)

// Lease limits.
const (
	DefaultLeaseTTL = 5 * time.Second
	MinLeaseTTL     = 100 * time.Millisecond
	MaxLeaseTTL     = 60 * time.Second
	MaxLeaseWait    = 30 * time.Second
)

// LeaseInput asks for a session lease.
type LeaseInput struct {
	Holder string
	TTL    time.Duration
	Wait   time.Duration
	Mode   string
	Token  string // the current token, to re-enter
}

// Lease is a granted session lease. The token renews and releases it; it
// never appears in URLs or logs.
type Lease struct {
	LeaseID   string    `json:"lease_id"`
	Token     string    `json:"token"`
	Fence     int64     `json:"fence"`
	ExpiresAt time.Time `json:"expires_at"`
}

// ValidateLease checks holder, ttl and wait; zero ttl means the default.
func ValidateLease(holder string, ttl, wait time.Duration) (time.Duration, error) {
	if err := promptstore.ValidateOpaque("holder", holder); err != nil {
		return 0, err
	}
	if ttl == 0 {
		ttl = DefaultLeaseTTL
	}
	if ttl < MinLeaseTTL || ttl > MaxLeaseTTL {
		return 0, invalidf("ttl_ms", "ttl_ms must be %d..%d", MinLeaseTTL.Milliseconds(), MaxLeaseTTL.Milliseconds())
	}
	if wait < 0 || wait > MaxLeaseWait {
		return 0, invalidf("wait_ms", "wait_ms must be 0..%d", MaxLeaseWait.Milliseconds())
	}
	return ttl, nil
}

// AcquireLease grants the session lease. Before it returns, the session
// row's fence is raised to the grant's (UPDATE ... SET fence = ? WHERE
// fence < ?), so a former holder is fenced out at once; a grant that would
// not exceed the row's fence is issued above it.
func (s *Service) AcquireLease(ctx context.Context, id string, in LeaseInput) (*Lease, error) {
	if err := validID("session_id", id); err != nil {
		return nil, err
	}
	ttl, err := ValidateLease(in.Holder, in.TTL, in.Wait)
	if err != nil {
		return nil, err
	}
	opts := []locks.Option{locks.WithoutKeepalive(), locks.WithHolder(in.Holder)}
	switch in.Mode {
	case "", ModeReject:
	case ModeWait:
		opts = append(opts, locks.WithWait(in.Wait))
	case ModePreempt:
		opts = append(opts, locks.WithPreempt())
	default:
		return nil, invalidf("mode", `mode must be "reject", "wait" or "preempt"`)
	}
	if in.Token != "" {
		opts = append(opts, locks.WithToken(in.Token))
	}
	sctx, cancel := s.sqlCtx(ctx)
	row, err := readSession(s.db.WithContext(sctx), id)
	cancel()
	if err != nil {
		return nil, storeErr(err)
	}
	if row.State != Open {
		return nil, ErrClosed
	}
	key := s.key(id)
	opts = append(opts, locks.WithMinFence(row.Fence))
	l, err := s.o.Locker.Acquire(ctx, key, ttl, opts...)
	var held *locks.HeldError
	switch {
	case errors.As(err, &held):
		c := held.Conflicts[0]
		return nil, &LeaseHeld{Holder: c.Holder, ExpiresAt: c.ExpiresAt}
	case errors.Is(err, locks.ErrLeaseLost):
		return nil, ErrLeaseLost
	case err != nil:
		return nil, err
	}
	if err := s.raiseFence(ctx, id, l.Fence()); err != nil {
		_, _ = s.o.Locker.Release(context.WithoutCancel(ctx), key, l.Token())
		return nil, err
	}
	s.fenced.add(id)
	ev := audit.Event{Action: "lease.acquired", Agent: row.Agent, Env: row.Env, SessionID: id, Resource: "sessions/" + id + "/lease"}
	details := map[string]any{"holder": in.Holder, "fence": l.Fence(), "mode": in.Mode}
	s.o.Events.Add(ctx, ev, details)
	if in.Mode == ModePreempt && l.Fence() > row.Fence && row.Fence > 0 {
		ev.Action = "lease.preempted"
		s.o.Events.Add(ctx, ev, details)
	}
	return &Lease{LeaseID: "sl_" + strconv.FormatInt(l.Fence(), 36), Token: l.Token(), Fence: l.Fence(), ExpiresAt: l.ExpiresAt().UTC()}, nil
}

// raiseFence makes the row's fence the grant's. A row already above it
// means a newer grant exists: this one is stale.
func (s *Service) raiseFence(ctx context.Context, id string, fence int64) error {
	ctx, cancel := s.sqlCtx(ctx)
	defer cancel()
	db := s.db.WithContext(ctx)
	res, err := sqlstore.ExecDirect(db, `UPDATE sessions SET fence = ? WHERE session_id = ? AND fence < ?`, fence, id, fence)
	if err != nil {
		return storeErr(err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	row, err := readSession(db, id)
	if err != nil {
		return storeErr(err)
	}
	if row.Fence == fence { // a re-entry, or a retried grant
		return nil
	}
	return ErrLeaseLost
}

// RenewLease extends the lease held with token.
func (s *Service) RenewLease(ctx context.Context, id, token string, ttl time.Duration) (time.Time, error) {
	if err := validID("session_id", id); err != nil {
		return time.Time{}, err
	}
	if ttl == 0 {
		ttl = DefaultLeaseTTL
	}
	if ttl < MinLeaseTTL || ttl > MaxLeaseTTL {
		return time.Time{}, invalidf("ttl_ms", "ttl_ms must be %d..%d", MinLeaseTTL.Milliseconds(), MaxLeaseTTL.Milliseconds())
	}
	if token == "" {
		return time.Time{}, ErrLeaseLost
	}
	exp, err := s.o.Locker.Renew(ctx, s.key(id), token, ttl)
	if errors.Is(err, locks.ErrLeaseLost) {
		s.o.Events.Add(ctx, audit.Event{Action: "lease.renew_failed", SessionID: id, Resource: "sessions/" + id + "/lease"}, map[string]any{})
		return time.Time{}, ErrLeaseLost
	}
	return exp.UTC(), err
}

// ReleaseLease drops one hold of the lease held with token; another
// holder's lease is never touched.
func (s *Service) ReleaseLease(ctx context.Context, id, token string) error {
	if err := validID("session_id", id); err != nil {
		return err
	}
	if token == "" {
		return ErrLeaseLost
	}
	freed, err := s.o.Locker.Release(ctx, s.key(id), token)
	if errors.Is(err, locks.ErrLeaseLost) {
		return ErrLeaseLost
	}
	if err == nil && freed {
		s.o.Events.Add(ctx, audit.Event{Action: "lease.released", SessionID: id, Resource: "sessions/" + id + "/lease"}, map[string]any{})
	}
	return err
}
