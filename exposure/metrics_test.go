package exposure

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestMetrics_pastTheSeriesCap_countUnderOther(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, 2)
	m.add(map[Key]int64{{Agent: "a", Env: "prod", Version: 1}: 3, {Agent: "a", Env: "prod", Version: 2}: 4})
	m.add(map[Key]int64{{Agent: "a", Env: "prod", Version: 3}: 5})
	m.add(map[Key]int64{{Agent: "a", Env: "prod", Version: 4}: 6, {Agent: "a", Env: "prod", Version: 1}: 1})
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "version" {
					got[l.GetValue()] = mt.GetCounter().GetValue()
				}
			}
		}
	}
	if len(got) != 3 || got["1"] != 4 || got["2"] != 4 || got["other"] != 11 {
		t.Fatalf("series = %v, want 1:4 2:4 other:11", got)
	}
}

// The cap holds for the label set as a whole: series that differ in agent
// or env (not only version) fold too, into one all-"other" series.
func TestMetrics_pastTheSeriesCap_manyAgentsAndEnvs_foldIntoOneSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, 10)
	for i := range 500 {
		m.add(map[Key]int64{{Agent: fmt.Sprintf("agent-%d", i), Env: fmt.Sprintf("env-%d", i), Version: 1, Arm: "candidate"}: 1})
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series, total := 0, 0.0
	for _, f := range fams {
		for _, mt := range f.GetMetric() {
			series++
			total += mt.GetCounter().GetValue()
		}
	}
	if series > 11 || total != 500 {
		t.Fatalf("%d series holding %v servings, want at most 11 (the cap and one other) holding 500", series, total)
	}
}
