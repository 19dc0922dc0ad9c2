package promptstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/promptstore"
)

func count(t *testing.T, db *gorm.DB, table string) int {
	var n int
	if err := db.Raw("SELECT COUNT(*) FROM " + table).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

func TestImport_chainsItemsPerAgentAndReportsEach(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		s := newStore(t, db, promptstore.Options{})
		ctx := ctxT(t)
		if _, err := s.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "b", BaseVersion: 0, Config: cfg("b1")}); err != nil {
			t.Fatal(err)
		}
		items := []promptstore.ImportItem{
			{Agent: "a", BaseVersion: 0, Config: cfg("a1")},
			{Agent: "a", BaseVersion: 1, Config: cfg("a2")},
			{Agent: "b", BaseVersion: 0, Config: cfg("stale")}, // b is at 1
			{Agent: "b", BaseVersion: 1, Config: cfg("b2")},    // builds on the stale item: not on b1
			{Agent: "c", BaseVersion: 0, Config: json.RawMessage(`{"system": "{{x}}"}`)},
			{Agent: "c", BaseVersion: 1, Config: cfg("c2")}, // builds on the invalid item
			{Agent: "a", BaseVersion: 2, Config: cfg("a3")},
		}
		before := count(t, db, "prompt_versions")
		_, err := s.Import(ctx, promptstore.ImportInput{Mode: promptstore.ImportAllOrNothing, Items: items})
		var rej *promptstore.ImportRejected
		if !errors.As(err, &rej) || rej.Result.Summary.Conflict != 3 || rej.Result.Summary.Invalid != 1 || rej.Result.Summary.Created != 0 {
			t.Fatalf("all_or_nothing: %v", err)
		}
		if count(t, db, "prompt_versions") != before {
			t.Fatal("a rejected import wrote versions")
		}
		res, err := s.Import(ctx, promptstore.ImportInput{Mode: promptstore.ImportPartial, Items: items})
		if err != nil {
			t.Fatal(err)
		}
		// Item 3 was written on top of item 2; item 2 conflicted, so item 3
		// is a conflict too, not a version on top of someone else's b1 (it
		// was "created" before, silently).
		want := []string{"created", "created", "conflict", "conflict", "invalid", "conflict", "created"}
		for i, r := range res.Results {
			if r.Status != want[i] {
				t.Fatalf("item %d: %+v, want %s", i, r, want[i])
			}
		}
		if *res.Results[6].Version != 3 || *res.Results[2].LatestVersion != 1 || *res.Results[3].LatestVersion != 1 ||
			res.Results[3].Error == nil || res.Results[5].Error == nil || *res.Results[5].LatestVersion != 0 ||
			res.Results[4].Error.Code != promptstore.CodeUndeclaredVariable {
			t.Fatalf("results: %+v", res.Results)
		}
		if res.Summary != (promptstore.ImportSummary{Created: 3, Conflict: 3, Invalid: 1}) || res.BatchFingerprint == "" {
			t.Fatalf("summary %+v fp %q", res.Summary, res.BatchFingerprint)
		}
		v, err := s.GetVersion(ctx, "a", 3)
		if err != nil || string(v.Config) != `{"system":"a3"}` {
			t.Fatalf("a v3: %+v %v", v, err)
		}
		if v, err := s.GetVersion(ctx, "b", 1); err != nil || string(v.Config) != `{"system":"b1"}` {
			t.Fatalf("b v1: %+v %v", v, err)
		}
		if _, err := s.GetVersion(ctx, "b", 2); !errors.Is(err, promptstore.ErrVersionNotFound) {
			t.Fatalf("b v2 exists: %v", err)
		}
		// The chain continues from the stored versions.
		if _, err := s.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "b", BaseVersion: 1, Config: cfg("b2")}); err != nil {
			t.Fatal(err)
		}
		var n int
		db.Raw(`SELECT COUNT(*) FROM audit_events WHERE action = 'import.applied' AND details LIKE ?`, "%"+res.BatchFingerprint+"%").Scan(&n)
		if n != 1 {
			t.Fatalf("import.applied events with the fingerprint: %d", n)
		}
	})
}

func TestImport_tenThousandItems_allOrNothing(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		// An import is bounded by 12 SQL timeouts (60 s by default); a
		// loaded 2-core machine under -race once needed more for 10,000
		// items on SQLite, so this test allows 3 minutes.
		s := newStore(t, db, promptstore.Options{SQLTimeout: 15 * time.Second})
		items := make([]promptstore.ImportItem, promptstore.MaxImportItems)
		for i := range items {
			items[i] = promptstore.ImportItem{Agent: fmt.Sprintf("agent-%d", i%2000), BaseVersion: i / 2000, Config: cfg(fmt.Sprint("config ", i))}
		}
		start := time.Now()
		// Its own bound: 10,000 items under -race on a loaded 2-core machine
		// can take longer than the minute of ctxT.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		res, err := s.Import(ctx, promptstore.ImportInput{Mode: promptstore.ImportAllOrNothing, Items: items})
		d := time.Since(start)
		if err != nil || res.Summary.Created != len(items) {
			t.Fatalf("import: %v", err)
		}
		if n := count(t, db, "prompt_versions"); n != len(items) {
			t.Fatalf("%d versions stored", n)
		}
		t.Logf("%d items (2000 agents x 5 chained) in %v: %.0f rows/s", len(items), d.Round(time.Millisecond), float64(len(items))/d.Seconds())
	})
}
