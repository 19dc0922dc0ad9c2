package release

import (
	"strconv"
	"strings"

	"github.com/promptd/promptd/prompt"
)

// Buckets is the bucket space: basis points of a percent.
const Buckets = prompt.Buckets

// ParsePercent parses a decimal percent with at most 2 decimals, 0..100,
// exactly (as a decimal string, never through float arithmetic), into basis
// points 0..10000. "12.5" -> 1250, "0.01" -> 1, "100" -> 10000.
func ParsePercent(s string) (int, bool) {
	whole, frac, hasDot := strings.Cut(s, ".")
	if whole == "" || len(whole) > 3 || (hasDot && (frac == "" || len(frac) > 2)) {
		return 0, false
	}
	for _, part := range []string{whole, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return 0, false
			}
		}
	}
	if len(whole) > 1 && whole[0] == '0' {
		return 0, false // no leading zeros: "007"
	}
	w, _ := strconv.Atoi(whole)
	for len(frac) < 2 {
		frac += "0"
	}
	f, _ := strconv.Atoi(frac)
	bp := w*100 + f
	if bp > Buckets {
		return 0, false
	}
	return bp, true
}

// FormatPercent renders basis points as the shortest decimal: 1250 ->
// "12.5", 1000 -> "10", 1 -> "0.01" (prompt.FormatPercent).
func FormatPercent(bp int) string { return prompt.FormatPercent(bp) }

// Bucket is murmur3_x86_32(utf8("<release_id>:<key>"), seed 0) mod 10000
// (prompt.Bucket, the one implementation the server and local evaluators
// share).
func Bucket(releaseID, key string) int { return prompt.Bucket(releaseID, key) }
