package locks

import "sync"

// notifier fans release announcements out to in-process watchers.
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
	}
	n.mu.Unlock()
}
