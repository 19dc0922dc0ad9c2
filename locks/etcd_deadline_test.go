package locks_test

import (
	"context"
	"testing"
	"time"

	"github.com/promptd/promptd/locks"
)

// shortGrants says every grant and renewal lasts only d, as the etcd
// backend does when its session's last keepalive is older than the TTL.
type shortGrants struct {
	locks.Backend
	d time.Duration
}

func (s shortGrants) Acquire(ctx context.Context, key string, req locks.Request) (locks.Grant, error) {
	g, err := s.Backend.Acquire(ctx, key, req)
	g.TTL = s.d
	return g, err
}

func (s shortGrants) Renew(ctx context.Context, key, token string, ttl time.Duration) (locks.Grant, error) {
	g, err := s.Backend.Renew(ctx, key, token, ttl)
	g.TTL = s.d
	return g, err
}

// The local deadline never passes what the backend promised: a grant that
// is sure for 2 s of a 10 s TTL ends by then, unless renewed.
func TestLease_grantSureForLessThanTTL_capsTheDeadline(t *testing.T) {
	m := locks.New(shortGrants{Backend: locks.NewMemoryBackend(nil), d: 2 * time.Second}, locks.Options{})
	defer m.Close(context.Background())
	sent := time.Now()
	l, err := m.Acquire(context.Background(), "k", 10*time.Second, locks.WithoutKeepalive())
	if err != nil {
		t.Fatal(err)
	}
	if d := l.ExpiresAt().Sub(sent); d > 2*time.Second {
		t.Fatalf("deadline %v after the grant, want at most the 2s the backend promised", d)
	}
}
