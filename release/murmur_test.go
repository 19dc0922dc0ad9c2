package release

import (
	"testing"

	"github.com/twmb/murmur3"

	"github.com/promptd/promptd/prompt"
)

func murmurHello() uint32 { return murmur3.Sum32([]byte("hello")) }

// prompt's own murmur3 (the package is dependency-free) buckets every key
// as github.com/twmb/murmur3 does: lengths 0..3 mod 4, multi-byte UTF-8.
func TestBucket_promptsMurmur3_matchesTwmb(t *testing.T) {
	keys := []string{"", "a", "ab", "abc", "abcd", "user-1", "alice@example.com", "日本語", "🎉x", "session-42"}
	for i := 0; i < 200; i++ {
		keys = append(keys, string(rune('a'+i%26))+keys[i%len(keys)])
	}
	for _, k := range keys {
		want := int(murmur3.Sum32([]byte("rel_1:"+k)) % Buckets)
		if got := prompt.Bucket("rel_1", k); got != want {
			t.Fatalf("Bucket(rel_1:%s) = %d, twmb %d", k, got, want)
		}
	}
}
