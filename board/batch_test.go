package board_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/board"
	"github.com/promptd/promptd/intent"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/sqlstore"
)

func batchMigrations() []sqlstore.Migration { return append(migrations(), intent.Migrations()...) }

// forEachBatchDialect is forEachDialect with an intent service wired in.
func forEachBatchDialect(t *testing.T, f func(t *testing.T, s *board.Service, is *intent.Service, db *gorm.DB)) {
	testenv.ForEachDialect(t, batchMigrations(), func(t *testing.T, db *gorm.DB) {
		is := intent.New(intent.Options{DB: db, Instance: "test"})
		f(t, board.New(board.Options{DB: db, Instance: "test", Intents: is}), is, db)
	})
}

func TestApplyBatch_proofPerRow_allOrNothingWritesNothing_partialWritesTheRest(t *testing.T) {
	forEachBatchDialect(t, func(t *testing.T, s *board.Service, _ *intent.Service, db *gorm.DB) {
		ctx := context.Background()
		b, err := s.ApplyBatch(ctx, "crm", board.BatchInput{Mode: board.BatchAllOrNothing, Items: []board.BatchItem{
			{Op: board.OpCreate, ID: "c1", Payload: json.RawMessage(`{"name":"Ada"}`)},
			{Op: board.OpCreate, ID: "c2", Payload: json.RawMessage(`{"name":"Bob"}`)},
		}})
		if err != nil || b.Summary.Created != 2 || b.Results[0].RevisionAfter != 1 || !strings.HasPrefix(b.Results[0].ContentHash, "sha256:") {
			t.Fatalf("creates: %+v %v", b, err)
		}
		// the same creates again: exists, nothing written (a retried batch is safe)
		again, err := s.ApplyBatch(ctx, "crm", board.BatchInput{Mode: board.BatchAllOrNothing, Items: []board.BatchItem{
			{Op: board.OpCreate, ID: "c1", Payload: json.RawMessage(`{"name":"Ada"}`)}}})
		if err != nil || again.Results[0].Status != board.StatusExists || again.Results[0].ContentHash != b.Results[0].ContentHash {
			t.Fatalf("again: %+v %v", again, err)
		}
		// all_or_nothing: one stale revision rejects the whole batch
		items := []board.BatchItem{
			{Op: board.OpUpdate, ID: "c1", ExpectedRevision: 1, Payload: json.RawMessage(`{"name":"Ada L."}`)},
			{Op: board.OpUpdate, ID: "c2", ExpectedRevision: 7, Payload: json.RawMessage(`{"name":"Bob M."}`)},
		}
		_, err = s.ApplyBatch(ctx, "crm", board.BatchInput{Mode: board.BatchAllOrNothing, Items: items})
		var rej *board.BatchRejected
		if !errors.As(err, &rej) || rej.Batch.Results[1].Status != board.StatusConflict || rej.Batch.Results[1].Conflict.Code != "revision_conflict" ||
			rej.Batch.Results[1].Conflict.CurrentRevision != 1 || rej.Batch.Results[1].Conflict.ContentHash != b.Results[1].ContentHash ||
			rej.Problem().Code != "batch_rejected" {
			t.Fatalf("rejected: %v", err)
		}
		if r, _ := s.Get(ctx, "crm", "c1"); r.Revision != 1 {
			t.Fatalf("all_or_nothing wrote c1: %+v", r)
		}
		// partial: c1 written, c2's conflict reported
		p, err := s.ApplyBatch(ctx, "crm", board.BatchInput{Mode: board.BatchPartial, Items: items})
		if err != nil || p.Summary.Updated != 1 || p.Summary.Conflicts != 1 || p.Results[0].RevisionBefore != 1 || p.Results[0].RevisionAfter != 2 {
			t.Fatalf("partial: %+v %v", p, err)
		}
		// stored, and read back as it was answered
		got, err := s.GetBatch(ctx, "crm", p.ID)
		if err != nil || got.BatchFingerprint != p.BatchFingerprint || len(got.Results) != 2 || got.Results[1].Conflict.Code != "revision_conflict" {
			t.Fatalf("get: %+v %v", got, err)
		}
		// a fingerprint that is not the items' is refused
		fp, _ := board.BatchInput{Mode: board.BatchPartial, Items: items}.Fingerprint()
		if fp != p.BatchFingerprint {
			t.Fatalf("fingerprint %s != %s", fp, p.BatchFingerprint)
		}
		var inv *board.InvalidError
		if _, err := s.ApplyBatch(ctx, "crm", board.BatchInput{Mode: board.BatchPartial, Items: items[:1], ExpectedFingerprint: fp}); !errors.As(err, &inv) ||
			inv.Field != "batch_fingerprint" {
			t.Fatalf("fingerprint mismatch: %v", err)
		}
		// items on one record chain
		c, err := s.ApplyBatch(ctx, "crm", board.BatchInput{Mode: board.BatchAllOrNothing, Items: []board.BatchItem{
			{Op: board.OpUpdate, ID: "c1", ExpectedRevision: 2, Payload: json.RawMessage(`{"name":"x"}`)},
			{Op: board.OpUpdate, ID: "c1", ExpectedRevision: 3, Payload: json.RawMessage(`{"name":"y"}`)},
		}})
		if err != nil || c.Results[1].RevisionAfter != 4 {
			t.Fatalf("chain: %+v %v", c, err)
		}
		var actions []string
		db.Raw(`SELECT action FROM audit_events WHERE action = 'board.batch_applied'`).Scan(&actions)
		if len(actions) != 4 {
			t.Fatalf("batch events %v", actions)
		}
	})
}

