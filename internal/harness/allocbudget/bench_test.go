package allocbudget

import "testing"

// BenchmarkHotPaths runs each hot path as a benchmark, for profiling
// (docs/performance.md):
//
//	go test -run '^$' -bench 'HotPaths/turn-append$' -benchtime 2000x \
//	  -cpuprofile /tmp/cpu.out -memprofile /tmp/mem.out -memprofilerate 1 ./internal/harness/allocbudget/
//	go tool pprof -top -nodecount 25 /tmp/cpu.out
//
// It reports the heap's allocations of the whole process (the runtime's
// background loops included), not the budgets' count.
func BenchmarkHotPaths(b *testing.B) {
	for _, p := range hotPaths {
		b.Run(p.name, func(b *testing.B) {
			o := serverOptions{redisLocks: p.redis}
			if p.redis {
				skipWithoutRedis(b)
			}
			it := p.start(b, o)
			plain := func(f func()) { f() }
			for i := 0; i < warmIterations; i++ {
				if err := it(i, plain); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			i := warmIterations
			for b.Loop() {
				if err := it(i, plain); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
