package exposure

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestMetrics_pastTheSeriesCap_countUnderVersionOther(t *testing.T) {
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
