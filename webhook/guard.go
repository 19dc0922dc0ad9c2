package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/promptd/promptd/problem"
)

// MaxURLBytes is the longest webhook URL.
const MaxURLBytes = 2048

// Reasons of a refused URL (URLError.Reason).
const (
	ReasonInvalid  = "invalid"         // not an absolute URL
	ReasonTooLong  = "too_long"        // over MaxURLBytes
	ReasonScheme   = "scheme"          // not https (or http with AllowHTTP)
	ReasonUserinfo = "userinfo"        // user:password@ in the URL
	ReasonHost     = "host"            // no host
	ReasonAddress  = "refused_address" // the host is or resolves to a refused address
	ReasonDNS      = "dns"             // the host does not resolve
)

// URLError: a webhook URL that promptd will not call.
type URLError struct {
	Reason string
	Detail string
}

func (e *URLError) Error() string { return "webhook: url refused (" + e.Reason + "): " + e.Detail }

// Problem is 422 invalid_url with the reason.
func (e *URLError) Problem() *problem.Problem {
	return (&problem.Problem{Code: problem.InvalidURL, Detail: e.Detail}).With("field", "url").With("reason", e.Reason)
}

// Resolver resolves host names; *net.Resolver is one. Tests inject their own.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Guard decides which URLs and addresses webhooks may reach.
type Guard struct {
	AllowHTTP    bool // PROMPTD_WEBHOOK_ALLOW_HTTP: http:// URLs too
	AllowPrivate bool // PROMPTD_WEBHOOK_ALLOW_PRIVATE: loopback and private addresses too
	// Resolver resolves hosts at creation and at every dial; nil means
	// net.DefaultResolver.
	Resolver Resolver
}

func (g Guard) resolver() Resolver {
	if g.Resolver != nil {
		return g.Resolver
	}
	return net.DefaultResolver
}

// refusedV4 are the IPv4 ranges no webhook may reach (api/openapi.yaml, Webhooks).
var refusedV4 = prefixes("0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
	"172.16.0.0/12", "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4")

// refusedV6 are the IPv6 ranges refused whatever they embed; 64:ff9b:1::/48
// is the local-use NAT64 prefix (RFC 8215), which only ever leads into a
// site's own IPv4 networks.
var refusedV6 = prefixes("::/128", "::1/128", "fc00::/7", "fe80::/10", "ff00::/8", "64:ff9b:1::/48")

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

var (
	nat64   = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4  = netip.MustParsePrefix("2002::/16")
	compat4 = netip.MustParsePrefix("::/96") // IPv4-compatible (deprecated) ::a.b.c.d
	// IPv4-translated ::ffff:0:a.b.c.d (::ffff:0:0:0/96, RFC 2765 SIIT; the
	// IPv4-mapped ::ffff:0:0/96 is unmapped above): translators map it
	// to the IPv4 address it embeds.
	translated4 = netip.MustParsePrefix("::ffff:0:0:0/96")
)

