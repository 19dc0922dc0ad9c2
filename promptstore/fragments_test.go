package promptstore_test

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"gorm.io/gorm"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/promptstore"
)

// Concurrent creates of one fragment version from the same base: exactly
// one wins, the others are *FragmentConflict naming the latest; an agent
// version that pins it, created with an import and a merge, records the
// pin for used-by.
func TestFragments_concurrentCreates_oneWins_andPinsAreRecorded(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		s := newStore(t, db, promptstore.Options{})
		ctx := ctxT(t)
		const n = 6
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				_, errs[i] = s.CreateFragmentVersion(ctx, promptstore.CreateFragmentInput{Name: "safety", BaseVersion: 0,
					Body: json.RawMessage(`{"text": "Be safe."}`)})
			}(i)
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			var fc *promptstore.FragmentConflict
			switch {
			case err == nil:
				won++
			case errors.As(err, &fc) && fc.Latest == 1:
			default:
				t.Fatalf("create: %v", err)
			}
		}
		if won != 1 {
			t.Fatalf("%d creates won, want 1", won)
		}
		res, err := s.Import(ctx, promptstore.ImportInput{Mode: promptstore.ImportPartial, Items: []promptstore.ImportItem{
			{Agent: "imported", BaseVersion: 0, Config: json.RawMessage(`{"system": "{{> s}}", "fragments": {"s": {"name": "safety", "version": 1}}}`)},
			{Agent: "missing", BaseVersion: 0, Config: json.RawMessage(`{"system": "{{> s}}", "fragments": {"s": {"name": "safety", "version": 9}}}`)},
		}})
		if err != nil || res.Results[0].Status != "created" || res.Results[1].Status != "invalid" || res.Results[1].Error.Field != "config.fragments.s" {
			t.Fatalf("import: %+v %v", res, err)
		}
		if _, err := s.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "imported", BaseVersion: 1,
			Config: json.RawMessage(`{"system": "{{> s}}", "memory": ["m"], "fragments": {"s": {"name": "safety", "version": 1}}}`)}); err != nil {
			t.Fatal(err)
		}
		// A stale create from base 1 changing system merges over v2's memory, its reference pinned anew.
		v, err := s.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "imported", BaseVersion: 1, Merge: true,
			Config: json.RawMessage(`{"system": "{{> s}} merged", "fragments": {"s": {"name": "safety", "version": 1}}}`)})
		if err != nil || v.Version != 3 || v.Merge == nil {
			t.Fatalf("merged create: %v %v", v, err)
		}
		var merged struct {
			Memory    []string                  `json:"memory"`
			Fragments map[string]map[string]any `json:"fragments"`
		}
		_ = json.Unmarshal(v.Config, &merged)
		if len(merged.Memory) != 1 || merged.Fragments["s"]["text"] != "Be safe." {
			t.Fatalf("merged config %s", v.Config)
		}
		uses, _, err := s.UsedBy(ctx, "safety", 1, promptstore.Page{Limit: 10})
		if err != nil || len(uses) != 3 || uses[0].Agent != "imported" || uses[0].Version != 1 || uses[2].Version != 3 {
			t.Fatalf("used-by: %+v %v", uses, err)
		}
	})
}
