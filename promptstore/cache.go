package promptstore

import (
	"container/list"
	"strconv"
	"sync"
)

// snapshotCache is an LRU of immutable snapshots bounded by count and by
// the bytes of their configs: entries are never invalidated, only evicted.
type snapshotCache struct {
	mu       sync.Mutex
	max      int
	maxBytes int
	bytes    int
	ll       *list.List
	items    map[string]*list.Element
}

// DefaultSnapshotCacheBytes bounds the configs the snapshot cache holds.
const DefaultSnapshotCacheBytes = 64 << 20

func newSnapshotCache(max, maxBytes int) *snapshotCache {
	return &snapshotCache{max: max, maxBytes: maxBytes, ll: list.New(), items: map[string]*list.Element{}}
}

// snapSize is what a snapshot holds in memory, about: its config twice
// (raw and parsed).
func snapSize(s *Snapshot) int { return 2*len(s.Config) + 256 }

func snapKey(agent string, version int) string { return agent + "\x00" + strconv.Itoa(version) }

func (c *snapshotCache) get(agent string, version int) *Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[snapKey(agent, version)]; ok {
		c.ll.MoveToFront(e)
		return e.Value.(*Snapshot)
	}
	return nil
}

func (c *snapshotCache) put(s *Snapshot) {
	k := snapKey(s.Agent, s.Version.Version)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[k]; ok {
		return
	}
	if snapSize(s) > c.maxBytes {
		return // larger than the whole cache: served, not kept
	}
	c.items[k] = c.ll.PushFront(s)
	c.bytes += snapSize(s)
	for c.ll.Len() > c.max || c.bytes > c.maxBytes {
		old := c.ll.Back()
		c.ll.Remove(old)
		o := old.Value.(*Snapshot)
		c.bytes -= snapSize(o)
		delete(c.items, snapKey(o.Agent, o.Version.Version))
	}
}

// PointerState is what the runtime path needs of an env: the pointer's
// version and revision, its active release and its revoked versions. An
// entry is only ever replaced by one with a higher revision.
type PointerState struct {
	Agent           string       `json:"agent"`
	Env             string       `json:"env"`
	Version         int          `json:"version"`
	Revision        int64        `json:"revision"`
	ActiveReleaseID string       `json:"active_release_id,omitempty"`
	Revoked         map[int]bool `json:"revoked,omitempty"`
}

// pointerCache holds PointerStates by (agent, env) of envs that have a
// pointer; events and the reconciler replace entries with newer ones.
type pointerCache struct {
	mu sync.RWMutex
	m  map[string]*PointerState
}

func newPointerCache() *pointerCache { return &pointerCache{m: map[string]*PointerState{}} }

func envKey(agent, env string) string { return agent + "\x00" + env }

func (c *pointerCache) get(agent, env string) *PointerState {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.m[envKey(agent, env)]
}

// offer stores p unless the cache already has the same or a newer
// revision; it reports whether p was taken.
func (c *pointerCache) offer(p *PointerState) bool {
	k := envKey(p.Agent, p.Env)
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.m[k]; ok && cur.Revision >= p.Revision {
		return false
	}
	c.m[k] = p
	return true
}

// revisions lists the cached revisions, for the reconciler.
func (c *pointerCache) revisions() map[string]int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make(map[string]int64, len(c.m))
	for k, p := range c.m {
		out[k] = p.Revision
	}
	return out
}

// diffKey names a diff: versions are immutable, so a diff never changes.
type diffKey struct {
	agent string
	a, b  int
}

// diffCache is an LRU of computed diffs bounded by the bytes of its
// diffs; a diff larger than an eighth of the bound is not kept.
type diffCache struct {
	mu       sync.Mutex
	maxBytes int64
	bytes    int64
	ll       *list.List // of *diffEntry, most recent first
	items    map[diffKey]*list.Element
}

type diffEntry struct {
	key  diffKey
	diff string
}

func newDiffCache(maxBytes int64) *diffCache {
	return &diffCache{maxBytes: maxBytes, ll: list.New(), items: map[diffKey]*list.Element{}}
}

func (c *diffCache) get(k diffKey) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		c.ll.MoveToFront(e)
		return e.Value.(*diffEntry).diff, true
	}
	return "", false
}

func (c *diffCache) put(k diffKey, diff string) {
	size := int64(len(diff) + len(k.agent) + 64)
	if size > c.maxBytes/8 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[k]; ok {
		return
	}
	c.items[k] = c.ll.PushFront(&diffEntry{key: k, diff: diff})
	c.bytes += size
	for c.bytes > c.maxBytes {
		old := c.ll.Back()
		c.ll.Remove(old)
		o := old.Value.(*diffEntry)
		delete(c.items, o.key)
		c.bytes -= int64(len(o.diff) + len(o.key.agent) + 64)
	}
}
