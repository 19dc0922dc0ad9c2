package webhook_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/promptd/promptd/sqlstore"

	"github.com/promptd/promptd/webhook"
)

// fakeResolver answers every name with its addresses; calls counts lookups.
type fakeResolver struct {
	answers func(call int64) []netip.Addr
	calls   atomic.Int64
}

func (r *fakeResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return r.answers(r.calls.Add(1)), nil
}

func always(ip string) *fakeResolver {
	return &fakeResolver{answers: func(int64) []netip.Addr { return []netip.Addr{netip.MustParseAddr(ip)} }}
}

func reasonOf(err error) string {
	var ue *webhook.URLError
	if errors.As(err, &ue) {
		return ue.Reason
	}
	return ""
}

func TestCheckURL_whenHostIsRefused_isInvalidURLWithReason(t *testing.T) {
	ctx := context.Background()
	plain := webhook.Guard{Resolver: always("10.0.0.1")}
	httpOK := webhook.Guard{AllowHTTP: true, Resolver: always("10.0.0.1")}
	for _, tc := range []struct {
		guard  webhook.Guard
		url    string
		reason string
	}{
		{plain, "http://127.0.0.1/hook", webhook.ReasonScheme},
		{plain, "https://127.0.0.1/hook", webhook.ReasonAddress},
		{httpOK, "http://127.0.0.1/hook", webhook.ReasonAddress},
		{plain, "https://169.254.169.254/latest/meta-data", webhook.ReasonAddress},
		{plain, "https://[::1]/hook", webhook.ReasonAddress},
		{plain, "https://[::ffff:127.0.0.1]/hook", webhook.ReasonAddress},
		{plain, "https://[::ffff:169.254.169.254]/hook", webhook.ReasonAddress},
		{plain, "https://[64:ff9b::a00:1]/hook", webhook.ReasonAddress},       // NAT64 of 10.0.0.1
		{plain, "https://[2002:7f00:1::1]/hook", webhook.ReasonAddress},       // 6to4 of 127.0.0.1
		{plain, "https://[::ffff:0:7f00:1]/hook", webhook.ReasonAddress},      // IPv4-translated 127.0.0.1
		{plain, "https://[::ffff:0:a9fe:a9fe]/hook", webhook.ReasonAddress},   // IPv4-translated 169.254.169.254
		{plain, "https://[64:ff9b:1::5db8:d822]/hook", webhook.ReasonAddress}, // local-use NAT64
		{plain, "https://[fe80::1%25eth0]/hook", webhook.ReasonAddress},       // link-local with a zone
		{plain, "https://[fd00::1]/hook", webhook.ReasonAddress},              // unique local
		{plain, "https://0.0.0.0/hook", webhook.ReasonAddress},
		{plain, "https://internal.example/hook", webhook.ReasonAddress}, // resolves to 10.0.0.1
		{plain, "https://user:pw@example.com/hook", webhook.ReasonUserinfo},
		{plain, "ftp://example.com/", webhook.ReasonScheme},
		{plain, "/relative", webhook.ReasonInvalid},
		{plain, "https://example.com/" + string(make([]byte, webhook.MaxURLBytes)), webhook.ReasonTooLong},
	} {
		_, err := tc.guard.CheckURL(ctx, tc.url)
		if got := reasonOf(err); got != tc.reason {
			t.Errorf("CheckURL(%.60q) = %v, want reason %s", tc.url, err, tc.reason)
		}
	}
	if webhook.Refused(netip.MustParseAddr("::ffff:0:5db8:d822")) || webhook.Refused(netip.MustParseAddr("64:ff9b::5db8:d822")) {
		t.Error("a translated or NAT64 form of a public IPv4 address is refused")
	}
	public := webhook.Guard{Resolver: always("93.184.216.34")}
	if _, err := public.CheckURL(ctx, "https://hooks.example.com/x"); err != nil {
		t.Errorf("a public host is refused: %v", err)
	}
	if _, err := (webhook.Guard{AllowHTTP: true, AllowPrivate: true}).CheckURL(ctx, "http://127.0.0.1:9/x"); err != nil {
		t.Errorf("with AllowPrivate and AllowHTTP, loopback is refused: %v", err)
	}
}

// listener counts the connections a test server accepted.
func countingServer(t *testing.T, h http.Handler) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			n.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestClient_whenNameRebindsToLoopback_refusesTheDialInControl(t *testing.T) {
	srv, conns := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	// The first lookup (the check at creation) says a public address; every
	// later one (the dial) says loopback: DNS rebinding.
	res := &fakeResolver{answers: func(call int64) []netip.Addr {
		if call == 1 {
			return []netip.Addr{netip.MustParseAddr("93.184.216.34")}
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	}}
	g := webhook.Guard{AllowHTTP: true, Resolver: res}
	u := "http://rebind.example:" + itoa(port) + "/hook"
	if _, err := g.CheckURL(context.Background(), u); err != nil {
		t.Fatalf("the check at creation saw a public address and refused: %v", err)
	}
	outcome := webhook.Attempt(context.Background(), g.Client(webhook.DefaultTimeout), u)
	if outcome != "refused_address" {
		t.Fatalf("dial outcome = %q, want refused_address", outcome)
	}
	// A literal loopback URL (a check skipped, say) is refused at the dial too.
	if o := webhook.Attempt(context.Background(), g.Client(webhook.DefaultTimeout), srv.URL); o != "refused_address" {
		t.Fatalf("dial to %s = %q, want refused_address", srv.URL, o)
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("the receiver on loopback accepted %d connections; want none", n)
	}
}

func TestClient_whenReceiverRedirects_doesNotFollow(t *testing.T) {
	inner, innerConns := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	outer, _ := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, inner.URL+"/stolen", http.StatusFound)
	}))
	// AllowPrivate only so the test can reach its own receiver on loopback.
	g := webhook.Guard{AllowHTTP: true, AllowPrivate: true}
	if o := webhook.Attempt(context.Background(), g.Client(webhook.DefaultTimeout), outer.URL); o != "http_302" {
		t.Fatalf("outcome = %q, want http_302 (the redirect is the answer)", o)
	}
	if n := innerConns.Load(); n != 0 {
		t.Fatalf("the redirect target got %d connections; want none", n)
	}
	// Without AllowPrivate the redirect's loopback target is not reached
	// either (nor is the loopback receiver itself).
	strict := webhook.Guard{AllowHTTP: true}
	if o := webhook.Attempt(context.Background(), strict.Client(webhook.DefaultTimeout), outer.URL); o != "refused_address" {
		t.Fatalf("outcome = %q, want refused_address", o)
	}
	if n := innerConns.Load(); n != 0 {
		t.Fatalf("the redirect target got %d connections; want none", n)
	}
}

func itoa(n int) string {
	return netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(n)).String()[len("0.0.0.0:"):]
}

func sqliteCfg(t *testing.T) sqlstore.Config {
	return sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "promptd.db")}
}
