package locks_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
)

func TestMemoryBackend_behaviour(t *testing.T) {
	runSuite(t, func(t *testing.T, prefix string) (locks.Backend, locks.Backend) {
		b := locks.NewMemoryBackend(nil)
		return b, b
	})
}

func TestRedisBackend_behaviour(t *testing.T) {
	url := testenv.RedisURL(t)
	runSuite(t, func(t *testing.T, prefix string) (locks.Backend, locks.Backend) {
		return redisBackend(t, url, prefix), redisBackend(t, url, prefix)
	})
}

// redisBackend is one "process": its own client and subscription.
func redisBackend(t *testing.T, url, prefix string) locks.Backend {
	t.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	opt.ContextTimeoutEnabled = true
	opt.ReadTimeout = 200 * time.Millisecond
	opt.WriteTimeout = 200 * time.Millisecond
	opt.DialTimeout = 500 * time.Millisecond
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return locks.NewRedisBackend(c, locks.RedisOptions{Keys: locks.Keys{Prefix: prefix}, Timeout: 200 * time.Millisecond})
}

// The same behaviour on a three-master Redis Cluster: a lock and its fence
// share a hash tag, and multi-resource leases touch one slot per key.
func TestRedisClusterBackend_behaviour(t *testing.T) {
	addrs := testenv.StartRedisCluster(t)
	runSuite(t, func(t *testing.T, prefix string) (locks.Backend, locks.Backend) {
		o := locks.RedisOptions{Keys: locks.Keys{Prefix: prefix}, Timeout: 500 * time.Millisecond}
		return locks.NewRedisBackend(testenv.ClusterClient(t, addrs), o), locks.NewRedisBackend(testenv.ClusterClient(t, addrs), o)
	})
}
