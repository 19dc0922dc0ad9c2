// Command benchtable reads `go test -bench` output of BenchmarkLock (see
// ../../locks_bench_test.go) on stdin and prints a markdown table: per
// implementation, key mode and goroutine count the cycles/s, p50 and p99
// acquire latency, the cycles/s ratio against redislock and against the
// SET NX + DEL floor for the same keys and goroutines, the client's and
// redis-server's CPU time per cycle, and allocations per cycle. Results of
// BenchmarkLockPaired get a second table: promptd's and redislock's
// cycles/s and their ratio when they alternate within one benchmark. With
// -count > 1 (or several rounds) each cell is the median of the runs.
//
//	go test -run '^$' -bench . ./... | go run ./cmd/benchtable
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// row is one benchmark configuration.
type row struct {
	impl, keys string
	g          int
	values     map[string][]float64 // unit -> one value per run
}

func (r *row) median(unit string) (float64, bool) {
	v := slices.Clone(r.values[unit])
	if len(v) == 0 {
		return 0, false
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2], true
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2, true
}

type key struct {
	impl, keys string
	g          int
}

func main() {
	baseline := flag.String("baseline", "redislock", "implementation of the first ratio column")
	floor := flag.String("floor", "floor", "implementation of the second ratio column")
	flag.Parse()
	if err := run(os.Stdin, os.Stdout, *baseline, *floor); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer, baseline, floor string) error {
	rows := map[key]*row{}
	var order []key
	paired := map[int]*row{} // BenchmarkLockPaired/g=N
	r := benchfmt.NewReader(in, "stdin")
	for r.Scan() {
		res, ok := r.Result().(*benchfmt.Result)
		if !ok {
			continue // unit metadata or a syntax error (other output)
		}
		var rw *row
		if k, ok := parseName(res.Name); ok {
			rw = rows[k]
			if rw == nil {
				rw = &row{impl: k.impl, keys: k.keys, g: k.g, values: map[string][]float64{}}
				rows[k] = rw
				order = append(order, k)
			}
		} else if g, ok := parsePaired(res.Name); ok {
			rw = paired[g]
			if rw == nil {
				rw = &row{g: g, values: map[string][]float64{}}
				paired[g] = rw
			}
		} else {
			continue
		}
		for _, v := range res.Values {
			unit, val := v.Unit, v.Value
			if v.OrigUnit != "" {
				unit, val = v.OrigUnit, v.OrigValue
			}
			rw.values[unit] = append(rw.values[unit], val)
		}
	}
	if err := r.Err(); err != nil {
		return err
	}
	if len(rows) == 0 && len(paired) == 0 {
		return fmt.Errorf("no BenchmarkLock/impl=…/keys=…/g=… or BenchmarkLockPaired/g=… results on stdin")
	}

	implRank := map[string]int{}
	for _, k := range order {
		if _, ok := implRank[k.impl]; !ok {
			implRank[k.impl] = len(implRank)
		}
	}
	keysRank := func(s string) int {
		if s == "distinct" {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(order, func(a, b key) int {
		if d := keysRank(a.keys) - keysRank(b.keys); d != 0 {
			return d
		}
		if d := a.g - b.g; d != 0 {
			return d
		}
		return implRank[a.impl] - implRank[b.impl]
	})

	var w bytes.Buffer
	if len(rows) > 0 {
		writeMain(&w, rows, order, baseline, floor)
	}
	if len(paired) > 0 {
		if len(rows) > 0 {
			w.WriteString("\n")
		}
		writePaired(&w, paired)
	}
	_, err := out.Write(w.Bytes())
	return err
}

func writeMain(w *bytes.Buffer, rows map[key]*row, order []key, baseline, floor string) {
	fmt.Fprintf(w, "| impl | keys | goroutines | cycles/s | p50 µs | p99 µs | vs %s | vs %s | client CPU µs/cycle | Redis CPU µs/cycle | allocs/cycle |\n", baseline, floor)
	fmt.Fprintf(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, k := range order {
		rw := rows[k]
		cps, _ := rw.median("cycles/s")
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			rw.impl, rw.keys, rw.g,
			num(rw.median("cycles/s")), num(rw.median("p50-us")), num(rw.median("p99-us")),
			ratio(cps, rows[key{baseline, k.keys, k.g}]),
			ratio(cps, rows[key{floor, k.keys, k.g}]),
			num(rw.median("go-cpu-us/op")), num(rw.median("redis-cpu-us/op")),
			integer(rw.median("allocs/op")))
	}
	if n := runs(rows); n > 1 {
		fmt.Fprintf(w, "\nMedians of %d runs.\n", n)
	}
}

// writePaired prints BenchmarkLockPaired: promptd and redislock alternating
// in short slices of one benchmark, so both ran on the same machine state.
func writePaired(w *bytes.Buffer, paired map[int]*row) {
	gs := make([]int, 0, len(paired))
	for g := range paired {
		gs = append(gs, g)
	}
	slices.Sort(gs)
	fmt.Fprintf(w, "| paired, distinct keys | goroutines | promptd cycles/s | redislock cycles/s | promptd ÷ redislock |\n")
	fmt.Fprintf(w, "|---|---:|---:|---:|---:|\n")
	n := 0
	for _, g := range gs {
		rw := paired[g]
		rt, ok := rw.median("promptd/redislock")
		r := "–"
		if ok {
			r = strconv.FormatFloat(rt, 'f', 2, 64) + "×"
		}
		fmt.Fprintf(w, "| promptd, redislock | %d | %s | %s | %s |\n", g,
			num(rw.median("promptd-cycles/s")), num(rw.median("redislock-cycles/s")), r)
		n = max(n, len(rw.values["promptd/redislock"]))
	}
	if n > 1 {
		fmt.Fprintf(w, "\nMedians of %d runs (the ratio: median of the runs' ratios).\n", n)
	}
}

// parseName splits BenchmarkLock/impl=X/keys=Y/g=N[-P].
func parseName(n benchfmt.Name) (key, bool) {
	base, parts := n.Parts()
	// benchfmt drops the "Benchmark" prefix; accept the name either way.
	if b := strings.TrimPrefix(string(base), "Benchmark"); b != "Lock" {
		return key{}, false
	}
	var k key
	for _, p := range parts {
		s := string(p)
		if !strings.HasPrefix(s, "/") {
			continue // -GOMAXPROCS
		}
		name, val, ok := strings.Cut(s[1:], "=")
		if !ok {
			continue
		}
		switch name {
		case "impl":
			k.impl = val
		case "keys":
			k.keys = val
		case "g":
			g, err := strconv.Atoi(val)
			if err != nil {
				return key{}, false
			}
			k.g = g
		}
	}
	return k, k.impl != "" && k.keys != "" && k.g > 0
}

// parsePaired reads BenchmarkLockPaired/g=N[-P].
func parsePaired(n benchfmt.Name) (int, bool) {
	base, parts := n.Parts()
	if b := strings.TrimPrefix(string(base), "Benchmark"); b != "LockPaired" {
		return 0, false
	}
	for _, p := range parts {
		if v, ok := strings.CutPrefix(string(p), "/g="); ok {
			g, err := strconv.Atoi(v)
			return g, err == nil && g > 0
		}
	}
	return 0, false
}

func runs(rows map[key]*row) int {
	n := 0
	for _, r := range rows {
		n = max(n, len(r.values["cycles/s"]))
	}
	return n
}

func num(v float64, ok bool) string {
	switch {
	case !ok:
		return "–"
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

func integer(v float64, ok bool) string {
	if !ok {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

func ratio(cps float64, ref *row) string {
	if ref == nil {
		return "–"
	}
	rc, ok := ref.median("cycles/s")
	if !ok || rc == 0 {
		return "–"
	}
	return strconv.FormatFloat(cps/rc, 'f', 2, 64) + "×"
}
