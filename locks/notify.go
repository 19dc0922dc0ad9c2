package locks

import "sync"

// notifier hands release announcements to in-process watchers: one
// watcher per release (the others would only lose the race again); a
// watcher that leaves with an unused wake-up passes it on.
type notifier struct {
	mu       sync.Mutex
	watchers map[string]map[chan struct{}]struct{}
}

func newNotifier() *notifier {
	return &notifier{watchers: map[string]map[chan struct{}]struct{}{}}
}

func (n *notifier) watch(key string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	set := n.watchers[key]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		n.watchers[key] = set
	}
	set[ch] = struct{}{}
	n.mu.Unlock()
	return ch, func() {
		n.mu.Lock()
		delete(set, ch)
		if len(ch) > 0 {
			// pass an unconsumed wake-up on to another watcher
			for other := range set {
				select {
				case other <- struct{}{}:
				default:
				}
				break
			}
		}
		if len(set) == 0 && n.watchers[key] != nil && len(n.watchers[key]) == 0 {
			delete(n.watchers, key)
		}
		n.mu.Unlock()
	}
}

func (n *notifier) fire(key string) {
	n.mu.Lock()
	for ch := range n.watchers[key] {
		select {
		case ch <- struct{}{}:
		default:
		}
		break // wake one watcher per release
	}
	n.mu.Unlock()
}
