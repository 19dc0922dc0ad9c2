package events

import (
	"sync/atomic"
	"time"
)

// Health remembers that Redis just failed, so degraded writes do not each
// wait out a Redis timeout: while it is Down, Redis work that is only a
// fast path (locks, mirror writes, events) is skipped; SQL conditions and
// the reconcilers keep everything correct. It recovers after a cool-down.
// The zero value is usable with a one-second cool-down; nil is always up.
type Health struct {
	downUntil atomic.Int64 // unix nanoseconds
	CoolDown  time.Duration
}

// Down reports whether Redis failed within the last cool-down.
func (h *Health) Down() bool {
	return h != nil && time.Now().UnixNano() < h.downUntil.Load()
}

// Fail records a Redis failure.
func (h *Health) Fail() {
	if h == nil {
		return
	}
	d := h.CoolDown
	if d <= 0 {
		d = time.Second
	}
	h.downUntil.Store(time.Now().Add(d).UnixNano())
}
