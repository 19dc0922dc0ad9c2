package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestLoad_countsSuccessesAndErrors_percentilesOrdered(t *testing.T) {
	r := load(context.Background(), "x", 4, 200*time.Millisecond, func(_ context.Context, w, i int) error {
		time.Sleep(time.Duration(1+i%3) * time.Millisecond)
		if i%5 == 4 {
			return errors.New("boom")
		}
		return nil
	})
	if r.ops == 0 || r.errors == 0 || r.p50 <= 0 || r.p99 < r.p50 || r.rate <= 0 {
		t.Fatalf("result = %+v", r)
	}
	if ratio := float64(r.errors) / float64(r.ops+r.errors); ratio < 0.1 || ratio > 0.3 {
		t.Fatalf("error share %.2f, want about 0.2", ratio)
	}
}

func TestRun_requiresTokensAndKnownScenarios(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), nil, &out); err == nil || !strings.Contains(err.Error(), "token") {
		t.Fatalf("no tokens: %v", err)
	}
	err := run(context.Background(), []string{"-admin-token", "a", "-runtime-token", "r", "-scenario", "nope"}, &out)
	if err == nil || !strings.Contains(err.Error(), "unknown scenario") {
		t.Fatalf("unknown scenario: %v", err)
	}
}

func TestTable_printsRatiosAgainstTheReference(t *testing.T) {
	tb := &table{}
	tb.add(result{name: "ours", ops: 10, rate: 50, unit: "req/s"}, result{name: "ref", ops: 20, rate: 100, unit: "req/s"}, "target")
	var out bytes.Buffer
	tb.print(&out)
	if !strings.Contains(out.String(), "| ours | 10 | 0 | 50 req/s |") || !strings.Contains(out.String(), "0.50x") {
		t.Fatalf("table:\n%s", out.String())
	}
}

// loadPair runs both sides in alternating slices (b first), continues
// each worker's call index across slices, and lets calls in flight at
// the end of a slice finish and count.
func TestLoadPair_alternatesSlicesAndFinishesCallsInFlight(t *testing.T) {
	var mu sync.Mutex
	var order []string
	var inA, inB atomic.Int32
	seen := map[int]bool{}
	fn := func(name string, in, other *atomic.Int32) func(context.Context, int, int) error {
		return func(ctx context.Context, w, i int) error {
			if other.Load() != 0 {
				t.Errorf("%s ran while the other side was running", name)
			}
			in.Add(1)
			defer in.Add(-1)
			mu.Lock()
			if len(order) == 0 || order[len(order)-1] != name {
				order = append(order, name)
			}
			if name == "a" && w == 0 {
				if seen[i] {
					t.Errorf("worker 0 of a saw i=%d twice", i)
				}
				seen[i] = true
			}
			mu.Unlock()
			time.Sleep(15 * time.Millisecond) // outlasts the end of its slice
			return ctx.Err()
		}
	}
	a, b := loadPair(context.Background(), 3, 200*time.Millisecond, 4, named{"a", fn("a", &inA, &inB)}, named{"b", fn("b", &inB, &inA)})
	if got := strings.Join(order, ""); got != "babab" {
		t.Fatalf("order %s, want b a, a b, b a, a b (babab)", got)
	}
	if a.ops == 0 || b.ops == 0 || a.errors != 0 || b.errors != 0 || a.name != "a" || b.name != "b" {
		t.Fatalf("a %+v, b %+v", a, b)
	}
	// Each side runs the whole duration, in 4 slices, each slice
	// extended by the calls in flight at its end (15ms at most).
	if a.elapsed < 200*time.Millisecond || a.elapsed > 200*time.Millisecond+4*50*time.Millisecond {
		t.Fatalf("a ran %v in its slices, want 200ms and the calls in flight", a.elapsed)
	}
}

// The CPU meter reads promptd's process_cpu_seconds_total, and a result
// measured with it shows CPU per operation.
func TestCPUMeter_readsPromptdsCPUFromMetrics(t *testing.T) {
	var cpu atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer m" {
			w.WriteHeader(401)
			return
		}
		fmt.Fprintf(w, "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %.2f\nother 1\n", float64(cpu.Add(250))/1000)
	}))
	defer srv.Close()
	m := cpuMeter{metricsURLs: []string{srv.URL}, token: "m"}
	if _, server, ok := m.read(context.Background()); !ok || server != 250*time.Millisecond {
		t.Fatalf("server CPU %v %v", server, ok)
	}
	if _, _, ok := (cpuMeter{metricsURLs: []string{srv.URL}}).read(context.Background()); ok {
		t.Fatal("read without the token")
	}
	old := meter
	meter = m
	defer func() { meter = old }()
	r := load(context.Background(), "x", 2, 50*time.Millisecond, func(context.Context, int, int) error {
		time.Sleep(time.Millisecond)
		return nil
	})
	if r.cpu <= 0 {
		t.Fatalf("no CPU per op: %+v", r)
	}
	tb := &table{}
	tb.add(r, result{}, "")
	var out bytes.Buffer
	tb.print(&out)
	if !strings.Contains(out.String(), "CPU µs/op") {
		t.Fatalf("table:\n%s", out.String())
	}
}

// The own-process reference serves the file's bytes and its metrics, and
// stops when its stdin closes.
func TestServeBare_servesBytesUntilStdinCloses(t *testing.T) {
	f := t.TempDir() + "/body"
	if err := os.WriteFile(f, []byte(`{"x":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- serveBare(f, inR, outW) }()
	addr, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + strings.TrimSpace(addr)
	if b, err := fetch(context.Background(), base+"/prompt", ""); err != nil || string(b) != `{"x":1}` {
		t.Fatalf("/prompt: %q %v", b, err)
	}
	if _, ok := serverCPU(context.Background(), base+"/metrics", ""); !ok {
		t.Fatal("no process_cpu_seconds_total")
	}
	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still serving after stdin closed")
	}
}
