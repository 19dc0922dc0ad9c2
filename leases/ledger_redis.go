package leases

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/promptd/promptd/locks"
)

var (
	//go:embed reserve.lua
	reserveLua    string
	reserveScript = redis.NewScript(reserveLua)
	//go:embed ledger.lua
	ledgerLua    string
	ledgerScript = redis.NewScript(ledgerLua)
)

// ledgerKeyTTL is how long an owner's count outlives its last change: past
// the longest expiry a lease can be counted for (a wait, then a TTL).
const ledgerKeyTTL = MaxWait + MaxTTL + 10*time.Second

// RedisLedger is a Ledger every instance shares: one sorted set per owner,
// P:leases:{<owner>}, of its live leases scored by their expiry (ms).
type RedisLedger struct {
	c       redis.Scripter
	prefix  string
	timeout time.Duration
}

// NewRedisLedger returns a RedisLedger on c under keys' prefix; each call
// is bounded by timeout (PROMPTD_REDIS_TIMEOUT; 0: 100 ms).
func NewRedisLedger(c redis.Scripter, keys locks.Keys, timeout time.Duration) *RedisLedger {
	if timeout <= 0 {
		timeout = 100 * time.Millisecond
	}
	prefix := keys.Prefix
	if prefix == "" {
		prefix = "prompt"
	}
	return &RedisLedger{c: c, prefix: prefix, timeout: timeout}
}

func (r *RedisLedger) key(owner string) string { return r.prefix + ":leases:{" + owner + "}" }

// unavailable wraps a Redis error as locks.ErrUnavailable.
func unavailable(err error) error {
	return fmt.Errorf("%w: lease ledger: %v", locks.ErrUnavailable, err)
}

// Reserve implements Ledger.
func (r *RedisLedger) Reserve(ctx context.Context, owner, lease string, expires time.Time, max int) (bool, time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	res, err := reserveScript.Run(ctx, r.c, []string{r.key(owner)}, lease, expires.UnixMilli(), max, time.Now().UnixMilli(),
		ledgerKeyTTL.Milliseconds()).Int64Slice()
	if err != nil || len(res) != 2 {
		return false, time.Time{}, unavailable(err)
	}
	if res[0] == 1 {
		return true, time.Time{}, nil
	}
	return false, time.UnixMilli(res[1]), nil
}

// Extend implements Ledger.
func (r *RedisLedger) Extend(ctx context.Context, owner, lease string, expires time.Time) error {
	return r.update(ctx, owner, lease, expires.UnixMilli())
}

// Drop implements Ledger.
func (r *RedisLedger) Drop(ctx context.Context, owner, lease string) error {
	return r.update(ctx, owner, lease, 0)
}

func (r *RedisLedger) update(ctx context.Context, owner, lease string, expires int64) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if err := ledgerScript.Run(ctx, r.c, []string{r.key(owner)}, lease, expires, ledgerKeyTTL.Milliseconds()).Err(); err != nil && err != redis.Nil {
		return unavailable(err)
	}
	return nil
}