func TestApplyBatch_mergesDisjointChanges_conflictsOnOverlap_refusesABaseItCannotCheck(t *testing.T) {
	forEachBatchDialect(t, func(t *testing.T, s *board.Service, _ *intent.Service, _ *gorm.DB) {
		ctx := context.Background()
		base := `{"name":"Ada","plan":"free","tags":[{"id":"a","v":1},{"id":"b","v":1}]}`
		if _, _, err := s.Create(ctx, "crm", board.RecordInput{ID: "c1", Payload: []byte(base)}); err != nil {
			t.Fatal(err)
		}
		// theirs: plan and tag b changed (revision 2)
		if _, err := s.Patch(ctx, "crm", "c1", board.Update{ExpectedRevision: 1,
			Payload: json.RawMessage(`{"name":"Ada","plan":"pro","tags":[{"id":"a","v":1},{"id":"b","v":2}]}`)}); err != nil {
			t.Fatal(err)
		}
		// ours, from revision 1: name and tag a changed
		ours := json.RawMessage(`{"name":"Ada Lovelace","plan":"free","tags":[{"id":"a","v":9},{"id":"b","v":1}]}`)
		b, err := s.ApplyBatch(ctx, "crm", board.BatchInput{Mode: board.BatchAllOrNothing, Items: []board.BatchItem{
			{Op: board.OpUpdate, ID: "c1", ExpectedRevision: 1, Payload: ours, Merge: true, BasePayload: json.RawMessage(base)}}})
		if err != nil || b.Results[0].Status != board.StatusMerged {
			t.Fatalf("merge: %+v %v", b, err)
		}
		r, _ := s.Get(ctx, "crm", "c1")
		if string(r.Payload) != `{"name":"Ada Lovelace","plan":"pro","tags":[{"id":"a","v":9},{"id":"b","v":2}]}` {
			t.Fatalf("merged payload %s", r.Payload)
		}
		// control: the same write without merge is a revision conflict
		_, err = s.ApplyBatch(ctx, "crm", board.BatchInput{Mode: board.BatchAllOrNothing, Items: []board.BatchItem{
			{Op: board.OpUpdate, ID: "c1", ExpectedRevision: 1, Payload: ours}}})
		var rej *board.BatchRejected
		if !errors.As(err, &rej) || rej.Batch.Results[0].Conflict.Code != "revision_conflict" {
			t.Fatalf("no merge: %v", err)
		}
		// both changed plan: a conflict naming the path and the three values
		_, err = s.ApplyBatch(ctx, "crm", board.BatchInput{Mode: board.BatchAllOrNothing, Items: []board.BatchItem{
			{Op: board.OpUpdate, ID: "c1", ExpectedRevision: 1, Merge: true,
				Payload: json.RawMessage(`{"name":"Ada","plan":"team","tags":[{"id":"a","v":1},{"id":"b","v":1}]}`)}}})
		if !errors.As(err, &rej) || rej.Batch.Results[0].Conflict.Code != "merge_conflict" ||
			string(rej.Batch.Results[0].Conflict.Conflicts) != `[{"path":["plan"],"base":"free","ours":"team","theirs":"pro"}]` {
			t.Fatalf("overlap: %v %s", err, rej.Batch.Results[0].Conflict.Conflicts)
		}
		// a base_payload that is not the payload of revision 1 cannot be checked
		_, err = s.ApplyBatch(ctx, "crm", board.BatchInput{Mode: board.BatchAllOrNothing, Items: []board.BatchItem{
			{Op: board.OpUpdate, ID: "c1", ExpectedRevision: 1, Merge: true, Payload: ours, BasePayload: json.RawMessage(`{"name":"Ada"}`)}}})
		if !errors.As(err, &rej) || rej.Batch.Results[0].Conflict.Code != "revision_conflict" || rej.Batch.Results[0].Conflict.CurrentRevision != 3 {
			t.Fatalf("unchecked base: %v", err)
		}
		// PATCH merges the same way
		if _, err := s.Patch(ctx, "crm", "c1", board.Update{ExpectedRevision: 2, Merge: true,
			Payload: json.RawMessage(`{"name":"Ada","plan":"pro","tags":[{"id":"a","v":1},{"id":"b","v":2}],"vip":true}`)}); err != nil {
			t.Fatalf("patch merge: %v", err)
		}
		r, _ = s.Get(ctx, "crm", "c1")
		if !strings.Contains(string(r.Payload), `"vip":true`) || !strings.Contains(string(r.Payload), `"Ada Lovelace"`) {
			t.Fatalf("patch merged %s", r.Payload)
		}
	})
}

