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
}

// load runs fn from conns goroutines until d has passed and collects the
// latency of each successful call.
func load(ctx context.Context, name string, conns int, d time.Duration, fn func(ctx context.Context, worker, i int) error) result {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	lat := make([][]time.Duration, conns)
	errs := make([]int, conns)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < conns; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				t0 := time.Now()
				if err := fn(ctx, w, i); err != nil {
					if ctx.Err() == nil {
						errs[w]++
					}
					continue
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	r := result{name: name, elapsed: time.Since(start), unit: "req/s"}
	var all []time.Duration
	for w := range lat {
		all = append(all, lat[w]...)
		r.errors += errs[w]
	}
	slices.Sort(all)
	r.ops = len(all)
	if len(all) > 0 {
		r.p50, r.p99 = all[len(all)/2], all[len(all)*99/100]
	}
	r.rate = float64(r.ops) / r.elapsed.Seconds()
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

func row(r result, ratio, note string) string {
	return fmt.Sprintf("| %s | %d | %d | %.0f %s | %s | %s | %s | %s |", r.name, r.ops, r.errors, r.rate, r.unit,
		r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), ratio, note)
}

func (t *table) print(w io.Writer) {
	fmt.Fprintln(w, "| scenario | ops | errors | throughput | p50 | p99 | vs reference | note |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
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
