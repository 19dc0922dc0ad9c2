package guard_test

import (
	"fmt"

	"github.com/promptd/promptd/release/guard"
)

// A guard on the failure rate that tolerates 2 points: with 1,000 bucket
// outcomes an arm, a candidate failing 12 % against a baseline's 5 % trips
// it.
func Example() {
	max := 2.0
	c, err := guard.Parse(guard.Input{Metric: guard.FailureRate, MaxDegradation: &max, Action: guard.Rollback})
	if err != nil {
		panic(err)
	}
	d := guard.Evaluate(c, []guard.Row{
		{Arm: guard.Baseline, N: 1000, Failures: 50},
		{Arm: guard.Candidate, N: 1000, Failures: 120},
	})
	fmt.Println(d.State, d.Stats.Baseline.Rate, d.Stats.Candidate.Rate, d.Stats.Difference.Estimate)
	fmt.Println(d.Stats.Difference.Lower > max)
	// Output:
	// tripped 5 12 7
	// true
}
