package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// result of one timed run.
type result struct {
	name     string
	ops      int
	errors   int
	elapsed  time.Duration
	p50, p99 time.Duration
	unit     string // "req/s", "rows/s"
	rate     float64
	// cpu is the CPU time of promptbench and promptd per operation (0:
	// promptd's was not read).
	cpu time.Duration
}

// load runs fn from conns goroutines until d has passed and collects the
// latency of each successful call.
func load(ctx context.Context, name string, conns int, d time.Duration, fn func(ctx context.Context, worker, i int) error) result {
	col := newCollector(name, conns)
	col.run(ctx, d, fn)
	return col.result()
}

// loadPair measures a and its reference b in turns: rounds slices of
// d/rounds each, in the order b a, a b, b a, ..., so that a change in the
// machine's speed during the run (other work on shared cores) lands on
// both sides alike instead of on whichever ran second.
func loadPair(ctx context.Context, conns int, d time.Duration, rounds int, a, b named) (result, result) {
	rs := loadTurns(ctx, conns, d, rounds, a, b)
	return rs[0], rs[1]
}

// loadTurns is loadPair for any number of load functions: each round runs
// every one for d/rounds, last to first in even rounds and first to last
// in odd ones.
func loadTurns(ctx context.Context, conns int, d time.Duration, rounds int, fns ...named) []result {
	if rounds < 1 {
		rounds = 1
	}
	cols := make([]*collector, len(fns))
	for i, f := range fns {
		cols[i] = newCollector(f.name, conns)
	}
	slice := d / time.Duration(rounds)
	for r := 0; r < rounds && ctx.Err() == nil; r++ {
		for k := range fns {
			i := k
			if r%2 == 0 {
				i = len(fns) - 1 - k
			}
			cols[i].run(ctx, slice, fns[i].fn)
		}
	}
	out := make([]result, len(fns))
	for i, c := range cols {
		out[i] = c.result()
	}
	return out
}

// named is a load function with its row name.
type named struct {
	name string
	fn   func(ctx context.Context, worker, i int) error
}

// collector accumulates the calls of one load function over one or more
// timed slices.
type collector struct {
	name    string
	lat     [][]time.Duration
	errs    []int
	next    []int // per worker: the i of its next call, continued across slices
	elapsed time.Duration
	cpu     time.Duration // promptbench's and promptd's, during the slices
	cpuOK   bool          // every slice read promptd's
}

func newCollector(name string, conns int) *collector {
	return &collector{name: name, lat: make([][]time.Duration, conns), errs: make([]int, conns), next: make([]int, conns), cpuOK: true}
}

// run calls fn from every worker until d has passed. Calls in flight at
// the end run to completion and count (the slice lasts until the last one
// is done): cancelling them would leave a writer not knowing whether its
// write happened, and the next slice would start with conflicts.
func (c *collector) run(ctx context.Context, d time.Duration, fn func(ctx context.Context, worker, i int) error) {
	var wg sync.WaitGroup
	self0, server0, ok0 := meter.read(ctx)
	start := time.Now()
	end := start.Add(d)
	for w := range c.lat {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ; ctx.Err() == nil && time.Now().Before(end); c.next[w]++ {
				t0 := time.Now()
				if err := fn(ctx, w, c.next[w]); err != nil {
					if ctx.Err() == nil {
						c.errs[w]++
					}
					continue
				}
				c.lat[w] = append(c.lat[w], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	c.elapsed += time.Since(start)
	self1, server1, ok1 := meter.read(ctx)
	c.cpu += self1 - self0 + server1 - server0
	c.cpuOK = c.cpuOK && ok0 && ok1
}

func (c *collector) result() result {
	r := result{name: c.name, elapsed: c.elapsed, unit: "req/s"}
	var all []time.Duration
	for w := range c.lat {
		all = append(all, c.lat[w]...)
		r.errors += c.errs[w]
	}
	slices.Sort(all)
	r.ops = len(all)
	if len(all) > 0 {
		r.p50, r.p99 = all[len(all)/2], all[len(all)*99/100]
	}
	if r.elapsed > 0 {
		r.rate = float64(r.ops) / r.elapsed.Seconds()
	}
	if c.cpuOK && r.ops > 0 {
		r.cpu = c.cpu / time.Duration(r.ops)
	}
	return r
}

// table collects results and prints them as markdown.
type table struct {
	rows []string
}

func (t *table) add(r, ref result, target string) {
	ratio := "-"
	if ref.rate > 0 {
		ratio = fmt.Sprintf("%.2fx", r.rate/ref.rate)
	}
	t.rows = append(t.rows, row(r, ratio, target))
	if ref.name != "" {
		t.rows = append(t.rows, row(ref, "1.00x", "reference"))
	}
}

// also adds a row measured beside ref that is not the scenario's subject.
func (t *table) also(r, ref result, note string) {
	ratio := "-"
	if ref.rate > 0 {
		ratio = fmt.Sprintf("%.2fx", r.rate/ref.rate)
	}
	t.rows = append(t.rows, row(r, ratio, note))
}

func row(r result, ratio, note string) string {
	cpu := "-"
	if r.cpu > 0 {
		cpu = fmt.Sprintf("%.1f", float64(r.cpu.Nanoseconds())/1000)
	}
	return fmt.Sprintf("| %s | %d | %d | %.0f %s | %s | %s | %s | %s | %s |", r.name, r.ops, r.errors, r.rate, r.unit,
		r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), ratio, cpu, note)
}

func (t *table) print(w io.Writer) {
	fmt.Fprintln(w, "| scenario | ops | errors | throughput | p50 | p99 | vs reference | CPU µs/op (promptbench + promptd) | note |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, r := range t.rows {
		fmt.Fprintln(w, r)
	}
}

var httpClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 512}}

// do sends one request and decodes a JSON answer into out (if non-nil).
func do(ctx context.Context, method, url, token string, body any, want int, out any, hdr ...string) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != want {
		return fmt.Errorf("%s %s: %d %s", method, url, res.StatusCode, bytes.TrimSpace(b))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}
