package release

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/promptd/promptd/wire"
)

// Step is one scheduled ramp step as the API takes and shows it: a new
// percent, or a promotion, "after" the previous step (or the creation).
type Step = wire.Step

// Limits on steps.
const (
	MaxSteps = 20
	MinAfter = time.Second
	MaxAfter = 90 * 24 * time.Hour
)

type step struct {
	bp      int
	promote bool
	after   time.Duration
}

// parseSteps validates steps against the starting percent: each is a
// percent or a promotion (the last one only), percents never decrease,
// "after" is a Go duration within limits.
func parseSteps(in []Step, startBP int) ([]step, error) {
	if len(in) > MaxSteps {
		return nil, invalidf(CodeInvalidSteps, "steps", "at most %d steps", MaxSteps)
	}
	out := make([]step, 0, len(in))
	prev := startBP
	for i, s := range in {
		field := fmt.Sprintf("steps[%d]", i)
		d, err := time.ParseDuration(s.After)
		if err != nil || d < MinAfter || d > MaxAfter {
			return nil, invalidf(CodeInvalidSteps, field+".after", "after must be a duration from %v to %v, like \"10m\"", MinAfter, MaxAfter)
		}
		st := step{after: d, promote: s.Promote}
		switch {
		case s.Promote && s.Percent != "":
			return nil, invalidf(CodeInvalidSteps, field, "a step either sets a percent or promotes")
		case s.Promote && i != len(in)-1:
			return nil, invalidf(CodeInvalidSteps, field, "only the last step may promote")
		case !s.Promote:
			bp, ok := ParsePercent(s.Percent.String())
			if !ok {
				return nil, invalidf(CodeInvalidSteps, field+".percent", "percent must be 0..100 with at most 2 decimals")
			}
			if bp < prev {
				return nil, invalidf(CodeInvalidSteps, field+".percent", "percents must not decrease across steps")
			}
			st.bp, prev = bp, bp
		}
		out = append(out, st)
	}
	return out, nil
}

func (s step) api() Step {
	out := Step{After: s.after.String(), Promote: s.promote}
	if !s.promote {
		out.Percent = json.Number(FormatPercent(s.bp))
	}
	return out
}

func encodeSteps(steps []step) string {
	api := make([]Step, len(steps))
	for i, s := range steps {
		api[i] = s.api()
	}
	b, _ := json.Marshal(api)
	return string(b)
}

func decodeSteps(raw string) []step {
	var api []Step
	_ = json.Unmarshal([]byte(raw), &api)
	out := make([]step, 0, len(api))
	for _, a := range api {
		d, _ := time.ParseDuration(a.After)
		bp, _ := ParsePercent(a.Percent.String())
		out = append(out, step{bp: bp, promote: a.Promote, after: d})
	}
	return out
}
