package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// runMemory is `promptbench memory`: peak resident memory of promptd
// while it serves concurrent heavy requests, each figure beside a same-run
// reference (the same requests from fewer clients, the same read without
// the flood), so that what it shows is a ratio, not a machine's speed:
//
//	bundle   20 agents x 900 KB configs in prod; 4, then 40 clients loop
//	         GET /v1/bundle with the bundle's ETag in If-None-Match (304s)
//	records  one board of 500 records x 50 KB payloads; 1, then 10 clients
//	         loop GET /v1/boards/{b}/records?limit=500
//	flood    one runtime token loops full bundles from 16 connections while
//	         an admin reads one env pointer, timed; the same read alone
//
// Each phase's peak is promptd's VmHWM, reset (clear_refs) when the phase
// starts. With -promptd it starts that binary itself, embedded (SQLite in
// a temporary data directory), and restarts it before each phase, so that
// every phase starts from a process of the same size; with -pid it
// measures a promptd that is already running at -url.
func runMemory(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("promptbench memory", flag.ContinueOnError)
	var m memBench
	bin := fs.String("promptd", "", "promptd binary to start (embedded, in a temporary data directory); else -url, -admin-token and -pid")
	fs.StringVar(&m.url, "url", "http://127.0.0.1:8080", "promptd base URL (without -promptd)")
	fs.StringVar(&m.admin, "admin-token", os.Getenv("PROMPTD_BENCH_ADMIN_TOKEN"), "an unscoped admin token (without -promptd)")
	fs.IntVar(&m.pid, "pid", 0, "promptd's process id, for its VmRSS and VmHWM (without -promptd; 0: not sampled)")
	fs.DurationVar(&m.duration, "duration", 5*time.Second, "length of each timed phase")
	fs.IntVar(&m.agents, "agents", 20, "agents in the bundle")
	fs.IntVar(&m.configBytes, "config-bytes", 900_000, "bytes of each agent's config")
	fs.IntVar(&m.fewClients, "few", 4, "bundle clients of the reference phase")
	fs.IntVar(&m.manyClients, "many", 40, "bundle clients of the measured phase")
	fs.IntVar(&m.records, "records", 500, "records on the board (one page of limit=500)")
	fs.IntVar(&m.payloadBytes, "payload-bytes", 50_000, "bytes of each record's payload (promptd's limit: 256 KiB)")
	fs.IntVar(&m.listClients, "list-clients", 10, "record-list clients of the measured phase (the reference: 1)")
	fs.IntVar(&m.flood, "flood", 16, "connections of the flooding token")
	fs.StringVar(&m.prefix, "prefix", fmt.Sprintf("m%d", time.Now().Unix()%100000), "prefix of the agents, board and tokens it creates")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if m.agents < 1 || m.configBytes < 100 || m.records < 1 || m.payloadBytes < 16 || m.fewClients < 1 || m.manyClients < 1 ||
		m.listClients < 1 || m.flood < 1 || m.duration <= 0 {
		return fmt.Errorf("sizes, client counts and -duration must be positive (-config-bytes at least 100, -payload-bytes 16)")
	}
	if *bin != "" {
		p, err := startPromptd(ctx, *bin)
		if err != nil {
			return err
		}
		defer p.stop()
		m.url, m.admin, m.pid, m.restart = p.url, p.admin, p.pid(), func() error {
			if err := p.restart(ctx); err != nil {
				return err
			}
			m.pid = p.pid()
			return nil
		}
	} else if m.admin == "" {
		return fmt.Errorf("-promptd, or -admin-token (with -url and -pid), is required")
	}
	m.url = strings.TrimSuffix(m.url, "/")
	rep := &memReport{}
	for _, step := range []func(context.Context, *memReport) error{m.seed, m.bundlePhases, m.recordPhases, m.floodPhases} {
		if err := step(ctx, rep); err != nil {
			rep.print(out)
			return err
		}
	}
	rep.print(out)
	return nil
}

// memBench is the memory scenario's configuration and what its seeding
// created.
type memBench struct {
	url, admin   string
	pid          int
	restart      func() error // nil: a promptd it did not start
	duration     time.Duration
	agents       int
	configBytes  int
	fewClients   int
	manyClients  int
	records      int
	payloadBytes int
	listClients  int
	flood        int
	prefix       string

	tokens []string // runtime tokens, one per client
	etag   string   // of the whole bundle
}

// memPeak is promptd's resident memory at a phase's start and its peak
// during the phase.
type memPeak struct {
	start, peak int64
	ok          bool
}

