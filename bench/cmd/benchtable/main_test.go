package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/promptd/promptd/bench
cpu: AMD EPYC
BenchmarkLock/impl=promptd/keys=distinct/g=16-2   	   100	  50000 ns/op	 20000 cycles/s	 40.0 go-cpu-us/op	 300 p50-us	 900 p99-us	 30.0 redis-cpu-us/op	 3376 B/op	 67 allocs/op
BenchmarkLock/impl=promptd/keys=distinct/g=16-2   	   100	  50000 ns/op	 24000 cycles/s	 40.0 go-cpu-us/op	 200 p50-us	 700 p99-us	 30.0 redis-cpu-us/op	 3376 B/op	 67 allocs/op
BenchmarkLock/impl=promptd/keys=distinct/g=16-2   	   100	  50000 ns/op	 22000 cycles/s	 40.0 go-cpu-us/op	 250 p50-us	 800 p99-us	 30.0 redis-cpu-us/op	 3376 B/op	 67 allocs/op
BenchmarkLock/impl=redislock/keys=distinct/g=16-2 	   100	  25000 ns/op	 40000 cycles/s	 20.0 go-cpu-us/op	 150 p50-us	 500 p99-us	 10.0 redis-cpu-us/op	 1248 B/op	 33 allocs/op
BenchmarkLock/impl=floor/keys=distinct/g=16-2     	   100	  20000 ns/op	 44000 cycles/s	 15.0 go-cpu-us/op	 100 p50-us	 400 p99-us	 8.00 redis-cpu-us/op	 482 B/op	 14 allocs/op
BenchmarkLock/impl=floor/keys=contended/g=1-2     	   100	  20000 ns/op	 9000 cycles/s	 15.0 go-cpu-us/op	 60.5 p50-us	 120 p99-us	 8.00 redis-cpu-us/op	 482 B/op	 14 allocs/op
BenchmarkOther-2 	   100	  20000 ns/op
PASS
ok  	github.com/promptd/promptd/bench	1.0s
`

func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(strings.NewReader(sample), &out, "redislock", "floor"); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		// medians of the three promptd runs; 22000/40000 and 22000/44000
		"| promptd | distinct | 16 | 22000 | 250 | 800 | 0.55× | 0.50× | 40.0 | 30.0 | 67 |",
		"| redislock | distinct | 16 | 40000 | 150 | 500 | 1.00× | 0.91× | 20.0 | 10.0 | 33 |",
		"| floor | contended | 1 | 9000 | 60.5 | 120 | – | 1.00× | 15.0 | 8.00 | 14 |",
		"Medians of 3 runs.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	// distinct before contended
	if strings.Index(got, "| floor | contended") < strings.Index(got, "| floor | distinct") {
		t.Errorf("contended rows before distinct ones:\n%s", got)
	}
	if strings.Contains(got, "Other") {
		t.Errorf("other benchmarks in the table:\n%s", got)
	}
}

func TestRunEmpty(t *testing.T) {
	var out strings.Builder
	if err := run(strings.NewReader("PASS\n"), &out, "redislock", "floor"); err == nil {
		t.Fatal("no error for input without results")
	}
}

func TestRun_paired(t *testing.T) {
	in := sample + `BenchmarkLockPaired/g=1-2  	 100	 120000 ns/op	 14000 promptd-cycles/s	 0.880 promptd/redislock	 16000 redislock-cycles/s
BenchmarkLockPaired/g=1-2  	 100	 120000 ns/op	 15000 promptd-cycles/s	 0.900 promptd/redislock	 16500 redislock-cycles/s
BenchmarkLockPaired/g=1-2  	 100	 120000 ns/op	 9000 promptd-cycles/s	 0.940 promptd/redislock	 9500 redislock-cycles/s
BenchmarkLockPaired/g=16-2 	 100	 50000 ns/op	 20000 promptd-cycles/s	 0.950 promptd/redislock	 21000 redislock-cycles/s
`
	var out strings.Builder
	if err := run(strings.NewReader(in), &out, "redislock", "floor"); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"| promptd | distinct | 16 | 22000 |", // the main table is still there
		"| promptd, redislock | 1 | 14000 | 16000 | 0.90× |",
		"| promptd, redislock | 16 | 20000 | 21000 | 0.95× |",
		"Medians of 3 runs (the ratio: median of the runs' ratios).",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if strings.Index(got, "| promptd, redislock | 1 |") > strings.Index(got, "| promptd, redislock | 16 |") {
		t.Errorf("paired rows out of goroutine order:\n%s", got)
	}

	out.Reset()
	onlyPaired := "BenchmarkLockPaired/g=1-2 \t 100\t 1 ns/op\t 1 promptd-cycles/s\t 0.5 promptd/redislock\t 2 redislock-cycles/s\n"
	if err := run(strings.NewReader(onlyPaired), &out, "redislock", "floor"); err != nil || !strings.Contains(out.String(), "| promptd, redislock | 1 | 1.00 | 2.00 | 0.50× |") {
		t.Errorf("paired results alone: %v\n%s", err, out.String())
	}
}
