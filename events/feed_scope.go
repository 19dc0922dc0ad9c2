package events

import (
	"context"
	"errors"

	"github.com/promptd/promptd/audit"
)

// ReadScoped is Read of the events a scoped reader may see (and of one
// board's when board is not ""): the others are skipped in memory and not
// read at all from the store, so they never fill a reader's page or its
// scan budget. The position scanned is the last event returned when limit
// were found, else the feed's head as it was before the read (every event
// up to it is stamped and so seen by the read), or after, whichever is
// newer.
func (f *Feed) ReadScoped(ctx context.Context, scope audit.Scope, board string, after int64, limit int) ([]audit.Stamped, int64, error) {
	if limit <= 0 {
		return nil, after, errors.New("events: limit must be positive")
	}
	match := func(e audit.Stamped) bool { return (board == "" || e.Board == board) && scope.Match(e.Event) }
	f.mu.Lock()
	if f.started && after >= f.first-1 {
		defer f.mu.Unlock()
		if after >= f.head {
			return nil, max(after, f.head), nil
		}
		var out []audit.Stamped
		for _, e := range f.ring[after-f.first+1:] {
			if !match(e) {
				continue
			}
			if out = append(out, e); len(out) == limit {
				return out, e.Seq, nil
			}
		}
		return out, f.head, nil
	}
	f.mu.Unlock()
	if err := f.Kept(ctx, after); err != nil {
		return nil, after, err
	}
	head := f.Head()
	evs, err := audit.ReadScopedAfter(ctx, f.o.DB, scope, board, after, limit)
	if err != nil {
		return nil, after, f.storeErr(after, err)
	}
	if len(evs) == limit {
		return evs, evs[len(evs)-1].Seq, nil
	}
	scanned := max(after, head)
	if len(evs) > 0 {
		scanned = max(scanned, evs[len(evs)-1].Seq)
	}
	return evs, scanned, nil
}
