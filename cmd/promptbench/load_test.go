package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
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
