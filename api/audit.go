package api

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/promptstore"
)

// auditEvent is one audit record.
type auditEvent struct {
	ID       int64           `json:"id"`
	At       timestamp       `json:"at"`
	Actor    string          `json:"actor"`
	Instance string          `json:"instance"`
	Action   string          `json:"action"`
	Resource string          `json:"resource"`
	Details  json.RawMessage `json:"details"`
	TraceID  string          `json:"trace_id"`
}

// handleAudit: GET /v1/audit?agent=&env=&session_id=&actor=&action=&trace_id=&since=&limit=&order=
// (admin), oldest first after the event id since; order=desc: newest
// first, before since. The next cursor is the last event id of the page:
// pass it as since (or cursor) for the next.
func (s *Server) handleAudit(c echo.Context) error {
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	f := audit.Filter{Limit: page.Limit}
	for _, q := range []struct {
		name string
		dst  *string
	}{{"agent", &f.Agent}, {"env", &f.Env}, {"session_id", &f.SessionID}} {
		if v := c.QueryParam(q.name); v != "" || c.QueryParams().Has(q.name) {
			if err := ident.Validate(q.name, v); err != nil {
				return err
			}
			*q.dst = v
		}
	}
	if c.QueryParams().Has("actor") {
		f.Actor = c.QueryParam("actor")
		if err := promptstore.ValidateOpaque("actor", f.Actor); err != nil {
			return err
		}
	}
	if f.Action = c.QueryParam("action"); !validAction(f.Action) {
		return invalidField("action", "action is an event name such as version.created")
	}
	if f.TraceID = c.QueryParam("trace_id"); !validTraceID(f.TraceID) {
		return invalidField("trace_id", "trace_id is a W3C trace id: 32 lower-case hex digits, not all zero")
	}
	if f.Since, err = sinceOf(c); err != nil {
		return err
	}
	switch c.QueryParam("order") {
	case "", "asc":
	case "desc":
		f.Desc = true
	default:
		return invalidField("order", "order is asc (oldest first, the default) or desc (newest first)")
	}
	events, next, err := s.rt.Audit(c.Request().Context(), f)
	if err != nil {
		return err
	}
	out := list[auditEvent]{Items: make([]auditEvent, len(events))}
	for i, e := range events {
		out.Items[i] = auditEvent{ID: e.ID, At: timestamp(e.At), Actor: e.Actor, Instance: e.Instance,
			Action: e.Action, Resource: e.Resource, Details: e.Details, TraceID: e.TraceID}
	}
	if next > 0 {
		out.Next = cursor(strconv.FormatInt(next, 10))
	}
	return s.send(c, http.StatusOK, out)
}

// sinceOf reads since (or its alias cursor): an event id, 0 by default.
func sinceOf(c echo.Context) (int64, error) {
	since, cur := c.QueryParam("since"), c.QueryParam("cursor")
	if since != "" && cur != "" && since != cur {
		return 0, invalidField("cursor", "since and cursor name different events; send one")
	}
	v, field := since, "since"
	if v == "" {
		v, field = cur, "cursor"
	}
	if v == "" || v == "0" {
		return 0, nil
	}
	n, ok := positive(v, 1<<62)
	if !ok {
		return 0, invalidField(field, "%s must be an event id (a non-negative integer)", field)
	}
	return int64(n), nil
}

// validAction: empty (any) or an event name of [a-z0-9._], up to 64.
func validAction(a string) bool {
	if len(a) > 64 {
		return false
	}
	for i := 0; i < len(a); i++ {
		c := a[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

// validTraceID: empty (any) or a W3C trace id (32 lower-case hex digits,
// not all zero).
func validTraceID(t string) bool {
	if t == "" {
		return true
	}
	if len(t) != 32 || t == "00000000000000000000000000000000" {
		return false
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
