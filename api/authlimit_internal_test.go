package api

import (
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
)

// The budget refills at its rate, IPv6 addresses of one /64 share one
// budget while IPv4 addresses do not, and the addresses remembered stay
// bounded.
func TestAuthLimiter_refills_groupsIPv6By64_staysBounded(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	l := newAuthLimiter(6, echo.ExtractIPDirect(), newHTTPMetrics(nil).authFailures) // 6 a minute: one every 10 s
	l.now = func() time.Time { return now }
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "192.0.2.10:1000"
	for range 6 {
		if l.retryAfter(r) != 0 {
			t.Fatal("refused within budget")
		}
		l.failed(r)
	}
	if w := l.retryAfter(r); w != 10*time.Second {
		t.Fatalf("after 6 failures: retry after %v, want 10s", w)
	}
	now = now.Add(4 * time.Second)
	if w := l.retryAfter(r); w != 6*time.Second {
		t.Fatalf("4 s later: retry after %v, want 6s", w)
	}
	now = now.Add(6 * time.Second)
	if w := l.retryAfter(r); w != 0 {
		t.Fatalf("10 s later: retry after %v, want 0 (one failure refilled)", w)
	}
	l.failed(r)
	if l.retryAfter(r) == 0 {
		t.Fatal("the refilled failure spent: still allowed")
	}

	other := httptest.NewRequest("GET", "/", nil)
	other.RemoteAddr = "192.0.2.11:1000"
	if l.retryAfter(other) != 0 {
		t.Fatal("a neighbouring IPv4 address shares the budget")
	}
	v6a, v6b, v6c := httptest.NewRequest("GET", "/", nil), httptest.NewRequest("GET", "/", nil), httptest.NewRequest("GET", "/", nil)
	v6a.RemoteAddr, v6b.RemoteAddr, v6c.RemoteAddr = "[2001:db8:1:2::1]:1", "[2001:db8:1:2:ffff::9]:1", "[2001:db8:1:3::1]:1"
	for range 6 {
		l.failed(v6a)
	}
	if l.retryAfter(v6b) == 0 {
		t.Error("another address of the same IPv6 /64 has its own budget")
	}
	if l.retryAfter(v6c) != 0 {
		t.Error("an address of another /64 shares the budget")
	}
	mapped := httptest.NewRequest("GET", "/", nil)
	mapped.RemoteAddr = "[::ffff:192.0.2.10]:1"
	if l.retryAfter(mapped) == 0 {
		t.Error("an IPv4-mapped IPv6 address escapes its IPv4 address's budget")
	}

	big := newAuthLimiter(1, echo.ExtractIPDirect(), newHTTPMetrics(nil).authFailures)
	big.now = l.now
	x := httptest.NewRequest("GET", "/", nil)
	for i := range authLimitAddresses + 10 {
		x.RemoteAddr = "10." + strconv.Itoa(i>>16&255) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255) + ":1"
		big.failed(x)
	}
	if n := len(big.buckets); n > authLimitAddresses {
		t.Fatalf("%d addresses remembered, more than %d", n, authLimitAddresses)
	}
}