func TestApplyBatch_underAnIntent_outsideItsScopeIsRefused_afterItEndedIsStaleFence(t *testing.T) {
	forEachBatchDialect(t, func(t *testing.T, s *board.Service, is *intent.Service, _ *gorm.DB) {
		ctx := context.Background()
		reg, err := is.Register(ctx, intent.Input{Holder: "importer", Scope: intent.Scope{Records: []intent.RecordScope{{Board: "crm", Prefixes: []string{"eu-"}}}}})
		if err != nil {
			t.Fatal(err)
		}
		ref := &intent.Ref{ID: reg.Intent.ID, Fence: reg.Intent.Fence}
		ok, err := s.ApplyBatch(ctx, "crm", board.BatchInput{Mode: board.BatchAllOrNothing, Intent: ref, Items: []board.BatchItem{
			{Op: board.OpCreate, ID: "eu-1", Payload: json.RawMessage(`1`)}}})
		if err != nil || ok.IntentID != ref.ID {
			t.Fatalf("inside: %+v %v", ok, err)
		}
		var out *intent.OutsideScope
		if _, err := s.ApplyBatch(ctx, "crm", board.BatchInput{Mode: board.BatchPartial, Intent: ref, Items: []board.BatchItem{
			{Op: board.OpCreate, ID: "eu-2", Payload: json.RawMessage(`1`)}, {Op: board.OpCreate, ID: "us-1", Payload: json.RawMessage(`1`)}}}); !errors.As(err, &out) {
			t.Fatalf("outside: %v", err)
		}
		if _, err := s.Get(ctx, "crm", "eu-2"); !errors.Is(err, board.ErrRecordNotFound) {
			t.Fatalf("a refused batch wrote: %v", err)
		}
		if _, err := s.Patch(ctx, "crm", "eu-1", board.Update{ExpectedRevision: 1, Payload: json.RawMessage(`2`), Intent: ref}); err != nil {
			t.Fatalf("patch under intent: %v", err)
		}
		if _, err := is.Release(ctx, ref.ID, ref.Fence); err != nil {
			t.Fatal(err)
		}
		var ended *intent.Ended
		if _, err := s.Patch(ctx, "crm", "eu-1", board.Update{ExpectedRevision: 2, Payload: json.RawMessage(`3`), Intent: ref}); !errors.As(err, &ended) {
			t.Fatalf("after release: %v", err)
		}
	})
}

