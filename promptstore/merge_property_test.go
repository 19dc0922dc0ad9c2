package promptstore_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/promptd/promptd/internal/canonjson"
	"github.com/promptd/promptd/jsonmerge"
	"github.com/promptd/promptd/promptstore"
)

var mergeCases = flag.Int("merge.cases", 1500, "generated config pairs of the merge property test")

// edit is one change of a config, at path (jsonmerge's Path.String form).
type edit struct {
	path  string
	apply func(c map[string]any)
	del   bool // a deletion (two deletions of one element agree)
}

// genConfig is a prompt config: system, skills (keyed by name), tools
// (keyed by function.name), model settings, memory (unkeyed), variables.
func genConfig(r *rand.Rand) map[string]any {
	c := map[string]any{"system": "You help {{company}}.", "model": map[string]any{"name": "gpt-4o", "temperature": 0.2},
		"variables": map[string]any{"company": map[string]any{"default": "ACME"}}}
	var skills, tools []any
	for i := range 1 + r.IntN(4) {
		skills = append(skills, map[string]any{"name": fmt.Sprint("s", i), "instructions": fmt.Sprint("do ", i)})
	}
	for i := range r.IntN(3) {
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{"name": fmt.Sprint("t", i), "description": "tool"}})
	}
	c["skills"] = skills
	if len(tools) > 0 {
		c["tools"] = tools
	}
	c["memory"] = []any{"first"}
	return c
}

func elem(arr any, key string, name string) map[string]any {
	for _, e := range arr.([]any) {
		m := e.(map[string]any)
		if key == "function.name" && m["function"].(map[string]any)["name"] == name || m[key] == name {
			return m
		}
	}
	return nil
}

