package promptstore

import (
	"sync/atomic"
	"time"
)

// breaker remembers that Redis just failed, so degraded writes do not each
// wait out a Redis timeout: while open, Redis work that is only a fast path
// (locks, mirror writes, events) is skipped; the SQL conditions and the
// reconciler keep everything correct. It closes again after a cool-down.
type breaker struct {
	openUntil atomic.Int64 // unix nanoseconds
	coolDown  time.Duration
}

func (b *breaker) open() bool { return time.Now().UnixNano() < b.openUntil.Load() }

func (b *breaker) fail() { b.openUntil.Store(time.Now().Add(b.coolDown).UnixNano()) }
