package release

import "testing"

func TestBucket_apiTestVectors(t *testing.T) {
	if h := murmurHello(); h != 0x248bfa47 {
		t.Fatalf("murmur3(hello) = %#x", h)
	}
	for _, c := range []struct {
		id, key string
		want    int
	}{{"rel_1", "user-1", 771}, {"rel_1", "user-2", 8669}, {"rel_1", "alice@example.com", 34}, {"rel_7f3a", "session-42", 6397}} {
		if got := Bucket(c.id, c.key); got != c.want {
			t.Errorf("Bucket(%s:%s) = %d, want %d", c.id, c.key, got, c.want)
		}
	}
}

func TestParsePercent_exactDecimal(t *testing.T) {
	good := map[string]int{"0": 0, "10": 1000, "12.5": 1250, "12.50": 1250, "0.01": 1, "99.99": 9999, "100": 10000, "100.00": 10000, "33.3": 3330}
	for in, want := range good {
		if got, ok := ParsePercent(in); !ok || got != want {
			t.Errorf("ParsePercent(%q) = %d %v, want %d", in, got, ok, want)
		}
		if back, _ := ParsePercent(FormatPercent(want)); back != want {
			t.Errorf("FormatPercent(%d) = %q does not parse back", want, FormatPercent(want))
		}
	}
	for _, in := range []string{"", "-1", "100.01", "101", "12.345", "1e1", ".5", "5.", "+5", "0x10", "007", "12,5", " 5", "NaN", "1000"} {
		if got, ok := ParsePercent(in); ok {
			t.Errorf("ParsePercent(%q) = %d, want rejection", in, got)
		}
	}
	if FormatPercent(1250) != "12.5" || FormatPercent(1) != "0.01" || FormatPercent(10000) != "100" {
		t.Fatal("FormatPercent")
	}
}

func TestTransitions_exhaustive(t *testing.T) {
	states := []State{Running, Paused, Promoted, RolledBack}
	actions := []Action{ActPause, ActResume, ActPromote, ActRollback, ActPercent, ActStep}
	type want struct {
		to       State
		noop, ok bool
	}
	table := map[State]map[Action]want{
		Running:    {ActPause: {Paused, false, true}, ActResume: {Running, true, true}, ActPromote: {Promoted, false, true}, ActRollback: {RolledBack, false, true}, ActPercent: {Running, false, true}, ActStep: {Running, false, true}},
		Paused:     {ActPause: {Paused, true, true}, ActResume: {Running, false, true}, ActPromote: {Promoted, false, true}, ActRollback: {RolledBack, false, true}, ActPercent: {Paused, false, true}, ActStep: {Paused, false, false}},
		Promoted:   {ActPause: {Promoted, false, false}, ActResume: {Promoted, false, false}, ActPromote: {Promoted, true, true}, ActRollback: {Promoted, false, false}, ActPercent: {Promoted, false, false}, ActStep: {Promoted, false, false}},
		RolledBack: {ActPause: {RolledBack, false, false}, ActResume: {RolledBack, false, false}, ActPromote: {RolledBack, false, false}, ActRollback: {RolledBack, true, true}, ActPercent: {RolledBack, false, false}, ActStep: {RolledBack, false, false}},
	}
	for _, s := range states {
		for _, a := range actions {
			to, noop, ok := Next(s, a)
			if w := table[s][a]; to != w.to || noop != w.noop || ok != w.ok {
				t.Errorf("%s --%s--> (%s noop=%v ok=%v), want %+v", s, a, to, noop, ok, w)
			}
		}
	}
}
