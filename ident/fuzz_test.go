package ident

import (
	"strings"
	"testing"
)

func FuzzValidate(f *testing.F) {
	for _, s := range []string{"agent-1", "a.b_c", "{x}", "a:b", "a b", "", strings.Repeat("x", 200), "order/1:2", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, check := range []struct {
			fn    func(string, string) error
			max   int
			extra string
		}{{Validate, MaxID, ""}, {ValidateResource, MaxResource, ":/"}} {
			if check.fn("f", s) != nil {
				continue
			}
			if len(s) == 0 || len(s) > check.max || strings.ContainsAny(s, "{} \t\r\n") {
				t.Fatalf("accepted %q", s)
			}
			for _, c := range []byte(s) {
				if !alnum(c) && !strings.ContainsRune("._-"+check.extra, rune(c)) {
					t.Fatalf("accepted %q with %q", s, c)
				}
			}
		}
	})
}