// Refused reports whether ip is an address no webhook may reach: one of
// the refused ranges, or an IPv6 form that embeds a refused IPv4 address
// (IPv4-mapped ::ffff:a.b.c.d, IPv4-translated ::ffff:0:a.b.c.d,
// IPv4-compatible ::a.b.c.d, NAT64 64:ff9b::a.b.c.d, 6to4 2002:aabb:ccdd::).
func Refused(ip netip.Addr) bool {
	ip = ip.WithZone("")
	if !ip.IsValid() {
		return true
	}
	if ip.Is4In6() {
		ip = ip.Unmap()
	}
	if ip.Is4() {
		for _, p := range refusedV4 {
			if p.Contains(ip) {
				return true
			}
		}
		return false
	}
	for _, p := range refusedV6 {
		if p.Contains(ip) {
			return true
		}
	}
	b := ip.As16()
	switch {
	case nat64.Contains(ip), compat4.Contains(ip), translated4.Contains(ip):
		return Refused(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
	case sixTo4.Contains(ip):
		return Refused(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
	}
	return false
}

func (g Guard) refused(ip netip.Addr) bool { return !g.AllowPrivate && Refused(ip) }

// CheckURL parses raw and refuses what promptd will not call: a URL that
// is too long, not absolute, not https (unless AllowHTTP), with userinfo,
// or whose host is or resolves to a refused address (unless
// AllowPrivate). The dial checks the addresses again, on each connection.
func (g Guard) CheckURL(ctx context.Context, raw string) (*url.URL, error) {
	if len(raw) > MaxURLBytes {
		return nil, &URLError{ReasonTooLong, fmt.Sprintf("the URL is longer than %d bytes", MaxURLBytes)}
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return nil, &URLError{ReasonInvalid, "url must be an absolute http(s) URL"}
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !g.AllowHTTP {
			return nil, &URLError{ReasonScheme, "only https URLs are allowed (PROMPTD_WEBHOOK_ALLOW_HTTP allows http)"}
		}
	default:
		return nil, &URLError{ReasonScheme, "the scheme must be https"}
	}
	if u.User != nil {
		return nil, &URLError{ReasonUserinfo, "the URL must not carry a user or password"}
	}
	host := u.Hostname()
	if host == "" {
		return nil, &URLError{ReasonHost, "the URL has no host"}
	}
	if p := u.Port(); p != "" {
		if n, err := parsePort(p); err != nil || n == 0 {
			return nil, &URLError{ReasonInvalid, "the port must be 1..65535"}
		}
	}
	ips, err := g.lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	for _, ip := range ips {
		if g.refused(ip) {
			return nil, &URLError{ReasonAddress, fmt.Sprintf("the host is or resolves to %s, a loopback, private, "+
				"link-local or reserved address (PROMPTD_WEBHOOK_ALLOW_PRIVATE allows it)", ip)}
		}
	}
	return u, nil
}

func parsePort(p string) (int, error) {
	n := 0
	for _, r := range p {
		if r < '0' || r > '9' || n > 65535 {
			return 0, errors.New("bad port")
		}
		n = n*10 + int(r-'0')
	}
	if n > 65535 {
		return 0, errors.New("bad port")
	}
	return n, nil
}

// lookup returns host's addresses (host itself when it is an address).
func (g Guard) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return []netip.Addr{ip}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ips, err := g.resolver().LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return nil, &URLError{ReasonDNS, fmt.Sprintf("the host %q does not resolve", host)}
	}
	return ips, nil
}

// errRefusedDial: the dialer's Control hook refused the connection's IP.
var errRefusedDial = errors.New("webhook: dial to a refused address")

// dialContext resolves addr's host (through the Guard's resolver) and
// dials its addresses in turn; the Control hook checks the IP each socket
// is about to connect to, so whatever the resolver said, no connection
// to a refused address is ever opened.
func (g Guard) dialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		ips, err := g.lookup(ctx, host)
		if err != nil {
			return nil, &net.DNSError{Err: err.Error(), Name: host, IsNotFound: true}
		}
		var first error
		for _, ip := range ips {
			c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
			if err == nil {
				return c, nil
			}
			if first == nil || errors.Is(err, errRefusedDial) {
				first = err
			}
		}
		return nil, first
	}
}

// control is the dialer's Control hook: it runs after the socket is
// created and before it connects, with the address it connects to.
func (g Guard) control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return errRefusedDial
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || g.refused(ip) {
		return errRefusedDial
	}
	return nil
}

// Client returns the HTTP client deliveries use: every dial through the
// guard, no proxy from the environment, no redirects followed (a 3xx is
// the answer), timeout per attempt.
func (g Guard) Client(timeout time.Duration) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second, Control: g.control}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           g.dialContext(d),
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: timeout,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       60 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{Transport: tr, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// classify names why an attempt failed to get an answer: refused_address,
// dns, timeout, tls or connect.
func classify(err error) string {
	var (
		dnsErr  *net.DNSError
		netErr  net.Error
		recErr  tls.RecordHeaderError
		alert   tls.AlertError
		verify  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
	)
	switch {
	case errors.Is(err, errRefusedDial):
		return "refused_address"
	case errors.As(err, &dnsErr):
		return "dns"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case errors.As(err, &recErr), errors.As(err, &alert), errors.As(err, &verify), errors.As(err, &unknown),
		errors.As(err, &host), errors.As(err, &invalid):
		return "tls"
	}
	return "connect"
}
