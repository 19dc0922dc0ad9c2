package api

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/promptd/promptd/problem"
)

// timestamp renders a time as RFC 3339 in UTC with milliseconds, the one
// time format of the API: 2026-11-29T19:51:35.123Z.
type timestamp = problem.Timestamp

const timeFormat = problem.TimeFormat

// cursor renders a list's next cursor: the string, or null at the end.
func cursor(next string) *string {
	if next == "" {
		return nil
	}
	return &next
}

// list is the shape of every list answer.
type list[T any] struct {
	Items []T     `json:"items"`
	Next  *string `json:"next"`
}

// encodeJSON is the API's JSON encoding: no HTML escaping (configs are
// served as stored), one trailing newline.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// send answers with v as JSON. When the request's Idempotency-Key already
// recorded the answer inside the write's transaction, those exact bytes
// are sent instead, so the first answer and every replay are identical.
func (s *Server) send(c echo.Context, status int, v any) error {
	if st := idemOf(c); st != nil && st.stored != nil {
		return c.Blob(st.stored.Status, st.stored.ContentType, st.stored.Body)
	}
	b, err := encodeJSON(v)
	if err != nil {
		return err
	}
	return c.Blob(status, echo.MIMEApplicationJSON, b)
}

// etagMatches reports whether an If-None-Match header names etag (or is
// "*"), comparing weakly as RFC 9110 asks for If-None-Match.
func etagMatches(ifNoneMatch, etag string) bool {
	if ifNoneMatch == "" {
		return false
	}
	for _, part := range splitList(ifNoneMatch) {
		if part == "*" || trimWeak(part) == trimWeak(etag) {
			return true
		}
	}
	return false
}

func trimWeak(tag string) string {
	if len(tag) > 2 && (tag[:2] == "W/" || tag[:2] == "w/") {
		return tag[2:]
	}
	return tag
}

// splitList splits a comma-separated header value, trimming spaces.
func splitList(v string) []string {
	var out []string
	for _, p := range bytes.Split([]byte(v), []byte(",")) {
		if p = bytes.TrimSpace(p); len(p) > 0 {
			out = append(out, string(p))
		}
	}
	return out
}

// notModified answers 304 with the validators and caching headers only.
func notModified(c echo.Context) error {
	return c.NoContent(http.StatusNotModified)
}
