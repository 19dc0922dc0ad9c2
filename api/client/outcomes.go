package client

import (
	"context"
	"net/http"
	"time"
)

// Outcome is what a runtime reports about one answer it served from a
// release arm (api/openapi.yaml, Exposures and outcomes). Reason is why the caller
// got the arm: "bucket", "override" or "pinned"; only bucket outcomes
// count for a guard. Score (0..1) and LatencyMs are optional.
type Outcome struct {
	OutcomeID string    `json:"outcome_id,omitempty"`
	Agent     string    `json:"agent"`
	Env       string    `json:"env"`
	ReleaseID string    `json:"release_id"`
	Arm       string    `json:"arm"`
	Version   int       `json:"version"`
	Reason    string    `json:"reason"`
	Success   bool      `json:"success"`
	Score     *float64  `json:"score,omitempty"`
	LatencyMs *int64    `json:"latency_ms,omitempty"`
	At        time.Time `json:"at"`
}

// OutcomeReport is the answer to ReportOutcomes.
type OutcomeReport struct {
	Accepted   int `json:"accepted"`
	Duplicates int `json:"duplicates"`
}

// ReportOutcomes sends 1..1,000 outcomes in one batch (runtime;
// idempotent). An invalid item rejects the batch (ErrInvalid naming
// items[i].field); outcome ids already reported count as duplicates.
func (c *Client) ReportOutcomes(ctx context.Context, items []Outcome) (*OutcomeReport, error) {
	var r OutcomeReport
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/v1/outcomes", body: map[string]any{"items": items}, idempotent: true}, &r)
	return ret(&r, err)
}
