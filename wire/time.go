package wire

import (
	"encoding/json"
	"time"
)

// TimeFormat is the layout of every time in promptd's answers: RFC 3339 in
// UTC with milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Time is a time as promptd's answers show it. It encodes in TimeFormat
// (in UTC) and decodes any RFC 3339 time.
type Time time.Time

// At is t as a Time.
func At(t time.Time) Time { return Time(t) }

// Time is t as a time.Time.
func (t Time) Time() time.Time { return time.Time(t) }

// IsZero reports whether t is the zero time.
func (t Time) IsZero() bool { return time.Time(t).IsZero() }

// String is t in TimeFormat.
func (t Time) String() string { return time.Time(t).UTC().Format(TimeFormat) }

// MarshalJSON encodes t in TimeFormat.
func (t Time) MarshalJSON() ([]byte, error) {
	return []byte(`"` + t.String() + `"`), nil
}

// UnmarshalJSON decodes an RFC 3339 time (null leaves t as it is).
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	*t = Time(v)
	return nil
}
