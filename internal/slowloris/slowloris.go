// Package slowloris opens many slow or idle HTTP connections to a server
// and watches whether it stays responsive while they are open: how long a
// fresh GET /healthz takes, how much memory the server holds, and how long
// until the server closes each connection. It is the load of
// `promptbench slowloris` and of promptd's own test of its timeouts.
package slowloris

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Kind is what a connection sends before it goes silent.
type Kind int

// The kinds, opened in turn.
const (
	// Idle sends nothing at all.
	Idle Kind = iota
	// Partial sends a request line and one header, never the blank line
	// that ends the headers.
	Partial
	// Headers sends complete headers announcing a 100-byte body, and no
	// body.
	Headers
	// Body sends complete headers and one byte of the 100-byte body.
	Body
	kinds
)

func (k Kind) String() string {
	return [...]string{"idle", "partial-headers", "headers", "headers+1-body-byte"}[k]
}

// Options configure a Run.
type Options struct {
	// Addr is the server's host:port.
	Addr string
	// Conns is how many slow connections to open, the kinds in turn.
	Conns int
	// Path is the target of the slow requests; "" means /v1/sessions.
	Path string
	// ProbeEvery is the interval of the /healthz probes; zero means 100ms.
	ProbeEvery time.Duration
	// Wait bounds how long Run waits for the server to close every
	// connection after they are all open; zero means 2 minutes.
	Wait time.Duration
	// PID is the server's process id, whose VmRSS is sampled with every
	// probe; zero: not sampled.
	PID int
	// Dialers is how many connections are being opened at once; zero
	// means 256.
	Dialers int
	// Rate paces the opening at this many connections per second; zero:
	// as fast as the dialers go.
	Rate int
}

// Result is what a Run saw.
type Result struct {
	Opened, DialErrors int
	// PeakOpen is the most connections of this Run open at once.
	PeakOpen int
	// OpenTook is how long opening every connection took.
	OpenTook time.Duration
	// Probes counts the /healthz probes, ProbeErrors those that failed or
	// did not answer 200, ProbeMax the slowest (failures count with the
	// time they took).
	Probes, ProbeErrors int
	ProbeMax            time.Duration
	// ProbeMaxAt is when the slowest probe started, from Run's start.
	ProbeMaxAt time.Duration
	// ProbeMaxHeld is the slowest of the probes started once every
	// connection was open: the server holding them, not accepting them.
	ProbeMaxHeld time.Duration
	// RSSStartKB is the server's VmRSS before the first connection,
	// RSSMaxKB the highest seen; zero without Options.PID.
	RSSStartKB, RSSMaxKB int64
	// ClosedMax is, by kind, the longest a connection stayed open
	// (opened to closed by the server); StillOpen counts those the server
	// had not closed when Run stopped waiting.
	ClosedMax [kinds]time.Duration
	StillOpen int
}

// Closed reports whether the server closed every connection it accepted.
func (r Result) Closed() bool { return r.StillOpen == 0 }

// String is the report promptbench prints.
func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "connections opened   %d (dial errors %d) in %s, at most %d open at once\n", r.Opened, r.DialErrors,
		r.OpenTook.Round(time.Millisecond), r.PeakOpen)
	fmt.Fprintf(&b, "/healthz probes      %d, failed %d, max latency %s (at %s)\n", r.Probes, r.ProbeErrors,
		r.ProbeMax.Round(time.Millisecond), r.ProbeMaxAt.Round(time.Millisecond))
	fmt.Fprintf(&b, "  once all were open  max latency %s\n", r.ProbeMaxHeld.Round(time.Millisecond))
	if r.RSSMaxKB > 0 {
		fmt.Fprintf(&b, "server RSS           %.1f MiB before, %.1f MiB max\n", float64(r.RSSStartKB)/1024, float64(r.RSSMaxKB)/1024)
	}
	for k := Kind(0); k < kinds; k++ {
		fmt.Fprintf(&b, "closed by server     %-20s within %s\n", k, r.ClosedMax[k].Round(time.Millisecond))
	}
	fmt.Fprintf(&b, "still open at end    %d\n", r.StillOpen)
	return b.String()
}

