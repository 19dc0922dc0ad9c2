package api_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/api"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/sqlstore"
	"github.com/promptd/promptd/telemetry"
)

// processCPU is the user and system CPU time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// discardSpans is an exporter that drops every batch (the cost measured is
// promptd's and the SDK's, not a collector's).
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

// overheadMode is one tracing setup of TestTracingOverhead.
type overheadMode struct {
	name string
	tp   *sdktrace.TracerProvider // nil: nothing installed
	h    http.Handler
	url  string // h behind a loopback httptest server
}

// install makes m's provider the one promptd's tracers forward to.
func (m *overheadMode) install() {
	if m.tp == nil {
		telemetry.Uninstall()
		return
	}
	telemetry.Install(m.tp)
}

// overheadServer is a server wired as cmd/promptd wires it over SQLite
// (log level warn, metrics registered), built with m installed, SQL
// instrumented when tracing is on, with a 4 KB config at support/prod.
func overheadServer(t *testing.T, m *overheadMode) http.Handler { return overheadServerB(t, m) }

func overheadServerB(t testing.TB, m *overheadMode) http.Handler {
	t.Helper()
	m.install()
	db := testenv.OpenDB(t, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "promptd.db")}, migrations())
	if err := telemetry.InstrumentSQL(db); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rt := promptd.New(db, promptd.Options{Instance: "bench-1", Logger: logger, Prompts: promptstore.Options{Metrics: promptstore.NewMetrics(nil)}})
	t.Cleanup(func() { _ = rt.Close() })
	reg := prometheus.NewRegistry()
	h := api.New(api.Config{Logger: logger, Registerer: reg, Gatherer: reg, Tokens: testTokens, Runtime: rt}).Handler()
	system := strings.Repeat("You are a careful support agent. ", 4096/33)
	for _, r := range []*http.Request{
		req("POST", "/v1/agents/support/versions", admin, `{"base_version": 0, "config": {"system": "`+system+`", "model": {"name": "m"}}}`),
		req("PUT", "/v1/agents/support/envs/prod", admin, `{"version": 1, "expected_revision": 0}`),
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code/100 != 2 {
			t.Fatalf("%s %s: %d %s", r.Method, r.URL, rec.Code, rec.Body)
		}
	}
	return h
}

