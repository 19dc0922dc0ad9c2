package locks_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
)

// Acquire + release cycles on one key, one goroutine: the locks Manager on
// etcd against etcd's own concurrency.Mutex on the same member in the same
// run, and against the Redis backend (the price of CP).
//
//	go test -run '^$' -bench 'BenchmarkEtcd' -benchtime 2s ./locks/
func BenchmarkEtcd(b *testing.B) {
	eps := testenv.EtcdEndpoints(b)
	b.Run("locks", func(b *testing.B) {
		m := locks.NewEtcd(testenv.EtcdClient(b, eps), locks.EtcdOptions{Keys: locks.Keys{Prefix: "bench" + locks.NewToken()[:6]}}, locks.Options{Holder: "bench"})
		defer m.Close(context.Background())
		cycles(b, m)
	})
	b.Run("concurrencyMutex", func(b *testing.B) {
		c := testenv.EtcdClient(b, eps)
		s, err := concurrency.NewSession(c, concurrency.WithTTL(10))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		mu := concurrency.NewMutex(s, "/bench-mutex/"+locks.NewToken()[:6])
		ctx := context.Background()
		b.ResetTimer()
		for b.Loop() {
			if err := mu.Lock(ctx); err != nil {
				b.Fatal(err)
			}
			if err := mu.Unlock(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cycles/s")
	})
	b.Run("redis", func(b *testing.B) {
		url := testenv.RedisURL(b)
		prefix := "bench" + locks.NewToken()[:6]
		opt, err := redis.ParseURL(url)
		if err != nil {
			b.Fatal(err)
		}
		opt.ContextTimeoutEnabled = true
		c := redis.NewClient(opt)
		defer c.Close()
		m := locks.NewRedis(c, locks.RedisOptions{Keys: locks.Keys{Prefix: prefix}}, locks.Options{Holder: "bench"})
		defer m.Close(context.Background())
		cycles(b, m)
	})
}

func cycles(b *testing.B, m *locks.Manager) {
	k, err := locks.Keys{Prefix: "bench"}.Key("lease", "k-"+locks.NewToken()[:8])
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		l, err := m.Acquire(ctx, k, 10*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cycles/s")
}