// edits are the changes one side may make to base; side tags new values
// so that both sides' values at one path differ.
func edits(base map[string]any, side string, r *rand.Rand) []edit {
	var out []edit
	out = append(out, edit{path: "system", apply: func(c map[string]any) { c["system"] = "You help {{company}}, " + side + "." }})
	out = append(out, edit{path: "model.temperature", apply: func(c map[string]any) {
		c["model"].(map[string]any)["temperature"] = map[string]float64{"o": 0.5, "t": 0.7}[side]
	}})
	out = append(out, edit{path: "model.max_tokens", apply: func(c map[string]any) {
		c["model"].(map[string]any)["max_tokens"] = map[string]int{"o": 100, "t": 200}[side]
	}})
	out = append(out, edit{path: "memory", apply: func(c map[string]any) { c["memory"] = []any{"first", "from " + side} }})
	out = append(out, edit{path: "variables.company.default", apply: func(c map[string]any) {
		c["variables"].(map[string]any)["company"].(map[string]any)["default"] = "Co " + side
	}})
	out = append(out, edit{path: "skills[name=" + side + "new]", apply: func(c map[string]any) {
		c["skills"] = append(c["skills"].([]any), map[string]any{"name": side + "new", "instructions": "new"})
	}})
	for _, s := range base["skills"].([]any) {
		name := s.(map[string]any)["name"].(string)
		out = append(out, edit{path: "skills[name=" + name + "].instructions", apply: func(c map[string]any) {
			elem(c["skills"], "name", name)["instructions"] = "changed by " + side
		}})
		out = append(out, edit{path: "skills[name=" + name + "]", del: true, apply: func(c map[string]any) {
			c["skills"] = slices.DeleteFunc(c["skills"].([]any), func(e any) bool { return e.(map[string]any)["name"] == name })
		}})
	}
	if tools, ok := base["tools"]; ok {
		for _, tl := range tools.([]any) {
			name := tl.(map[string]any)["function"].(map[string]any)["name"].(string)
			out = append(out, edit{path: `tools["function.name"=` + name + "].function.description", apply: func(c map[string]any) {
				elem(c["tools"], "function.name", name)["function"].(map[string]any)["description"] = "by " + side
			}})
		}
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	// a side's edits never nest in each other (an element deleted is not
	// also edited)
	var pick []edit
	for _, e := range out[:1+r.IntN(4)] {
		if !slices.ContainsFunc(pick, func(p edit) bool { return overlaps(p.path, e.path) }) {
			pick = append(pick, e)
		}
	}
	return pick
}

func overlaps(a, b string) bool {
	return a == b || strings.HasPrefix(b, a+".") || strings.HasPrefix(a, b+".")
}

func shorter(a, b string) string {
	if len(a) < len(b) {
		return a
	}
	return b
}

func clone(c map[string]any) map[string]any {
	b, _ := json.Marshal(c)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// canonicalSorted is c's canonical JSON with skills and tools sorted by
// key (the merge's order of additions is its own, tested in jsonmerge).
func canonicalSorted(t *testing.T, raw []byte) string {
	var c map[string]any
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"skills", "tools"} {
		if arr, ok := c[k].([]any); ok {
			sort.Slice(arr, func(i, j int) bool { return fmt.Sprint(arr[i]) < fmt.Sprint(arr[j]) })
		}
	}
	b, _ := json.Marshal(c)
	out, err := canonjson.Canonical(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

type mergeFunc func(base, ours, theirs []byte) ([]byte, []jsonmerge.Conflict, error)

func configMerge(base, ours, theirs []byte) ([]byte, []jsonmerge.Conflict, error) {
	return jsonmerge.Merge(base, ours, theirs, jsonmerge.Options{Keys: promptstore.MergeKeys})
}

// checkMergeProperties runs n generated cases through merge and reports
// the first violation: (1) edits on disjoint paths merge into base with
// both sides' edits applied; (2) otherwise the conflicts are exactly the
// overlapping paths (the shorter of each pair) where the sides disagree
// (two deletions of one element agree); (3) no edit outside an overlap is
// ever among the conflicts, nor lost from a clean merge.
func checkMergeProperties(t *testing.T, n int, merge mergeFunc) (clean, conflicted int, err error) {
	r := rand.New(rand.NewPCG(7, 11))
	for i := range n {
		base := genConfig(r)
		ours, theirs := edits(base, "o", r), edits(base, "t", r)
		o, th, both := clone(base), clone(base), clone(base)
		for _, e := range ours {
			e.apply(o)
			e.apply(both)
		}
		for _, e := range theirs {
			e.apply(th)
		}
		want := map[string]bool{}
		for _, a := range ours {
			for _, b := range theirs {
				if overlaps(a.path, b.path) && !(a.del && b.del && a.path == b.path) {
					want[shorter(a.path, b.path)] = true
				}
			}
		}
		for _, e := range theirs {
			if !slices.ContainsFunc(ours, func(a edit) bool { return overlaps(a.path, e.path) }) {
				e.apply(both)
			}
		}
		bb, _ := json.Marshal(base)
		ob, _ := json.Marshal(o)
		tb, _ := json.Marshal(th)
		merged, conflicts, merr := merge(bb, ob, tb)
		if merr != nil {
			return clean, conflicted, fmt.Errorf("case %d: %v", i, merr)
		}
		got := map[string]bool{}
		for _, c := range conflicts {
			got[c.Path.String()] = true
		}
		if len(want) == 0 {
			clean++
			bj, _ := json.Marshal(both)
			if len(conflicts) > 0 || canonicalSorted(t, merged) != canonicalSorted(t, bj) {
				return clean, conflicted, fmt.Errorf("case %d: disjoint edits %v / %v: merged %s, want %s (conflicts %v)", i,
					paths(ours), paths(theirs), merged, bj, got)
			}
			continue
		}
		conflicted++
		if fmt.Sprint(sortedKeys(got)) != fmt.Sprint(sortedKeys(want)) {
			return clean, conflicted, fmt.Errorf("case %d: edits %v / %v: conflicts %v, want %v", i, paths(ours), paths(theirs), sortedKeys(got), sortedKeys(want))
		}
	}
	return clean, conflicted, nil
}

func paths(es []edit) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.path
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestMerge_generatedConfigs_mergeDisjointChanges_conflictExactlyOnOverlaps(t *testing.T) {
	clean, conflicted, err := checkMergeProperties(t, *mergeCases, configMerge)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d generated config pairs: %d merged clean, %d with conflicts", *mergeCases, clean, conflicted)
	if clean < *mergeCases/10 || conflicted < *mergeCases/10 {
		t.Fatalf("the generator is lopsided: %d clean, %d conflicted", clean, conflicted)
	}
}

// The control: a merge that drops theirs' changes (answers ours) fails the
// property check.
func TestMerge_generatedConfigs_controlCatchesADroppedChange(t *testing.T) {
	drop := func(base, ours, theirs []byte) ([]byte, []jsonmerge.Conflict, error) { return ours, nil, nil }
	if _, _, err := checkMergeProperties(t, 200, drop); err == nil {
		t.Fatal("a merge that drops theirs' changes passed the property check")
	}
}