// TestTracingOverhead measures resolve and append throughput with no
// OpenTelemetry provider (OpenTelemetry's no-op behind every tracer,
// nothing mounted), with tracing configured off (telemetry.Setup with no
// OTEL_* variable, what cmd/promptd runs), with the parent-based sampler
// at 1 % and at 100 % (batch processor, a discarding exporter), the modes
// alternated in rounds in one run; it reports each mode's median requests
// per second and the process's CPU time per request, median and best
// round (less sensitive to the other work of a shared machine; its ratio
// is the capacity's), each with its ratio to no OpenTelemetry. Targets (issue 18): off
// >= 0.98x, 1 % >= 0.95x. It runs only when asked (it is a measurement,
// not a check; a shared machine's noise is its error):
//
//	PROMPTD_BENCH_TRACING=1 go test -run TestTracingOverhead -v ./api/
//
// PROMPTD_BENCH_ROUNDS (default 15) and PROMPTD_BENCH_BURST (default
// 300ms, per mode, round and workload) size it; PROMPTD_BENCH_MODES (off,
// 1%, 100%) and PROMPTD_BENCH_LOADS (resolve, append,
// resolve-handler) narrow it, to
// profile one mode against no OpenTelemetry.
func TestTracingOverhead(t *testing.T) {
	if os.Getenv("PROMPTD_BENCH_TRACING") == "" {
		t.Skip("a measurement: PROMPTD_BENCH_TRACING=1 go test -run TestTracingOverhead -v ./api/")
	}
	rounds, burst := 15, 300*time.Millisecond
	if v, err := strconv.Atoi(os.Getenv("PROMPTD_BENCH_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	if v, err := time.ParseDuration(os.Getenv("PROMPTD_BENCH_BURST")); err == nil && v > 0 {
		burst = v
	}
	t.Cleanup(telemetry.Uninstall)

	none := &overheadMode{name: "no otel"}
	// The same setup again, on its own server: its ratio to none is the
	// measurement's own noise (an A/A control), the floor below which no
	// other ratio means anything.
	twin := &overheadMode{name: "no otel'"}
	off := &overheadMode{name: "off"}
	if shutdown, err := telemetry.Setup(context.Background(), func(string) string { return "" }, "bench"); err != nil || telemetry.Enabled() {
		t.Fatalf("Setup with no OTEL_*: enabled %v, %v", telemetry.Enabled(), err)
	} else {
		t.Cleanup(func() { _ = shutdown(context.Background()) })
	}
	modes := []*overheadMode{none, twin, off}
	for _, s := range []struct {
		name    string
		sampler sdktrace.Sampler
	}{{"1%", sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01))}, {"100%", sdktrace.ParentBased(sdktrace.AlwaysSample())}} {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(s.sampler), sdktrace.WithBatcher(discardSpans{}))
		t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		modes = append(modes, &overheadMode{name: s.name, tp: tp})
	}
	if only := os.Getenv("PROMPTD_BENCH_MODES"); only != "" { // for profiling one mode: "1%"
		modes = slices.DeleteFunc(modes, func(m *overheadMode) bool {
			return m != none && m != twin && !slices.Contains(strings.Split(only, ","), m.name)
		})
	}
	for _, m := range modes {
		m.h = overheadServer(t, m)
	}

	workers := 2
	// Over HTTP (a loopback httptest server and a keep-alive client, in
	// this process: what a runtime sees), and straight into the handler
	// (promptd's own cost, where a span's fixed cost weighs most).
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	for _, m := range modes {
		srv := httptest.NewServer(m.h)
		t.Cleanup(srv.Close)
		m.url = srv.URL
	}
	viaHTTP := func(m *overheadMode, method, path, body string) int {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		r, _ := http.NewRequest(method, m.url+path, rd)
		r.Header.Set("Authorization", "Bearer "+runtime)
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		res, err := hc.Do(r)
		if err != nil {
			panic(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		return res.StatusCode
	}
	direct := func(m *overheadMode, method, path, body string) int {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		r := httptest.NewRequest(method, path, rd) // not req: its 60 s timer per request would pile up
		r.Header.Set("Authorization", "Bearer "+runtime)
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		w := &discard{h: http.Header{}}
		m.h.ServeHTTP(w, r)
		return w.status
	}
	resolve := func(send func(*overheadMode, string, string, string) int) func(*overheadMode, *atomic.Bool) int {
		return func(m *overheadMode, stop *atomic.Bool) int {
			n := 0
			for ; !stop.Load(); n++ {
				if st := send(m, "GET", "/v1/agents/support/envs/prod/prompt", ""); st != 200 {
					panic(fmt.Sprintf("resolve: %d", st))
				}
			}
			return n
		}
	}
	var sessions atomic.Int64
	appendTurns := func(m *overheadMode, stop *atomic.Bool) int {
		n := 0
		for !stop.Load() {
			// A session per 50 appends (its create is part of the work).
			id := fmt.Sprintf("s%d", sessions.Add(1))
			if st := viaHTTP(m, "POST", "/v1/sessions", `{"session_id": "`+id+`", "agent": "support", "env": "prod"}`); st != 201 {
				panic(fmt.Sprintf("create session: %d", st))
			}
			for rev := 0; rev < 50 && !stop.Load(); rev++ {
				if st := viaHTTP(m, "POST", "/v1/sessions/"+id+"/turns",
					`{"expected_revision": `+strconv.Itoa(rev)+`, "turns": [{"role": "user", "content": "where is my order?"}]}`); st != 201 {
					panic(fmt.Sprintf("append: %d", st))
				}
				n++
			}
		}
		return n
	}
	type workload struct {
		name string
		run  func(m *overheadMode, stop *atomic.Bool) int
	}
	loads := []workload{{"resolve", resolve(viaHTTP)}, {"append", appendTurns}, {"resolve-handler", resolve(direct)}}
	if only := os.Getenv("PROMPTD_BENCH_LOADS"); only != "" { // "resolve" or "append"
		loads = slices.DeleteFunc(loads, func(l workload) bool { return !slices.Contains(strings.Split(only, ","), l.name) })
	}
	rps := map[string][]float64{}    // workload/mode -> requests per second, per round
	cpuPer := map[string][]float64{} // workload/mode -> CPU µs per request (the process's), per round
	for round := range rounds {
		for _, l := range loads {
			for i := range modes {
				m := modes[(i+round)%len(modes)] // rotate the order: no mode always runs first
				m.install()
				var stop atomic.Bool
				var total atomic.Int64
				var wg sync.WaitGroup
				start, cpu0 := time.Now(), processCPU()
				for range workers {
					wg.Go(func() { total.Add(int64(l.run(m, &stop))) })
				}
				time.Sleep(burst)
				stop.Store(true)
				wg.Wait()
				k := l.name + "/" + m.name
				rps[k] = append(rps[k], float64(total.Load())/time.Since(start).Seconds())
				cpuPer[k] = append(cpuPer[k], (processCPU()-cpu0).Seconds()*1e6/float64(total.Load()))
			}
		}
	}
	median := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[len(s)/2]
	}
	// paired is the median over rounds of a mode's figure against no
	// OpenTelemetry's in the same round (each round runs every mode back
	// to back, so a slow spell of the machine weighs on both sides).
	paired := func(xs, base []float64, higherIsBetter bool) float64 {
		r := make([]float64, len(xs))
		for i := range xs {
			if r[i] = xs[i] / base[i]; !higherIsBetter {
				r[i] = base[i] / xs[i]
			}
		}
		return median(r)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "%d rounds x %s bursts, %d workers, SQLite; ratios are to no otel, medians of per-round pairs; no otel' is an A/A control\n",
		rounds, burst, workers)
	fmt.Fprintf(&out, "%-15s %-8s %10s %8s %12s %8s %12s %8s\n", "workload", "mode", "req/s", "ratio", "cpu µs/req", "ratio",
		"best cpu", "ratio")
	for _, l := range loads {
		k := l.name + "/" + none.name
		bbase := slices.Min(cpuPer[k])
		for _, m := range modes {
			km := l.name + "/" + m.name
			b := slices.Min(cpuPer[km])
			fmt.Fprintf(&out, "%-15s %-8s %10.0f %7.3fx %12.1f %7.3fx %12.1f %7.3fx\n", l.name, m.name,
				median(rps[km]), paired(rps[km], rps[k], true), median(cpuPer[km]), paired(cpuPer[km], cpuPer[k], false), b, bbase/b)
		}
	}
	t.Log("\n" + out.String())
}

