package wire_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/promptd/promptd/wire"
)

func TestTime_alwaysHasMilliseconds_inUTC(t *testing.T) {
	for _, tc := range []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), `"2026-01-02T03:04:05.000Z"`},
		{time.Date(2026, 1, 2, 3, 4, 5, 120e6, time.UTC), `"2026-01-02T03:04:05.120Z"`},
		{time.Date(2026, 1, 2, 4, 4, 5, 999999999, time.FixedZone("", 3600)), `"2026-01-02T03:04:05.999Z"`},
	} {
		b, err := json.Marshal(wire.At(tc.in))
		if err != nil || string(b) != tc.want {
			t.Errorf("%v: %s, %v; want %s", tc.in, b, err, tc.want)
		}
		// Control: time.Time's own encoding drops the zeros this format keeps.
		if std, _ := json.Marshal(tc.in.UTC()); tc.in.Nanosecond() == 0 && string(std) == tc.want {
			t.Errorf("%v: time.Time already encodes as %s; the test shows nothing", tc.in, std)
		}
	}
}

func TestTime_decodesRFC3339_andNullLeavesItZero(t *testing.T) {
	var v struct{ At, Null wire.Time }
	if err := json.Unmarshal([]byte(`{"At":"2026-01-02T04:04:05.5+01:00","Null":null}`), &v); err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 1, 2, 3, 4, 5, 5e8, time.UTC); !v.At.Time().Equal(want) || !v.Null.IsZero() {
		t.Fatalf("At = %v, Null = %v", v.At, v.Null)
	}
	if err := json.Unmarshal([]byte(`{"At":"yesterday"}`), &v); err == nil {
		t.Fatal("a time that is not RFC 3339 decoded")
	}
}
