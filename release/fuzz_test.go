package release

import "testing"

func FuzzParsePercent(f *testing.F) {
	for _, s := range []string{"0", "10", "12.5", "100", "100.01", "-1", "1e2", "0.001", "007"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		bp, ok := ParsePercent(s)
		if !ok {
			return
		}
		if bp < 0 || bp > Buckets {
			t.Fatalf("%q -> %d", s, bp)
		}
		if back, ok := ParsePercent(FormatPercent(bp)); !ok || back != bp {
			t.Fatalf("%q -> %d -> %q -> %d", s, bp, FormatPercent(bp), back)
		}
	})
}
