package promptstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/sqlstore"
)

func draftMigrations() []sqlstore.Migration {
	return append(append(audit.Migrations(), promptstore.Migrations()...), promptstore.DraftMigrations()...)
}

// TestDrafts_storeOwnershipRevisionPublish: on SQLite and MariaDB, a draft
// is its owner's alone, an update on an old revision is a
// RevisionConflict, and publish creates base+1 and deletes the draft in
// one transaction (a stale base keeps it).
func TestDrafts_storeOwnershipRevisionPublish(t *testing.T) {
	testenv.ForEachDialect(t, draftMigrations(), func(t *testing.T, db *gorm.DB) {
		s := promptstore.New(db, promptstore.Options{Instance: "t"})
		defer s.Close()
		ctx := audit.WithActor(context.Background(), "alice")
		if _, err := s.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "bot", Config: json.RawMessage(`{"system": "v1"}`)}); err != nil {
			t.Fatal(err)
		}
		d, err := s.CreateDraft(ctx, "bot", "alice", 1, nil)
		if err != nil || string(d.Config) != `{"system":"v1"}` || d.Revision != 1 {
			t.Fatalf("CreateDraft = %+v, %v", d, err)
		}
		if _, err := s.GetDraft(ctx, "bot", "bob", d.ID); !errors.Is(err, promptstore.ErrDraftNotFound) {
			t.Fatalf("bob's GetDraft: %v, want ErrDraftNotFound", err)
		}
		if _, err := s.UpdateDraft(ctx, "bot", "alice", d.ID, json.RawMessage(`{"system": "v2 {{x}}"}`), 1); err != nil {
			t.Fatal(err)
		}
		var rc *promptstore.RevisionConflict
		if _, err := s.UpdateDraft(ctx, "bot", "alice", d.ID, json.RawMessage(`{"system": "other"}`), 1); !errors.As(err, &rc) || rc.Current != 2 {
			t.Fatalf("stale update: %v, want RevisionConflict current 2", err)
		}
		cur, _ := s.GetDraft(ctx, "bot", "alice", d.ID)
		probs, err := s.ValidateConfig(ctx, "bot", cur.Config)
		if err != nil || len(probs) != 1 || probs[0].Code != "undeclared_variable" || probs[0].Variable != "x" {
			t.Fatalf("ValidateConfig = %+v, %v", probs, err)
		}
		if _, err := s.PublishDraft(ctx, "bot", "alice", d.ID, "m", false); err == nil {
			t.Fatal("an invalid draft was published")
		}
		if _, err := s.UpdateDraft(ctx, "bot", "alice", d.ID, json.RawMessage(`{"system": "v2"}`), 2); err != nil {
			t.Fatal(err)
		}
		stale, _ := s.CreateDraft(ctx, "bot", "bob", 1, json.RawMessage(`{"system": "bob's"}`))
		v, err := s.PublishDraft(ctx, "bot", "alice", d.ID, "m", false)
		if err != nil || v.Version != 2 {
			t.Fatalf("PublishDraft = %+v, %v", v, err)
		}
		if _, err := s.GetDraft(ctx, "bot", "alice", d.ID); !errors.Is(err, promptstore.ErrDraftNotFound) {
			t.Fatalf("the published draft is still there: %v", err)
		}
		var vc *promptstore.VersionConflict
		if _, err := s.PublishDraft(ctx, "bot", "bob", stale.ID, "m", false); !errors.As(err, &vc) || vc.Latest != 2 {
			t.Fatalf("stale publish: %v, want VersionConflict latest 2", err)
		}
		if _, err := s.GetDraft(ctx, "bot", "bob", stale.ID); err != nil {
			t.Fatalf("the stale draft is gone: %v", err)
		}
	})
}

// TestDrafts_storeLimits: a principal's drafts of one agent are bounded,
// another principal's are not counted.
func TestDrafts_storeLimits(t *testing.T) {
	db := testenv.OpenDB(t, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "p.db")}, draftMigrations())
	s := promptstore.New(db, promptstore.Options{Instance: "t"})
	defer s.Close()
	ctx := context.Background()
	if _, err := s.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "bot", Config: json.RawMessage(`{"system": "v1"}`)}); err != nil {
		t.Fatal(err)
	}
	for range promptstore.DraftMaxPerAgent {
		if _, err := s.CreateDraft(ctx, "bot", "alice", 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	var le *promptstore.LimitError
	if _, err := s.CreateDraft(ctx, "bot", "alice", 1, nil); !errors.As(err, &le) || le.Name != promptstore.LimitDrafts {
		t.Fatalf("over the limit: %v", err)
	}
	if _, err := s.CreateDraft(ctx, "bot", "bob", 1, nil); err != nil {
		t.Fatalf("bob: %v", err)
	}
	big := json.RawMessage(`{"system": "` + repeat("a", promptstore.DraftMaxBytes) + `"}`)
	if _, err := s.CreateDraft(ctx, "bot", "bob", 1, big); !errors.As(err, &le) || le.Name != promptstore.LimitDraftBytes {
		t.Fatalf("a big draft: %v", err)
	}
}

func repeat(s string, n int) string {
	b := make([]byte, 0, n*len(s))
	for range n {
		b = append(b, s...)
	}
	return string(b)
}
