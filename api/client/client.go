package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client calls one promptd. It is safe for concurrent use.
type Client struct {
	base      string
	baseErr   error
	token     string
	hc        *http.Client
	retries   int
	maxWait   time.Duration
	userAgent string
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client (default: a client with a 60 s
// timeout). Its Timeout bounds each attempt.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithRetries sets how many times a call is retried (default 2), and only
// when retrying is safe: a 503 with Retry-After (promptd changed nothing);
// a connection that was never made; any transport error of a GET or of a
// POST that carries an Idempotency-Key (the same key is sent again).
func WithRetries(n int) Option { return func(c *Client) { c.retries = max(n, 0) } }

// WithMaxRetryWait bounds the wait before one retry (default 5 s), whatever
// Retry-After asks for.
func WithMaxRetryWait(d time.Duration) Option { return func(c *Client) { c.maxWait = d } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a client of the promptd at baseURL (such as
// "http://127.0.0.1:8080") that authenticates with token. An invalid
// baseURL makes every call fail with the parse error.
func New(baseURL, token string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), token: token, retries: 2, maxWait: 5 * time.Second,
		hc: &http.Client{Timeout: 60 * time.Second}, userAgent: "promptd-go-client/1"}
	if u, err := url.Parse(c.base); err != nil || u.Scheme == "" || u.Host == "" {
		c.baseErr = fmt.Errorf("promptd: invalid server URL %q: want such as http://127.0.0.1:8080", baseURL)
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

type idemKeyCtx struct{}

// WithIdempotencyKey makes the idempotent POST made with ctx send key
// instead of a random one: a caller that retries across processes (after
// a crash) sends the same key and gets the first outcome back.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idemKeyCtx{}, key)
}

// newIdempotencyKey is 128 random bits.
func newIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// call is one API call.
type call struct {
	method, path string
	query        url.Values
	body         any               // JSON-encoded when not nil
	idempotent   bool              // send an Idempotency-Key
	header       map[string]string // extra headers (Lease-Token, If-None-Match)
}

// maxAnswer bounds the bytes read from one answer.
const maxAnswer = 256 << 20

// do runs k with bounded retries and decodes a 2xx answer into out (a
// *[]byte receives the raw body). A non-2xx answer other than 304 is a
// *Error. The returned response's body is already read and closed.
func (c *Client) do(ctx context.Context, k call, out any) (*http.Response, error) {
	if c.baseErr != nil {
		return nil, c.baseErr
	}
	var body []byte
	if k.body != nil {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(k.body); err != nil {
			return nil, fmt.Errorf("promptd: encoding the request: %w", err)
		}
		body = buf.Bytes()
	}
	var key string
	if k.idempotent {
		if key, _ = ctx.Value(idemKeyCtx{}).(string); key == "" {
			key = newIdempotencyKey()
		}
	}
	safe := k.method == http.MethodGet || k.method == http.MethodHead || key != ""
	for attempt := 0; ; attempt++ {
		resp, raw, err := c.attempt(ctx, k, body, key)
		if err != nil {
			if ctx.Err() == nil && attempt < c.retries && (safe || notConnected(err)) {
				if werr := c.sleep(ctx, backoff(attempt, c.maxWait)); werr != nil {
					return nil, err
				}
				continue
			}
			return nil, fmt.Errorf("promptd: %s %s: %w", k.method, k.path, err)
		}
		if resp.StatusCode == http.StatusNotModified || resp.StatusCode < 300 {
			if out != nil && resp.StatusCode != http.StatusNotModified && resp.StatusCode != http.StatusNoContent {
				if err := decodeInto(raw, out); err != nil {
					return resp, fmt.Errorf("promptd: %s %s: decoding the answer: %w", k.method, k.path, err)
				}
			}
			return resp, nil
		}
		p := problemFrom(resp, raw)
		if resp.StatusCode == http.StatusServiceUnavailable && p.RetryAfter > 0 && attempt < c.retries {
			if werr := c.sleep(ctx, min(p.RetryAfter, c.maxWait)); werr == nil {
				continue
			}
		}
		return resp, p
	}
}

func (c *Client) attempt(ctx context.Context, k call, body []byte, key string) (*http.Response, []byte, error) {
	u := c.base + k.path
	if len(k.query) > 0 {
		u += "?" + k.query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	ctx, span := startSpan(ctx, k.method, k.path)
	defer span.End()
	req, err := http.NewRequestWithContext(ctx, k.method, u, rd)
	if err != nil {
		return nil, nil, err
	}
	inject(ctx, req.Header)
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	for h, v := range k.header {
		req.Header.Set(h, v)
	}
	resp, err := c.hc.Do(req)
	endSpan(span, resp, err)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, nil, fmt.Errorf("reading the answer: %w", err)
	}
	return resp, raw, nil
}

func decodeInto(raw []byte, out any) error {
	if b, ok := out.(*[]byte); ok {
		*b = raw
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(out)
}

// notConnected reports a transport error that happened before the request
// could reach promptd (dial refused, DNS), which is safe to retry for any
// method.
func notConnected(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// backoff is the wait before retry n: 100 ms doubling, with jitter.
func backoff(n int, limit time.Duration) time.Duration {
	d := 100 * time.Millisecond << min(n, 6)
	d = d/2 + mrand.N(d/2+1)
	return min(d, limit)
}

func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Unreachable reports whether err means promptd could not be asked or
// could not answer: a transport error, or a 5xx or 429 answer. Callers
// that hold a last good value keep using it on such errors.
func Unreachable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Temporary()
	}
	return true
}

// seg escapes one path segment.
func seg(s string) string { return url.PathEscape(s) }

// Do calls any route with the client's token, retries and problem
// decoding: body (nil for none) is sent as JSON, a 2xx answer is decoded
// into out (nil to drop it; a *[]byte gets the raw bytes). It is for
// routes this package does not wrap yet.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	_, err := c.do(ctx, call{method: method, path: path, body: body}, out)
	return err
}
