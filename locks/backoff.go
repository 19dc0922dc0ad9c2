package locks

import (
	"math/rand/v2"
	"time"
)

// fullJitter is the "full jitter" backoff: a uniform draw from
// [0, min(cap, base * 2^attempt)).
func fullJitter(base, cap time.Duration, attempt int) time.Duration {
	d := cap
	if attempt < 30 {
		if e := base << attempt; e > 0 && e < cap {
			d = e
		}
	}
	return time.Duration(rand.Int64N(int64(d)) + 1)
}
