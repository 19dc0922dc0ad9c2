package locks

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed acquire.lua
	acquireLua string
	//go:embed renew.lua
	renewLua string
	//go:embed release.lua
	releaseLua string
	//go:embed holder.lua
	holderLua string

	acquireScript = redis.NewScript(acquireLua)
	renewScript   = redis.NewScript(renewLua)
	releaseScript = redis.NewScript(releaseLua)
	holderScript  = redis.NewScript(holderLua)
)

// RedisClient is the narrowest go-redis surface the backend needs: scripts
// and pub/sub. *redis.Client, *redis.Ring and *redis.ClusterClient fit.
// Give the client ContextTimeoutEnabled so per-call deadlines bound reads.
type RedisClient interface {
	redis.Scripter
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// RedisOptions configure the Redis backend.
type RedisOptions struct {
	Keys    Keys          // prefix of the release channel
	Timeout time.Duration // bound on one Redis call (PROMPTD_REDIS_TIMEOUT); default 100ms
	// FenceTTL is how long a fence counter outlives the last grant of its
	// lock (PROMPTD_LOCK_FENCE_TTL); zero means DefaultFenceTTL. It is at
	// least FenceTTLFactor times the lease's TTL.
	FenceTTL time.Duration
}

// Fence counter lifetime. A counter matters only while it is ahead of the
// Redis clock (grants faster than one per µs, a storage floor, a clock that
// stepped back): a fence is max(counter + 1, server time in µs), so once
// the clock has passed the counter the time component alone keeps fences
// growing. The counter is therefore kept FenceTTL after its last grant plus
// however far its fence was ahead of the clock, and no longer: the next
// fence after it expired is the server time, above every fence granted
// before. FenceTTL is then only how far back a Redis clock may step without
// a fence going backwards (10 minutes: beyond any NTP correction; the
// storage floor, a session row's fence, covers sessions beyond that). Each
// counter costs about 200 bytes of Redis memory (measured) for that long:
// locking distinct resources at r per second keeps about 600·r of them
// (86,400·r with the former default of a day).
const (
	DefaultFenceTTL = 10 * time.Minute
	FenceTTLFactor  = 10
)

// RedisBackend keeps each lease in a Redis string that expires with it
// (acquire.lua describes the value), with a fence counter beside it that
// expires FenceTTL after the last grant. It writes no other key.
type RedisBackend struct {
	c        RedisClient
	timeout  time.Duration
	fenceTTL time.Duration
	bound    *callBound
	channel  string
	chanArg  any // channel, boxed once for the scripts' arguments
	notify   *notifier

	subOnce sync.Once
	mu      sync.Mutex
	sub     *redis.PubSub
	closed  bool
}

// NewRedisBackend returns a backend over c.
func NewRedisBackend(c RedisClient, o RedisOptions) *RedisBackend {
	if o.Timeout <= 0 {
		o.Timeout = 100 * time.Millisecond
	}
	if o.FenceTTL <= 0 {
		o.FenceTTL = DefaultFenceTTL
	}
	ch := o.Keys.ReleasedChannel()
	return &RedisBackend{c: c, timeout: o.Timeout, fenceTTL: o.FenceTTL, bound: newCallBound(o.Timeout),
		channel: ch, chanArg: ch, notify: newNotifier()}
}

var modeNames = [...]string{ModeAcquire: "", ModePreempt: "preempt", ModeReenter: "reenter"}

// Acquire runs acquire.lua. The script is idempotent per token, so a call
// whose reply was lost is retried once and gets the same grant back.
func (b *RedisBackend) Acquire(ctx context.Context, key string, req Request) (Grant, error) {
	keys := []string{key, FenceKey(key)}
	ttl := req.TTL.Milliseconds()
	fttl := max(b.fenceTTL, FenceTTLFactor*req.TTL).Milliseconds()
	var args []any
	if req.Mode == ModeAcquire && req.MinFence == 0 && req.Nonce == "" {
		args = []any{owner(req.Token), ttl, req.Holder, fttl} // the script's defaults for the rest
	} else {
		args = []any{owner(req.Token), ttl, req.Holder, fttl, modeNames[req.Mode], req.MinFence, req.Nonce}
	}
	var reply any
	err := b.retry(ctx, "acquire", func(ctx context.Context, _ int) error {
		v, err := acquireScript.Run(ctx, b.c, keys, args...).Result()
		reply = v
		return err
	})
	if err != nil {
		return Grant{}, err
	}
	g := Grant{Token: req.Token, Holder: req.Holder, TTL: req.TTL, Count: 1}
	if f, ok := reply.(int64); ok {
		// a grant of a free key whose fence is the server time in µs
		g.Fence, g.Since = f, time.UnixMicro(f)
		return g, nil
	}
	r, _ := reply.([]any)
	if len(r) == 0 {
		return Grant{}, fmt.Errorf("locks: acquire: unexpected reply %v", reply)
	}
	switch status := toInt(r[0]); {
	case status == -1:
		return Grant{}, ErrLeaseLost
	case (status == 1 || status == 3) && len(r) == 3:
		g.Fence, g.Since = toInt(r[1]), time.UnixMicro(toInt(r[2]))
		g.Preempted = status == 3
		return g, nil
	case status == 2 && len(r) == 5:
		g.Holder, g.Fence, g.Since, g.Count = toString(r[1]), toInt(r[2]), time.UnixMicro(toInt(r[3])), int(toInt(r[4]))
		return g, nil
	case status == 0 && len(r) == 4:
		c := Conflict{Key: key, Holder: toString(r[1]), Fence: toInt(r[2]), ExpiresAt: time.Now().Add(time.Duration(toInt(r[3])) * time.Millisecond)}
		return Grant{}, &HeldError{Conflicts: []Conflict{c}}
	}
	return Grant{}, fmt.Errorf("locks: acquire: unexpected reply %v", reply)
}

// Renew runs renew.lua (compare-by-token).
func (b *RedisBackend) Renew(ctx context.Context, key, token string, ttl time.Duration) (Grant, error) {
	var fence int64
	err := b.retry(ctx, "renew", func(ctx context.Context, _ int) error {
		v, err := renewScript.Run(ctx, b.c, []string{key}, owner(token), ttl.Milliseconds()).Int64()
		fence = v
		return err
	})
	if err != nil {
		return Grant{}, err
	}
	if fence == 0 {
		return Grant{}, ErrLeaseLost
	}
	return Grant{Token: token, Fence: fence, TTL: ttl}, nil
}

// Release runs release.lua (compare-by-token). When a first attempt timed out
// and the retry finds the key gone, the first attempt freed it.
func (b *RedisBackend) Release(ctx context.Context, key, token, nonce string) (bool, error) {
	var left int64
	retried := false
	o := owner(token)
	err := b.retry(ctx, "release", func(ctx context.Context, attempt int) error {
		retried = attempt > 0
		v, err := releaseScript.Run(ctx, b.c, []string{key}, o, b.chanArg, nonce).Int64()
		left = v
		return err
	})
	switch {
	case err != nil:
		return false, err
	case left < 0 && retried:
		return true, nil
	case left < 0:
		return false, ErrLeaseLost
	}
	return left == 0, nil
}

// Holder runs holder.lua.
func (b *RedisBackend) Holder(ctx context.Context, key string) (Grant, error) {
	var reply []any
	err := b.retry(ctx, "holder", func(ctx context.Context, _ int) error {
		v, err := holderScript.Run(ctx, b.c, []string{key}).Slice()
		reply = v
		return err
	})
	if errors.Is(err, ErrNotHeld) {
		return Grant{}, ErrNotHeld
	}
	if err != nil {
		return Grant{}, err
	}
	if len(reply) != 5 {
		return Grant{}, fmt.Errorf("locks: holder: unexpected reply %v", reply)
	}
	return Grant{
		Holder: toString(reply[0]),
		Fence:  toInt(reply[1]),
		Since:  time.UnixMicro(toInt(reply[2])),
		TTL:    time.Duration(toInt(reply[3])) * time.Millisecond,
		Count:  int(toInt(reply[4])),
	}, nil
}

// Ping checks Redis with a trivial script (the client surface has no PING).
func (b *RedisBackend) Ping(ctx context.Context) error {
	return b.retry(ctx, "ping", func(ctx context.Context, _ int) error {
		return b.c.Eval(ctx, "return 1", nil).Err()
	})
}

// retry runs one call bounded by b.timeout (by ctx alone when its deadline
// is sooner; a context that cannot be cancelled gets a shared slot of
// callBound), and once more after a timeout: every script here is
// idempotent per token and nonce, so a repeat after a lost reply is
// harmless. Errors other than redis.Nil come back wrapped in ErrUnavailable.
func (b *RedisBackend) retry(ctx context.Context, op string, call func(context.Context, int) error) error {
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		cctx, cancel := ctx, context.CancelFunc(nil)
		switch d, ok := ctx.Deadline(); {
		case !ok && ctx.Done() == nil:
			cctx = b.bound.context(ctx)
		case !ok || time.Until(d) > b.timeout:
			cctx, cancel = context.WithTimeout(ctx, b.timeout)
		}
		err = call(cctx, attempt)
		if cancel != nil {
			cancel()
		}
		if err == nil {
			return nil
		}
		if errors.Is(err, redis.Nil) {
			return ErrNotHeld
		}
		if ctx.Err() != nil || !isTimeout(err) {
			break
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return unavailable(op, err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// Watch registers for the release of key, announced on the release channel.
// One subscription serves every watcher of the process.
func (b *RedisBackend) Watch(key string) (<-chan struct{}, func()) {
	b.subOnce.Do(b.subscribe)
	return b.notify.watch(key)
}

func (b *RedisBackend) subscribe() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	// Subscribe does not dial until a receive; Channel reconnects on errors.
	b.sub = b.c.Subscribe(context.Background(), b.channel)
	ch := b.sub.Channel()
	go func() {
		for m := range ch {
			b.notify.fire(m.Payload)
		}
	}()
}

// Close ends the release subscription.
func (b *RedisBackend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if b.sub != nil {
		return b.sub.Close()
	}
	return nil
}

// owner is how the scripts take a token: its length, ':', the token. A
// prefix comparison of the stored value then compares tokens exactly,
// whatever bytes they hold (acquire.lua describes the value).
func owner(token string) string {
	return strconv.Itoa(len(token)) + ":" + token
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		var n int64
		fmt.Sscan(x, &n)
		return n
	}
	return 0
}

func toString(v any) string {
	s, _ := v.(string)
	return s
}
