package api

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/labstack/echo/v4"
)

// decimal reads a member that must be a JSON number and returns it as
// written ("12.50"), for the domain to parse exactly (percentages are never
// taken through float arithmetic). A string, boolean, object or array is
// 400 invalid_field; a missing member is "" when optional.
func decimal(raw json.RawMessage, field string, required bool) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		if required {
			return "", invalidField(field, "%s is required: a number", field)
		}
		return "", nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", invalidField(field, "%s must be a number", field)
	}
	n, ok := v.(json.Number)
	if !ok {
		return "", invalidField(field, "%s must be a number, not %s", field, jsonKind(v))
	}
	return n.String(), nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	case []any:
		return "an array"
	}
	return "an object"
}

// msDuration converts a member in milliseconds, checked against lo..hi (both
// inclusive), to a duration; nil gives def. Out of range: 400
// invalid_field naming the member.
func msDuration(v *int64, field string, lo, hi, def time.Duration) (time.Duration, error) {
	if v == nil {
		return def, nil
	}
	if *v < lo.Milliseconds() || *v > hi.Milliseconds() {
		return 0, invalidField(field, "%s must be %d..%d", field, lo.Milliseconds(), hi.Milliseconds())
	}
	return time.Duration(*v) * time.Millisecond, nil
}

// queryInt reads an optional non-negative integer query parameter
// (plain digits), else 400 invalid_field naming it.
func queryInt(c echo.Context, name string, def int64) (int64, error) {
	if !c.QueryParams().Has(name) {
		return def, nil
	}
	v := c.QueryParam(name)
	if v == "0" {
		return 0, nil
	}
	n, ok := positive(v, 1<<53)
	if !ok {
		return 0, invalidField(name, "%s must be an integer >= 0", name)
	}
	return int64(n), nil
}