// measure runs fn as one phase: promptd restarted when it can be (and
// warmed by warm), its high-water mark reset, fn, then the mark read.
func (m *memBench) measure(ctx context.Context, warm, fn func(context.Context) error) (memPeak, error) {
	if m.restart != nil {
		if err := m.restart(); err != nil {
			return memPeak{}, err
		}
	} else {
		time.Sleep(time.Second)
	}
	if warm != nil {
		if err := warm(ctx); err != nil {
			return memPeak{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	var p memPeak
	if m.pid > 0 {
		at, err := readProcMem(m.pid)
		if err != nil {
			return memPeak{}, err
		}
		if err := resetHWM(m.pid); err != nil {
			return memPeak{}, err
		}
		p.start, p.ok = at.RSS, true
	}
	if err := fn(ctx); err != nil {
		return memPeak{}, err
	}
	if p.ok {
		end, err := readProcMem(m.pid)
		if err != nil {
			return memPeak{}, err
		}
		p.peak = end.HWM
	}
	return p, nil
}

func (p memPeak) String() string {
	if !p.ok {
		return "- (no -pid)"
	}
	return fmt.Sprintf("%.0f MiB (%.0f at its start)", mib(p.peak), mib(p.start))
}

// ratio is a's peak over b's, as "1.23x", or "-" when either is unknown.
func ratio(a, b memPeak) string {
	if !a.ok || !b.ok || b.peak == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", float64(a.peak)/float64(b.peak))
}

// memReport is the scenario's table: one measure a row.
type memReport struct {
	rows [][3]string
}

func (r *memReport) add(measure, value, target string) {
	r.rows = append(r.rows, [3]string{measure, value, target})
}

func (r *memReport) print(w io.Writer) {
	fmt.Fprintln(w, "| measure | value | target |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, row := range r.rows {
		fmt.Fprintf(w, "| %s | %s | %s |\n", row[0], row[1], row[2])
	}
}

// statuses counts the answers of a phase's clients by HTTP status (0: a
// request that failed without one) and, for refusals, problem code.
type statuses struct {
	mu       sync.Mutex
	n        map[int]int
	problems map[int]map[string]int
}

func (s *statuses) add(a answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n, s.problems = map[int]int{}, map[int]map[string]int{}
	}
	s.n[a.code]++
	if a.problem != "" {
		if s.problems[a.code] == nil {
			s.problems[a.code] = map[string]int{}
		}
		s.problems[a.code][a.problem]++
	}
}

// of is the counts of the given statuses and of the rest, with the
// problem codes of a status that had more than one:
// "304: 10, 503: 3 (overloaded 1, unavailable 2), other: 0".
func (s *statuses) of(codes ...int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var parts []string
	rest := 0
	for _, n := range s.n {
		rest += n
	}
	for _, c := range codes {
		part := fmt.Sprintf("%d: %d", c, s.n[c])
		if ps := s.problems[c]; len(ps) > 1 || (len(ps) == 1 && c == 503) {
			var each []string
			for _, p := range slices.Sorted(maps.Keys(ps)) {
				each = append(each, fmt.Sprintf("%s %d", p, ps[p]))
			}
			part += " (" + strings.Join(each, ", ") + ")"
		}
		parts = append(parts, part)
		rest -= s.n[c]
	}
	return strings.Join(append(parts, fmt.Sprintf("other: %d", rest)), ", ")
}

// clients runs fn from n goroutines until d has passed, each in a loop,
// and counts the statuses it returns.
func clients(ctx context.Context, n int, d time.Duration, fn func(ctx context.Context, w int) answer) *statuses {
	var st statuses
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && time.Now().Before(end) {
				st.add(fn(ctx, w))
			}
		}()
	}
	wg.Wait()
	return &st
}

// answer is what hit kept of a response.
type answer struct {
	code    int    // 0: the request failed without a status
	problem string // a refusal's problem code (overloaded, quota_exceeded, unavailable)
	etag    string
	size    int64
}

// hit sends one request and reads its answer to the end without keeping
// the body (but a refusal's problem code).
func hit(ctx context.Context, method, url, token string, hdr ...string) answer {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return answer{}
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := httpClient.Do(req)
	if err != nil {
		return answer{}
	}
	defer res.Body.Close()
	a := answer{code: res.StatusCode, etag: res.Header.Get("ETag")}
	if res.StatusCode >= 400 {
		var p struct{ Code string }
		b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		_ = json.Unmarshal(b, &p)
		a.problem, a.size = p.Code, int64(len(b))
	}
	n, err := io.Copy(io.Discard, res.Body)
	if a.size += n; err != nil {
		return answer{}
	}
	return a
}

// promptdProc is a promptd that promptbench started: embedded, on a
// temporary data directory that outlives its restarts.
type promptdProc struct {
	bin, dir, url, admin, addr string
	cmd                        *exec.Cmd
}

func startPromptd(ctx context.Context, bin string) (*promptdProc, error) {
	dir, err := os.MkdirTemp("", "promptbench-memory-")
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	p := &promptdProc{bin: bin, dir: dir, addr: addr, url: "http://" + addr, admin: fmt.Sprintf("mem-admin-%d", time.Now().UnixNano())}
	if err := p.start(ctx); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

func (p *promptdProc) pid() int { return p.cmd.Process.Pid }

func (p *promptdProc) start(ctx context.Context) error {
	log, err := os.OpenFile(filepath.Join(p.dir, "promptd.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(p.bin)
	for _, kv := range os.Environ() { // none of the caller's promptd settings: the same promptd for before and after
		if !strings.HasPrefix(kv, "PROMPTD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "PROMPTD_ADDR="+p.addr, "PROMPTD_DATA_DIR="+filepath.Join(p.dir, "data"),
		"PROMPTD_TOKENS=bench:admin:"+p.admin, "PROMPTD_LOG_LEVEL=warn")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return err
	}
	p.cmd = cmd
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(50 * time.Millisecond) {
		if hit(ctx, "GET", p.url+"/healthz", "").code == http.StatusOK {
			return nil
		}
	}
	return fmt.Errorf("%s did not answer /healthz within 30 s (log: %s)", p.bin, log.Name())
}

func (p *promptdProc) restart(ctx context.Context) error {
	p.halt()
	return p.start(ctx)
}

// halt ends the process: SIGTERM, then SIGKILL after 10 s.
func (p *promptdProc) halt() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
	p.cmd = nil
}

func (p *promptdProc) stop() {
	p.halt()
	if err := os.RemoveAll(p.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(os.Stderr, "promptbench:", err)
	}
}
