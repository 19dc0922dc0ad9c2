package api_test

import (
	"encoding/json"
	"testing"
)

// A create from a stale base with merge: disjoint changes merge into a
// version over the latest naming both parents; changes to the same path
// are 409 merge_conflict with base, ours and theirs; without merge the
// stale base stays 409 version_conflict.
func TestCreateVersion_merge_overHTTP(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		base := `{"system": "You help.", "skills": [{"name": "refunds", "instructions": "Within 30 days."}, {"name": "tone", "instructions": "Be brief."}], "model": {"name": "gpt-4o", "temperature": 0.2}}`
		a.ok(a.do("POST", "/v1/agents/support/versions", admin, `{"base_version": 0, "config": `+base+`}`), 201)
		// theirs: v2 changes the temperature and the tone skill
		a.ok(a.do("POST", "/v1/agents/support/versions", admin, `{"base_version": 1, "config": {"system": "You help.", "skills": [{"name": "refunds", "instructions": "Within 30 days."}, {"name": "tone", "instructions": "Be warm."}], "model": {"name": "gpt-4o", "temperature": 0.5}}}`), 201)
		// ours, from v1: the refunds skill and a new memory line
		ours := `{"system": "You help.", "skills": [{"name": "refunds", "instructions": "Within 60 days."}, {"name": "tone", "instructions": "Be brief."}], "model": {"name": "gpt-4o", "temperature": 0.2}, "memory": ["VIP customers first."]}`
		a.problem(a.do("POST", "/v1/agents/support/versions", admin, `{"base_version": 1, "config": `+ours+`}`), 409, "version_conflict")
		dry := a.ok(a.do("POST", "/v1/agents/support/versions?dry_run=true", admin, `{"base_version": 1, "merge": true, "config": `+ours+`}`), 200)
		if dry["version"] != float64(3) {
			t.Fatalf("dry run = %v", dry)
		}
		rec := a.do("POST", "/v1/agents/support/versions", admin, `{"base_version": 1, "merge": true, "config": `+ours+`}`)
		v := a.ok(rec, 201)
		conforms(t, "Version", rec.Body.Bytes())
		var cfg struct {
			Skills []struct{ Name, Instructions string }
			Model  struct{ Temperature float64 }
			Memory []string
		}
		raw, _ := json.Marshal(v["config"])
		_ = json.Unmarshal(raw, &cfg)
		if v["version"] != float64(3) || cfg.Skills[0].Instructions != "Within 60 days." || cfg.Skills[1].Instructions != "Be warm." ||
			cfg.Model.Temperature != 0.5 || len(cfg.Memory) != 1 {
			t.Fatalf("merged = %s", raw)
		}
		if m := v["merge"].(map[string]any); m["base_version"] != float64(1) || m["theirs_version"] != float64(2) {
			t.Fatalf("parents = %v", v["merge"])
		}
		got := a.ok(a.do("GET", "/v1/agents/support/versions/3", runtime, ""), 200)
		if got["merge"] == nil {
			t.Fatalf("read back without parents: %v", got)
		}
		// both change the temperature from v1: a conflict at that path
		clash := `{"system": "You help.", "skills": [{"name": "refunds", "instructions": "Within 30 days."}, {"name": "tone", "instructions": "Be brief."}], "model": {"name": "gpt-4o", "temperature": 0.9}}`
		p := a.problem(a.do("POST", "/v1/agents/support/versions", admin, `{"base_version": 1, "merge": true, "config": `+clash+`}`), 409, "merge_conflict")
		c, _ := json.Marshal(p["conflicts"])
		if string(c) != `[{"base":0.2,"ours":0.9,"path":["model","temperature"],"theirs":0.5}]` || p["latest_version"] != float64(3) {
			t.Fatalf("conflict = %s %v", c, p)
		}
	})
}
