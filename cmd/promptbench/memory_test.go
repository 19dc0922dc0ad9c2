package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestStatuses_of_countsTheNamedAndTheRest(t *testing.T) {
	var s statuses
	for _, a := range []answer{{code: 304}, {code: 304}, {code: 429, problem: "quota_exceeded"}, {}, {code: 500}, {code: 503, problem: "overloaded"}} {
		s.add(a)
	}
	if got, want := s.of(304, 200, 429, 503), "304: 2, 200: 0, 429: 1, 503: 1 (overloaded 1), other: 2"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestRatio_ofPeaks_isUnknownWithoutBoth(t *testing.T) {
	a, b := memPeak{peak: 150 << 20, ok: true}, memPeak{peak: 100 << 20, ok: true}
	if got := ratio(a, b); got != "1.50x" {
		t.Fatalf("ratio = %q", got)
	}
	if got := ratio(a, memPeak{}); got != "-" {
		t.Fatalf("ratio without a reading = %q", got)
	}
}

func TestPct_ofLatencies(t *testing.T) {
	var lat []time.Duration
	for i := 100; i >= 1; i-- {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	p50, p99 := pct(lat)
	if p50 != 51*time.Millisecond || p99 != 100*time.Millisecond {
		t.Fatalf("p50 %s p99 %s", p50, p99)
	}
	if p50, p99 := pct(nil); p50 != 0 || p99 != 0 {
		t.Fatal("no latencies gave a percentile")
	}
}

func TestMemReport_printsAMarkdownRowPerMeasure(t *testing.T) {
	var r memReport
	r.add("a: peak RSS", memPeak{start: 10 << 20, peak: 20 << 20, ok: true}.String(), "reference")
	var out bytes.Buffer
	r.print(&out)
	if want := "| a: peak RSS | 20 MiB (10 at its start) | reference |\n"; !strings.HasSuffix(out.String(), want) {
		t.Fatalf("got:\n%s", out.String())
	}
}

func TestRunMemory_tinySizes_areRefused(t *testing.T) {
	err := runMemory(context.Background(), []string{"-admin-token", "x", "-config-bytes", "10"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "must be positive") {
		t.Fatalf("err = %v", err)
	}
}
