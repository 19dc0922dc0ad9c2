package allocbudget

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
)

// While a measurement runs, every allocation is recorded in the heap
// profile (MemProfileRate 1) with its whole stack (up to the runtime's
// profile stack depth, 128 frames by default), so an allocation can be
// attributed to the request that made it. Outside of one nothing is
// recorded (MemProfileRate 0): a record per object of every setup would
// make each collection and each profile read slower, path after path.
// With -memprofile, the rate is the one of -memprofilerate (set it to 1
// to see every allocation), for the whole run.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.memprofile"); f == nil || f.Value.String() == "" {
		runtime.MemProfileRate = 0
		idleRate = 0
	}
	os.Exit(m.Run())
}

// idleRate is the profile rate outside of measurements.
var idleRate = runtime.MemProfileRate

// markerName is the frame every measured allocation has on its stack.
const markerName = "github.com/promptd/promptd/internal/harness/allocbudget.markedOp"

// markedOp runs f; allocations made below it (on this goroutine, while f
// runs) are the ones a measurement counts.
//
//go:noinline
func markedOp(f func()) { f() }

// iteration is one operation of a hot path: it prepares what the request
// needs (unmeasured) and runs the request's parts through mark (measured).
// It returns an error when the request did not answer as it should.
type iteration func(i int, mark func(func())) error

// result is one measurement.
type result struct {
	Allocs float64 // per op, on the request's goroutine (the budget)
	Bytes  float64 // per op, on the request's goroutine
	// Process is runtime.MemStats.Mallocs per op over the same window:
	// every goroutine's, the background loops' too. Reported, not
	// budgeted: it is what AllocsPerRun would count.
	Process float64
	N       int
	// Unattributed counts allocations, made while measuring, whose stack
	// fills the profile's whole depth without reaching markedOp: a stack
	// cut short, maybe a request's, which the count would miss. It must
	// be 0 (else raise GODEBUG=profstackdepth).
	Unattributed int64
}

func (r result) String() string {
	return fmt.Sprintf("%.1f allocs/op, %.0f B/op (process-wide %.1f allocs/op, n=%d)", r.Allocs, r.Bytes, r.Process, r.N)
}

// measure runs warm iterations, then n measured ones, and counts the
// allocations made below markedOp per iteration. The collector is off
// while it measures (no pool is emptied mid-run, no GC assist credit
// moves), and GOMAXPROCS is 1, as in testing.AllocsPerRun.
func measure(tb testing.TB, warm, n int, it iteration) result {
	tb.Helper()
	plain := func(f func()) { f() }
	for i := 0; i < warm; i++ {
		if err := it(i, plain); err != nil {
			tb.Fatalf("warm-up %d: %v", i, err)
		}
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = idleRate }()
	before := snapshot(tb)
	gc := debug.SetGCPercent(-1)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for i := 0; i < n; i++ {
		if err := it(warm+i, markedOp); err != nil {
			debug.SetGCPercent(gc)
			tb.Fatalf("iteration %d: %v", warm+i, err)
		}
	}
	runtime.ReadMemStats(&m1)
	debug.SetGCPercent(gc)
	after := snapshot(tb)
	var objs, bytes int64
	for k, a := range after.marked {
		b := before.marked[k]
		objs += a.objs - b.objs
		bytes += a.bytes - b.bytes
	}
	var cut int64
	for k, a := range after.cut {
		cut += a.objs - before.cut[k].objs
	}
	return result{Allocs: float64(objs) / float64(n), Bytes: float64(bytes) / float64(n),
		Process: float64(m1.Mallocs-m0.Mallocs) / float64(n), N: n, Unattributed: cut}
}

// maxStackDepth is the runtime's default profile stack depth
// (GODEBUG=profstackdepth, 128 since Go 1.23).
const maxStackDepth = 128

type counts struct{ objs, bytes int64 }

type profile struct {
	marked map[string]counts // stack (its PCs) -> cumulative allocations, stacks holding markedOp
	cut    map[string]counts // stacks as deep as the profile records, without markedOp: maybe cut short
}

// snapshot reads the cumulative allocation profile (debug=1 text: every
// record with its full stack) after two collections, which publish every
// allocation made before them.
func snapshot(tb testing.TB) profile {
	tb.Helper()
	runtime.GC()
	runtime.GC()
	var buf bytes.Buffer
	if err := pprof.Lookup("allocs").WriteTo(&buf, 1); err != nil {
		tb.Fatal(err)
	}
	p := profile{marked: map[string]counts{}, cut: map[string]counts{}}
	sc := bufio.NewScanner(&buf)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var key string
	var c counts
	var marked, deep bool
	flush := func() {
		if key == "" {
			return
		}
		switch {
		case marked:
			p.marked[key] = c
		case deep:
			p.cut[key] = c
		}
		key, marked, deep = "", false, false
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#\t"):
			if strings.Contains(line, markerName) {
				marked = true
			}
		case strings.Contains(line, " @ 0x") && strings.Contains(line, "["):
			flush()
			// "inuse_objs: inuse_bytes [alloc_objs: alloc_bytes] @ pcs"
			open, end, at := strings.IndexByte(line, '['), strings.IndexByte(line, ']'), strings.Index(line, " @ ")
			f := strings.Fields(line[open+1 : end])
			if len(f) != 2 {
				continue
			}
			objs, err1 := strconv.ParseInt(strings.TrimSuffix(f[0], ":"), 10, 64)
			bytes, err2 := strconv.ParseInt(f[1], 10, 64)
			if err1 != nil || err2 != nil {
				continue
			}
			key, c = line[at+3:], counts{objs, bytes}
			deep = len(strings.Fields(key)) >= maxStackDepth
		case strings.HasPrefix(line, "# runtime.MemStats"):
			flush()
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return p
}
