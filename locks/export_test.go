package locks

// MemorySizes reports how many entries the memory backend keeps: held
// keys and fence counters.
func MemorySizes(b *MemoryBackend) (held, fences int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.held), len(b.fences)
}