// TestTracing_unsampledResolve_costsFewAllocations: with the parent-based
// sampler at 1 %, a resolve that is not sampled allocates at most 4 more
// times than with no OpenTelemetry (the span, its context, the request's
// copy): its name and attributes are built only for a sampled span, and
// the tracer is not taken again per request (Echo builds the middleware
// chain per request). 41 against 25 before: 16 more, a third of the
// resolve's cost in the handler.
func TestTracing_unsampledResolve_costsFewAllocations(t *testing.T) {
	bound := 4.0
	if raceDetector {
		bound = 8 // the race detector adds its own (5 measured; 18 before)
	}
	t.Cleanup(telemetry.Uninstall)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())), sdktrace.WithBatcher(discardSpans{}))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	allocs := map[string]float64{}
	for _, m := range []*overheadMode{{name: "none"}, {name: "unsampled", tp: tp}} {
		h := overheadServer(t, m)
		m.install()
		w := &discard{h: http.Header{}}
		allocs[m.name] = testing.AllocsPerRun(2000, func() {
			r := httptest.NewRequest("GET", "/v1/agents/support/envs/prod/prompt", nil)
			r.Header.Set("Authorization", "Bearer "+runtime)
			clear(w.h)
			h.ServeHTTP(w, r)
			if w.status != 200 {
				t.Fatalf("resolve: %d", w.status)
			}
		})
	}
	t.Logf("allocations per resolve: %v", allocs)
	if extra := allocs["unsampled"] - allocs["none"]; extra > bound {
		t.Fatalf("an unsampled resolve allocates %.0f times more than with no OpenTelemetry (%v), want at most %.0f", extra, allocs, bound)
	}
}