// The field report's row-lease hole: an agent pauses past its row lease
// and resumes writing. Under a board claim its fence is in the write's
// condition, so its late write is refused (stale_fence) and the next
// holder's write stands. The control is the report's row lease: a lease
// beside the row (here promptd's generic lease service) that the write
// does not carry; the resumed agent's write goes through and the next
// holder's update is lost.
func TestPausedAgentPastItsRowLease_isRefusedByTheFence_controlOverwrites(t *testing.T) {
	db := testenv.OpenDB(t, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "b.db")}, batchMigrations())
	s := board.New(board.Options{DB: db, Instance: "test"})
	ctx := context.Background()
	d := quick()
	d.Claim.TTLMs = 300
	if _, _, err := s.Define(ctx, "rows", d, 0); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "rows", "r1", 0)
	mustCreate(t, s, "rows", "r2", 0)

	// with the fence: A claims, pauses past the TTL; B reclaims and writes
	a, err := s.ClaimOne(ctx, "rows", "r1", board.ClaimInput{Holder: "A"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(450 * time.Millisecond) // A pauses past its claim
	bc, err := s.ClaimOne(ctx, "rows", "r1", board.ClaimInput{Holder: "B"})
	if err != nil {
		t.Fatalf("B's reclaim: %v", err)
	}
	if _, err := s.Patch(ctx, "rows", "r1", board.Update{ExpectedRevision: bc.Revision, Fence: &bc.Fence, Payload: json.RawMessage(`{"by":"B"}`)}); err != nil {
		t.Fatal(err)
	}
	cur, _ := s.Get(ctx, "rows", "r1")
	_, err = s.Patch(ctx, "rows", "r1", board.Update{ExpectedRevision: cur.Revision, Fence: &a.Fence, Payload: json.RawMessage(`{"by":"A"}`)})
	var sf *board.StaleFence
	if !errors.As(err, &sf) || sf.Current != bc.Fence {
		t.Fatalf("A's late write: %v", err)
	}
	if r, _ := s.Get(ctx, "rows", "r1"); string(r.Payload) != `{"by":"B"}` {
		t.Fatalf("with the fence, r1 = %s", r.Payload)
	}

	// control: a row lease that the write does not carry
	lk := locks.NewMemory(locks.Options{Holder: "test"})
	if _, err := lk.Acquire(ctx, "row:r2", 300*time.Millisecond, locks.WithoutKeepalive(), locks.WithHolder("A")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(450 * time.Millisecond) // A pauses; its lease expires
	if _, err := lk.Acquire(ctx, "row:r2", time.Second, locks.WithoutKeepalive(), locks.WithHolder("B")); err != nil {
		t.Fatalf("B's lease: %v", err)
	}
	r, _ := s.Get(ctx, "rows", "r2")
	if _, err := s.Patch(ctx, "rows", "r2", board.Update{ExpectedRevision: r.Revision, Payload: json.RawMessage(`{"by":"B"}`)}); err != nil {
		t.Fatal(err)
	}
	r, _ = s.Get(ctx, "rows", "r2") // A resumes: reads the revision and writes what it computed before its pause
	if _, err := s.Patch(ctx, "rows", "r2", board.Update{ExpectedRevision: r.Revision, Payload: json.RawMessage(`{"by":"A"}`)}); err != nil {
		t.Fatalf("control write: %v", err)
	}
	if r, _ := s.Get(ctx, "rows", "r2"); string(r.Payload) != `{"by":"A"}` {
		t.Fatalf("control: r2 = %s (the overwrite should have happened)", r.Payload)
	}
}

// Concurrent PATCHes of one record at one expected revision: one wins,
// every other is a revision conflict (the payload history row of the next
// revision is written after the revision-checked UPDATE, so a loser never
// meets the winner's history row as a duplicate key: that was a 500).
func TestPatch_concurrentAtOneRevision_oneWinsOthersRevisionConflict(t *testing.T) {
	s, _ := mysqlService(t)
	ctx := context.Background()
	mustCreate(t, s, "race", "r1", 0)
	const writers = 16
	errs := make(chan error, writers)
	for i := range writers {
		go func() {
			_, err := s.Patch(ctx, "race", "r1", board.Update{ExpectedRevision: 1, Payload: json.RawMessage(fmt.Sprintf(`{"w":%d}`, i))})
			errs <- err
		}()
	}
	wins, conflicts := 0, 0
	for range writers {
		err := <-errs
		var rc *board.RevisionConflict
		switch {
		case err == nil:
			wins++
		case errors.As(err, &rc):
			conflicts++
		default:
			t.Errorf("a losing PATCH: %v", err)
		}
	}
	if wins != 1 || conflicts != writers-1 {
		t.Fatalf("%d wins, %d revision conflicts", wins, conflicts)
	}
}
