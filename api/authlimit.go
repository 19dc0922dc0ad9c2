package api

import (
	"context"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
)

// DefaultAuthFailuresPerMinute is how many failed authentications (an
// unknown, revoked or expired token or console cookie) one client address
// may make per minute on one instance, in a burst of as many, before its
// unknown tokens are refused with 429 quota_exceeded. It is sized for a
// fleet behind one address rotating its tokens, not for one client: a
// client spraying made-up secrets makes thousands a minute.
const DefaultAuthFailuresPerMinute = 600

// authLimitAddresses bounds the client addresses the limiter remembers.
const authLimitAddresses = 1 << 16

// authLimiter is a token bucket of failed authentications per client
// address (an IPv4 address, or an IPv6 /64: one host commonly holds a
// whole /64; behind a proxy listed in Config.TrustedProxies, the address
// it forwarded for). A managed token's lookup costs a SQL query, so a
// client spraying made-up secrets would otherwise cost the database one
// query per request; over budget, its managed tokens are answered from
// the cache alone: those this instance checked recently still pass, any
// other is refused without SQL until the bucket refills. Bootstrap tokens
// always pass (a constant-time compare, no SQL), so an operator is never
// locked out by another client at the same address. Successful
// authentications cost nothing.
type authLimiter struct {
	every rate.Limit
	burst int
	now   func() time.Time
	// client is a request's client address: the connection's, or, from
	// a trusted proxy, the one it forwarded for (Config.TrustedProxies).
	client func(*http.Request) string
	// refused and limited count 401s and 429s (promptd_auth_failures_total).
	refused, limited prometheus.Counter

	mu      sync.Mutex
	buckets map[netip.Prefix]*rate.Limiter
}

// newAuthLimiter allows perMinute failures a minute per address, in a
// burst of as many; perMinute < 0 turns the limiter off (nil).
func newAuthLimiter(perMinute int, client func(*http.Request) string, failures *prometheus.CounterVec) *authLimiter {
	if perMinute < 0 {
		return nil
	}
	if perMinute == 0 {
		perMinute = DefaultAuthFailuresPerMinute
	}
	return &authLimiter{every: rate.Limit(float64(perMinute) / 60), burst: perMinute, now: time.Now, client: client,
		refused: failures.WithLabelValues("refused"), limited: failures.WithLabelValues("limited"),
		buckets: map[netip.Prefix]*rate.Limiter{}}
}

// clientPrefix is the address a request's failures are counted against.
func (l *authLimiter) clientPrefix(r *http.Request) netip.Prefix {
	host := l.client(r)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{} // not an IP (a test's or a unix socket's): one shared bucket
	}
	a = a.Unmap()
	if a.Is4() {
		return netip.PrefixFrom(a, 32)
	}
	p, _ := a.Prefix(64)
	return p
}

// recheckKey marks the context of an open stream's re-checks of the token
// it was opened with (watchToken): they are neither guesses nor refused
// for their address's failures, or a client failing at an address could
// end every stream open from it.
type recheckKey struct{}

// asRecheck returns r marked as a re-check.
func asRecheck(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), recheckKey{}, true))
}

func isRecheck(r *http.Request) bool { return r.Context().Value(recheckKey{}) != nil }

// retryAfter is zero while r's address may still fail, else how long
// until it may fail once more.
func (l *authLimiter) retryAfter(r *http.Request) time.Duration {
	if l == nil || isRecheck(r) {
		return 0
	}
	now := l.now()
	l.mu.Lock()
	b := l.buckets[l.clientPrefix(r)]
	l.mu.Unlock()
	if b == nil {
		return 0
	}
	tokens := b.TokensAt(now)
	if tokens >= 1 {
		return 0
	}
	return time.Duration(math.Ceil((1-tokens)/float64(l.every)*1000)) * time.Millisecond
}

// failed spends one of r's address's failures.
func (l *authLimiter) failed(r *http.Request) {
	if l == nil || isRecheck(r) {
		return
	}
	l.refused.Inc()
	now, key := l.now(), l.clientPrefix(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= authLimitAddresses {
			l.forgetFullLocked(now)
		}
		b = rate.NewLimiter(l.every, l.burst)
		l.buckets[key] = b
	}
	b.AllowN(now, 1)
}

// forgetFullLocked drops the buckets that have refilled (they hold
// nothing a new bucket would not); if every address is still failing, it
// drops them all rather than grow without bound.
func (l *authLimiter) forgetFullLocked(now time.Time) {
	for k, b := range l.buckets {
		if b.TokensAt(now) >= float64(l.burst) {
			delete(l.buckets, k)
		}
	}
	if len(l.buckets) >= authLimitAddresses {
		clear(l.buckets)
	}
}

// errLimited is the answer to a client over its budget of failed
// authentications whose token this instance does not know.
func (l *authLimiter) errLimited(wait time.Duration) *Error {
	l.limited.Inc()
	secs := int(math.Ceil(wait.Seconds()))
	secs = max(secs, 1)
	return Errorf("quota_exceeded", "too many failed authentications from this address; retry after %d s", secs).
		With("limit", l.burst).
		WithHeader("Retry-After", strconv.Itoa(secs))
}
