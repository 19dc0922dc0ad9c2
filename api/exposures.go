package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/exposure"
	"github.com/promptd/promptd/prompt"
)

// exposures is the exposure service, or 500 internal when none is wired.
// exposed counts a resolve or assemble answer this server gave (written
// by the exposure service's next flush).
func (s *Server) exposed(agent, env string, version int, tr *prompt.Trace) {
	id, arm := "", ""
	if tr != nil {
		id, arm = tr.ID, tr.Arm
	}
	s.rt.Exposures.Count(agent, env, version, id, arm)
}

// parseAt reads an item's RFC 3339 time.
func parseAt(field, v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, invalidField(field, "%s must be an RFC 3339 time", field)
	}
	return t, nil
}

// exposureItem is one item of POST /v1/exposures.
type exposureItem struct {
	Agent     string `json:"agent"`
	Env       string `json:"env"`
	Version   int    `json:"version"`
	ReleaseID string `json:"release_id"`
	Arm       string `json:"arm"`
	Count     int64  `json:"count"`
	At        string `json:"at"`
}

// itemsRequest is the body of POST /v1/exposures and /v1/outcomes.
type itemsRequest struct {
	Items []json.RawMessage `json:"items"`
}

// decodeItems decodes the items of a report, each strictly (an unknown
// field is items[i].x), through each.
func decodeItems(c echo.Context, each func(i int, raw []byte, prefix string) error) (int, error) {
	var req itemsRequest
	if err := decode(c, &req); err != nil {
		return 0, err
	}
	if len(req.Items) == 0 || len(req.Items) > exposure.MaxItems {
		return 0, invalidField("items", "items must hold 1..%d items", exposure.MaxItems)
	}
	for i, raw := range req.Items {
		if err := each(i, raw, fmt.Sprintf("items[%d].", i)); err != nil {
			return 0, err
		}
	}
	return len(req.Items), nil
}

// handleRecordExposures: POST /v1/exposures (runtime; Idempotency-Key
// required, reserved in the write's transaction). 200 {"accepted": n}.
func (s *Server) handleRecordExposures(c echo.Context) error {
	xs := s.rt.Exposures
	if idemOf(c) == nil {
		return invalidField(headerIdempotencyKey, "POST /v1/exposures requires an Idempotency-Key")
	}
	var items []exposure.Item
	if _, err := decodeItems(c, func(i int, raw []byte, p string) error {
		var it exposureItem
		if err := decodeObject(raw, p, &it); err != nil {
			return err
		}
		at, err := parseAt(p+"at", it.At)
		if err != nil {
			return err
		}
		if err := s.allow(c, it.Agent, it.Env, ""); err != nil { // the token's scope
			return err
		}
		items = append(items, exposure.Item{Agent: it.Agent, Env: it.Env, Version: it.Version, ReleaseID: it.ReleaseID,
			Arm: it.Arm, Count: it.Count, At: at})
		return nil
	}); err != nil {
		return err
	}
	res, err := xs.Record(c.Request().Context(), items, recordAnswer(s, c, http.StatusOK, func(a exposure.Accepted) any { return a }))
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return s.send(c, http.StatusOK, res)
}

// exposureRow is one minute's count as the API shows it.
type exposureRow struct {
	Minute    timestamp `json:"minute"`
	ReleaseID *string   `json:"release_id"`
	Version   int       `json:"version"`
	Arm       *string   `json:"arm"`
	Count     int64     `json:"count"`
}

func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// handleListExposures: GET /v1/agents/{agent}/envs/{env}/exposures?from=&to=
// (runtime): per-minute counts in [from, to), oldest first; default the
// last hour, at most 7 days.
func (s *Server) handleListExposures(c echo.Context) error {
	xs := s.rt.Exposures
	agent, env, err := envPath(c)
	if err != nil {
		return err
	}
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	to, from := time.Now(), time.Time{}
	if v := c.QueryParam("to"); v != "" || c.QueryParams().Has("to") {
		if to, err = parseAt("to", v); err != nil {
			return err
		}
	}
	from = to.Add(-exposure.DefaultRange)
	if v := c.QueryParam("from"); v != "" || c.QueryParams().Has("from") {
		if from, err = parseAt("from", v); err != nil {
			return err
		}
	}
	// (the route's scope decision checked the path's agent and env)
	rows, next, err := xs.List(c.Request().Context(), exposure.ListInput{Agent: agent, Env: env, From: from, To: to, Page: page})
	if err != nil {
		return err
	}
	out := list[exposureRow]{Items: make([]exposureRow, len(rows)), Next: cursor(next)}
	for i, r := range rows {
		out.Items[i] = exposureRow{Minute: timestamp(r.Minute), ReleaseID: orNull(r.ReleaseID), Version: r.Version,
			Arm: orNull(r.Arm), Count: r.Count}
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-cache")
	return s.send(c, http.StatusOK, out)
}

// outcomeItem is one item of POST /v1/outcomes.
type outcomeItem struct {
	OutcomeID string   `json:"outcome_id"`
	Agent     string   `json:"agent"`
	Env       string   `json:"env"`
	ReleaseID string   `json:"release_id"`
	Arm       string   `json:"arm"`
	Version   int      `json:"version"`
	Reason    string   `json:"reason"`
	Success   *bool    `json:"success"`
	Score     *float64 `json:"score"`
	LatencyMs *int64   `json:"latency_ms"`
	At        string   `json:"at"`
}

// handleRecordOutcomes: POST /v1/outcomes (runtime; Idempotency-Key when
// given). 200 {"accepted": n, "duplicates": n}; one bad item rejects the
// batch, naming its field.
func (s *Server) handleRecordOutcomes(c echo.Context) error {
	xs := s.rt.Exposures
	var items []exposure.Outcome
	if _, err := decodeItems(c, func(i int, raw []byte, p string) error {
		var it outcomeItem
		if err := decodeObject(raw, p, &it); err != nil {
			return err
		}
		if it.Success == nil {
			return invalidField(p+"success", "%ssuccess is required: true or false", p)
		}
		at, err := parseAt(p+"at", it.At)
		if err != nil {
			return err
		}
		if err := s.allow(c, it.Agent, it.Env, ""); err != nil { // the token's scope
			return err
		}
		items = append(items, exposure.Outcome{OutcomeID: it.OutcomeID, Agent: it.Agent, Env: it.Env, ReleaseID: it.ReleaseID,
			Arm: it.Arm, Version: it.Version, Reason: it.Reason, Success: *it.Success, Score: it.Score, LatencyMs: it.LatencyMs, At: at})
		return nil
	}); err != nil {
		return err
	}
	res, err := xs.RecordOutcomes(c.Request().Context(), items, recordAnswer(s, c, http.StatusOK, func(r exposure.OutcomeResult) any { return r }))
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return s.send(c, http.StatusOK, res)
}
