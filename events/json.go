package events

import (
	"encoding/json"
	"time"

	"github.com/promptd/promptd/audit"
)

// TimeFormat is how feed events (and the API) write times: RFC 3339 UTC
// with milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Time is a time written in TimeFormat.
type Time time.Time

// MarshalJSON writes t in TimeFormat.
func (t Time) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).UTC().Format(TimeFormat) + `"`), nil
}

// FeedEvent is an event of the change feed as readers see it: the JSON of
// GET /v1/events and the data of webhook deliveries.
type FeedEvent struct {
	Seq      int64           `json:"seq"`
	ID       int64           `json:"id"`
	At       Time            `json:"at"`
	Action   string          `json:"action"`
	Agent    string          `json:"agent,omitempty"`
	Env      string          `json:"env,omitempty"`
	Board    string          `json:"board,omitempty"`
	Resource string          `json:"resource"`
	Revision *int64          `json:"revision,omitempty"`
	Details  json.RawMessage `json:"details"`
	Actor    string          `json:"actor,omitempty"`
	Instance string          `json:"instance,omitempty"`
}

// ToFeedEvent shapes a stamped audit event; admin adds who acted and from
// which instance.
func ToFeedEvent(e audit.Stamped, admin bool) FeedEvent {
	out := FeedEvent{Seq: e.Seq, ID: e.ID, At: Time(e.At), Action: e.Action, Agent: e.Agent, Env: e.Env,
		Board: e.Board, Resource: e.Resource, Details: e.Details}
	var d struct {
		Revision *int64 `json:"revision"`
	}
	if json.Unmarshal(e.Details, &d) == nil {
		out.Revision = d.Revision
	}
	if len(out.Details) == 0 {
		out.Details = json.RawMessage("{}")
	}
	if admin {
		out.Actor, out.Instance = e.Actor, e.Instance
	}
	return out
}
