package main

import (
	"bytes"
	"context"
	"errors"
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