// Run opens the connections, probes /healthz every ProbeEvery from before
// the first connection until the server has closed them all (or Wait has
// passed after the last was opened), and reports. It closes whatever is
// left open before it returns.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.Conns <= 0 || o.Addr == "" {
		return Result{}, errors.New("slowloris: Addr and a positive Conns are required")
	}
	if o.Path == "" {
		o.Path = "/v1/sessions"
	}
	if o.ProbeEvery <= 0 {
		o.ProbeEvery = 100 * time.Millisecond
	}
	if o.Wait <= 0 {
		o.Wait = 2 * time.Minute
	}
	if o.Dialers <= 0 {
		o.Dialers = 256
	}
	var r Result
	if o.PID > 0 {
		kb, err := rssKB(o.PID)
		if err != nil {
			return r, err
		}
		r.RSSStartKB, r.RSSMaxKB = kb, kb
	}

	p := &prober{url: "http://" + o.Addr + "/healthz", pid: o.PID, res: &r, counting: true, start: time.Now()}
	probeCtx, stopProbes := context.WithCancel(ctx)
	probed := make(chan struct{})
	go func() { defer close(probed); p.run(probeCtx, o.ProbeEvery) }()

	var (
		open  sync.WaitGroup // one per connection until the server closes it
		mu    sync.Mutex
		conns []net.Conn
		next  atomic.Int64
		dials sync.WaitGroup
	)
	var paced <-chan time.Time
	if o.Rate > 0 {
		tick := time.NewTicker(time.Second / time.Duration(o.Rate))
		defer tick.Stop()
		paced = tick.C
	}
	start := time.Now()
	for range o.Dialers {
		dials.Go(func() {
			d := net.Dialer{Timeout: 10 * time.Second}
			for {
				i := next.Add(1) - 1
				if i >= int64(o.Conns) || ctx.Err() != nil {
					return
				}
				k := Kind(i % int64(kinds))
				if paced != nil {
					select {
					case <-paced:
					case <-ctx.Done():
						return
					}
				}
				c, err := d.DialContext(ctx, "tcp", o.Addr)
				if err == nil {
					_, err = io.WriteString(c, preamble(k, o.Path, o.Addr))
				}
				mu.Lock()
				if err != nil {
					r.DialErrors++
					if c != nil {
						_ = c.Close()
					}
					mu.Unlock()
					continue
				}
				conns = append(conns, c)
				r.Opened++
				r.PeakOpen = max(r.PeakOpen, r.Opened-p.closedSoFar())
				mu.Unlock()
				open.Add(1)
				go func() {
					defer open.Done()
					opened := time.Now()
					_, _ = io.Copy(io.Discard, c) // returns when the server closes (or Run does)
					p.closed(k, time.Since(opened))
				}()
			}
		})
	}
	dials.Wait()
	r.OpenTook = time.Since(start)
	p.allOpen()

	all := make(chan struct{})
	go func() { open.Wait(); close(all) }()
	select {
	case <-all:
	case <-time.After(o.Wait):
	case <-ctx.Done():
	}
	p.stopCounting()
	mu.Lock()
	for _, c := range conns {
		_ = c.Close()
	}
	mu.Unlock()
	<-all
	stopProbes()
	<-probed
	p.mu.Lock()
	defer p.mu.Unlock()
	r.ClosedMax = p.closedMax
	r.StillOpen = r.Opened - p.closedCount
	return r, ctx.Err()
}

// preamble is what a connection of kind k sends.
func preamble(k Kind, path, host string) string {
	head := "POST " + path + " HTTP/1.1\r\nHost: " + host + "\r\n"
	switch k {
	case Partial:
		return head
	case Headers:
		return head + "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
	case Body:
		return head + "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
	}
	return ""
}

// prober probes /healthz and counts the connections the server closed.
type prober struct {
	url   string
	pid   int
	start time.Time

	mu          sync.Mutex
	res         *Result
	counting    bool // false once Run stopped waiting: later closes are its own
	held        bool // every connection is open
	closedMax   [kinds]time.Duration
	closedCount int
}

func (p *prober) closed(k Kind, open time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.counting {
		p.closedCount++
		p.closedMax[k] = max(p.closedMax[k], open)
	}
}

func (p *prober) closedSoFar() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closedCount
}

func (p *prober) allOpen() {
	p.mu.Lock()
	p.held = true
	p.mu.Unlock()
}

func (p *prober) stopCounting() {
	p.mu.Lock()
	p.counting = false
	p.mu.Unlock()
}

func (p *prober) run(ctx context.Context, every time.Duration) {
	// A new connection for every probe: the question is whether a new
	// client gets in, not whether a kept-alive one still works.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		p.mu.Lock()
		held := p.held
		p.mu.Unlock()
		t0 := time.Now()
		res, err := client.Get(p.url)
		ok := err == nil && res.StatusCode == http.StatusOK
		if err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
		}
		took := time.Since(t0)
		var kb int64
		if p.pid > 0 {
			kb, _ = rssKB(p.pid)
		}
		p.mu.Lock()
		p.res.Probes++
		if !ok {
			p.res.ProbeErrors++
		}
		if took > p.res.ProbeMax {
			p.res.ProbeMax, p.res.ProbeMaxAt = took, t0.Sub(p.start)
		}
		if held {
			p.res.ProbeMaxHeld = max(p.res.ProbeMaxHeld, took)
		}
		p.res.RSSMaxKB = max(p.res.RSSMaxKB, kb)
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// rssKB reads VmRSS (kB) of process pid from /proc.
func rssKB(pid int) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, fmt.Errorf("slowloris: server RSS: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("slowloris: no VmRSS in /proc/%d/status", pid)
}
