package e2e

import (
	"fmt"
	"slices"
	"testing"
)

// retEntry is one thing a reader got, in the order it got them: an event,
// or a 410 cursor_expired at its cursor.
type retEntry struct {
	seq, id          int64
	action, resource string
	expired          bool
	at, oldest       int64 // of a 410: the cursor sent, the oldest position answered
	pruned           int64 // of a 410: pruned_through read just before the request
}

// checkFeedLog is the model check of one reader: from start, each event
// it got is at the position after the previous one, up to final (later
// ones are not checked), except right after a 410 cursor_expired, which
// only a reader that may fall behind (mayExpire) may get: it is answered
// at the reader's cursor, its oldest is past that cursor and at or past
// the pruned mark read before the request, and the reader goes on at
// exactly oldest + 1. seen is called with each event in place; fail with
// each violation. It returns the number of 410s.
func checkFeedLog(name string, log []retEntry, start, final int64, mayExpire bool,
	seen func(seq, id int64, action, resource string), fail func(string, ...any)) int {
	want, expired := start+1, 0
	for _, e := range log {
		switch {
		case e.expired:
			expired++
			if !mayExpire {
				fail("%s: 410 cursor_expired at %d (oldest %d): a follower fell behind the retention", name, e.at, e.oldest)
			}
			if e.at != want-1 {
				fail("%s: 410 at %d, but its cursor was %d", name, e.at, want-1)
			}
			if e.oldest <= e.at {
				fail("%s: 410 at %d says oldest %d, not past the cursor (or no oldest)", name, e.at, e.oldest)
			} else if e.oldest < e.pruned {
				fail("%s: 410 at %d says oldest %d, below the pruned mark %d read before", name, e.at, e.oldest, e.pruned)
			}
			want = max(e.oldest, e.at) + 1
		case e.seq > final:
		case e.seq != want:
			fail("%s: got position %d where %d was due (a skip or a repeat, with no 410)", name, e.seq, want)
			seen(e.seq, e.id, e.action, e.resource)
			want = e.seq + 1
		default:
			seen(e.seq, e.id, e.action, e.resource)
			want++
		}
	}
	if want-1 < final {
		fail("%s: ended at %d, not the head %d", name, want-1, final)
	}
	return expired
}

// The retention run's model check catches what it is there to catch: a
// silent skip, a repeat, a follower's 410, a 410 whose oldest lies in
// pruned events, and a reader that stopped short of the head.
func TestCheckFeedLog_catchesSkipsRepeatsAndBad410s(t *testing.T) {
	ev := func(seqs ...int64) []retEntry {
		var out []retEntry
		for _, s := range seqs {
			out = append(out, retEntry{seq: s, id: 100 + s})
		}
		return out
	}
	gone := func(at, oldest, pruned int64) retEntry {
		return retEntry{expired: true, at: at, oldest: oldest, pruned: pruned}
	}
	cat := func(parts ...[]retEntry) []retEntry { return slices.Concat(parts...) }
	for _, c := range []struct {
		name      string
		log       []retEntry
		mayExpire bool
		fails     int
	}{
		{"in order", ev(1, 2, 3, 4), false, 0},
		{"after a 410, from its oldest", cat(ev(1, 2), []retEntry{gone(2, 3, 3)}, ev(4)), true, 0},
		{"silent skip", ev(1, 2, 4), false, 1},
		{"repeat", ev(1, 2, 2, 3, 4), false, 1},
		{"short of the head", ev(1, 2, 3), false, 1},
		{"a follower's 410", cat(ev(1, 2), []retEntry{gone(2, 3, 3)}, ev(4)), false, 1},
		{"oldest below the pruned mark", cat(ev(1), []retEntry{gone(1, 2, 3)}, ev(3, 4)), true, 1},
		{"skip after a 410", cat(ev(1), []retEntry{gone(1, 2, 2)}, ev(4)), true, 1},
	} {
		var fails []string
		checkFeedLog("r", c.log, 0, 4, c.mayExpire, func(int64, int64, string, string) {},
			func(f string, a ...any) { fails = append(fails, fmt.Sprintf(f, a...)) })
		if len(fails) != c.fails {
			t.Errorf("%s: %d violations %q, want %d", c.name, len(fails), fails, c.fails)
		}
	}
}
