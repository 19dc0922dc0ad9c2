package api

import (
	"encoding/json"
	"testing"
	"time"
)

func TestTimestamp_isRFC3339UTCWithMilliseconds(t *testing.T) {
	for in, want := range map[time.Time]string{
		time.Date(2026, 11, 29, 19, 51, 35, 123456789, time.UTC):                     `"2026-11-29T19:51:35.123Z"`,
		time.Date(2026, 11, 29, 20, 51, 35, 0, time.FixedZone("CET", 3600)):          `"2026-11-29T19:51:35.000Z"`,
		time.Date(2026, 1, 2, 3, 4, 5, 7_000_000, time.FixedZone("X", -5*3600-1800)): `"2026-01-02T08:34:05.007Z"`,
	} {
		b, err := json.Marshal(struct{ At timestamp }{timestamp(in)})
		if err != nil || string(b) != `{"At":`+want+`}` {
			t.Errorf("%v -> %s, %v; want %s", in, b, err, want)
		}
	}
}

func TestEtagMatches(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   bool
	}{
		{`"a"`, true}, {`W/"a"`, true}, {`"b", "a"`, true}, {`*`, true}, {`"b"`, false}, {``, false}, {`a`, false},
	} {
		if got := etagMatches(tc.header, `"a"`); got != tc.want {
			t.Errorf("If-None-Match %q: %v", tc.header, got)
		}
	}
}
