package promptd_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/api/idempotency"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/board"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/problem"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/session"
	"github.com/promptd/promptd/sqlstore"
)

func idemRuntime(t *testing.T, db *gorm.DB, instance string) *promptd.Runtime {
	t.Helper()
	rt := promptd.New(db, promptd.Options{Instance: instance, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

func countRecords(t *testing.T, db *gorm.DB) int64 {
	t.Helper()
	var n int64
	if err := db.Raw(`SELECT COUNT(*) FROM board_records`).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// A record create (an id generated per run) under one Call key writes one
// record however often it is repeated; the repeats return the first
// result, replayed. Control: the same create without Idempotent writes a
// record per call.
func TestIdempotent_repeatedCreate_writesOnce_andReplaysTheResult(t *testing.T) {
	testenv.ForEachDialect(t, promptd.Migrations(), func(t *testing.T, db *gorm.DB) {
		ctx := audit.WithActor(context.Background(), "worker")
		rt := idemRuntime(t, db, "a")
		in := board.RecordInput{Payload: []byte(`{"url": "https://example.com/1"}`)}
		call := promptd.Call{Caller: "crawler", Operation: "boards.create/crawl", Key: "page-1", Request: json.RawMessage(in.Payload)}
		runs := 0
		create := func(record sqlstore.Then[*board.Record]) (*board.Record, error) {
			runs++
			r, _, err := rt.Boards.Create(ctx, "crawl", in, record)
			return r, err
		}
		first, replayed, err := promptd.Idempotent(ctx, rt, call, create)
		if err != nil || replayed {
			t.Fatalf("first: replayed %v, %v", replayed, err)
		}
		for range 3 {
			again, replayed, err := promptd.Idempotent(ctx, rt, call, create)
			if err != nil || !replayed || again.ID != first.ID || again.Revision != first.Revision {
				t.Fatalf("repeat: %+v replayed %v, %v; want %s replayed", again, replayed, err, first.ID)
			}
		}
		if runs != 1 || countRecords(t, db) != 1 {
			t.Fatalf("write ran %d times, %d records; want 1, 1", runs, countRecords(t, db))
		}
		// Control: without a Call, each create is a record.
		for range 2 {
			if _, err := create(nil); err != nil {
				t.Fatal(err)
			}
		}
		if n := countRecords(t, db); n != 3 {
			t.Fatalf("control: %d records, want 3", n)
		}
	})
}

// The same key with another request is refused (422
// idempotency_key_reused) and writes nothing; the same key under another
// operation or caller is another key.
func TestIdempotent_sameKeyOtherRequest_isKeyReused_otherOperationIsAnotherKey(t *testing.T) {
	testenv.ForEachDialect(t, promptd.Migrations(), func(t *testing.T, db *gorm.DB) {
		ctx := audit.WithActor(context.Background(), "worker")
		rt := idemRuntime(t, db, "a")
		create := func(payload string) func(sqlstore.Then[*board.Record]) (*board.Record, error) {
			return func(record sqlstore.Then[*board.Record]) (*board.Record, error) {
				r, _, err := rt.Boards.Create(ctx, "crawl", board.RecordInput{Payload: []byte(payload)}, record)
				return r, err
			}
		}
		call := promptd.Call{Caller: "crawler", Operation: "boards.create/crawl", Key: "k", Request: map[string]int{"a": 1, "b": 2}}
		if _, _, err := promptd.Idempotent(ctx, rt, call, create(`{"n": 1}`)); err != nil {
			t.Fatal(err)
		}
		// The request is compared canonically: the same members in another
		// order are the same request.
		same := call
		same.Request = json.RawMessage(`{"b": 2, "a": 1}`)
		if _, replayed, err := promptd.Idempotent(ctx, rt, same, create(`{"n": 1}`)); err != nil || !replayed {
			t.Fatalf("the same request reordered: replayed %v, %v", replayed, err)
		}
		other := call
		other.Request = map[string]int{"a": 2}
		_, _, err := promptd.Idempotent(ctx, rt, other, create(`{"n": 2}`))
		if !errors.Is(err, idempotency.ErrKeyReused) || problem.Of(err).Status() != 422 {
			t.Fatalf("another request under the key: %v (%d), want 422 idempotency_key_reused", err, problem.Of(err).Status())
		}
		for _, c := range []promptd.Call{
			{Caller: "crawler", Operation: "boards.create/other", Key: "k", Request: other.Request},
			{Caller: "indexer", Operation: "boards.create/crawl", Key: "k", Request: other.Request},
		} {
			if _, replayed, err := promptd.Idempotent(ctx, rt, c, create(`{"n": 2}`)); err != nil || replayed {
				t.Fatalf("%+v: replayed %v, %v; want a first run", c, replayed, err)
			}
		}
		if n := countRecords(t, db); n != 3 {
			t.Fatalf("%d records, want 3", n)
		}
		for _, bad := range []promptd.Call{{Operation: "x", Key: ""}, {Operation: "x", Key: "tab\there"}, {Key: "k"}} {
			if _, _, err := promptd.Idempotent(ctx, rt, bad, create(`{}`)); problem.Of(err).Code != problem.InvalidField {
				t.Errorf("%+v: %v, want invalid_field", bad, err)
			}
		}
	})
}

// Two instances run the same Call at once, with a write that only one can
// commit (an append at revision 0): both answer with the one committed
// result, and the session holds one turn. Control: the same two appends
// without Idempotent fail one of them (revision conflict).
func TestIdempotent_twoInstancesAtOnce_bothAnswerTheOneCommittedWrite(t *testing.T) {
	testenv.ForEachDialect(t, promptd.Migrations(), func(t *testing.T, db *gorm.DB) {
		ctx, cancel := context.WithTimeout(audit.WithActor(context.Background(), "agent"), 60*time.Second)
		defer cancel()
		rts := []*promptd.Runtime{idemRuntime(t, db, "a"), idemRuntime(t, db, "b")}
		zero := int64(0)
		if _, err := rts[0].Prompts.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "support", Config: json.RawMessage(`{"system": "Be kind."}`)}); err != nil {
			t.Fatal(err)
		}
		if _, err := rts[0].Prompts.SwitchPointer(ctx, promptstore.SwitchInput{Agent: "support", Env: "prod", Version: 1, ExpectedRevision: &zero}); err != nil {
			t.Fatal(err)
		}
		turns := []session.TurnInput{{Role: "user", Content: json.RawMessage(`"hello"`)}}
		for round := range 10 {
			id := "s-" + string(rune('a'+round))
			if _, _, err := rts[0].Sessions.Create(ctx, session.CreateInput{SessionID: id, Agent: "support", Env: "prod"}); err != nil {
				t.Fatal(err)
			}
			call := promptd.Call{Caller: "agent", Operation: "sessions.append/" + id, Key: "turn-1", Request: turns}
			var wg sync.WaitGroup
			var runs atomic.Int32
			out := make([]*session.Appended, 2)
			errs := make([]error, 2)
			for i, rt := range rts {
				wg.Add(1)
				go func() {
					defer wg.Done()
					out[i], _, errs[i] = promptd.Idempotent(ctx, rt, call, func(record sqlstore.Then[*session.Appended]) (*session.Appended, error) {
						runs.Add(1)
						return rt.Sessions.Append(ctx, id, session.WriteCondition{ExpectedRevision: &zero}, turns, record)
					})
				}()
			}
			wg.Wait()
			for i := range 2 {
				if errs[i] != nil {
					t.Fatalf("round %d: instance %d: %v", round, i, errs[i])
				}
			}
			if out[0].Revision != 1 || out[1].Revision != 1 || out[0].Seqs[0] != out[1].Seqs[0] {
				t.Fatalf("round %d: %+v and %+v, want the same append", round, out[0], out[1])
			}
			s, err := rts[0].Sessions.Get(ctx, id, 0, 10)
			if err != nil || s.TurnCount != 1 {
				t.Fatalf("round %d: %v turns, %v; want 1", round, s.TurnCount, err)
			}
		}
		// Control: the same appends without a Call.
		if _, _, err := rts[0].Sessions.Create(ctx, session.CreateInput{SessionID: "s-control", Agent: "support", Env: "prod"}); err != nil {
			t.Fatal(err)
		}
		var failed int
		for _, rt := range rts {
			if _, err := rt.Sessions.Append(ctx, "s-control", session.WriteCondition{ExpectedRevision: &zero}, turns); err != nil {
				failed++
			}
		}
		if failed != 1 {
			t.Fatalf("control: %d of 2 plain appends failed, want 1", failed)
		}
	})
}

// A write that does not hand the record on to its domain write still has
// its result recorded (after it returns).
func TestIdempotent_writeThatKeepsTheRecord_isSavedAfter(t *testing.T) {
	testenv.ForEachDialect(t, promptd.Migrations(), func(t *testing.T, db *gorm.DB) {
		ctx := audit.WithActor(context.Background(), "worker")
		rt := idemRuntime(t, db, "a")
		call := promptd.Call{Caller: "c", Operation: "boards.create/crawl", Key: "k"}
		create := func(sqlstore.Then[*board.Record]) (*board.Record, error) {
			r, _, err := rt.Boards.Create(ctx, "crawl", board.RecordInput{Payload: []byte(`{}`)})
			return r, err
		}
		first, _, err := promptd.Idempotent(ctx, rt, call, create)
		if err != nil {
			t.Fatal(err)
		}
		again, replayed, err := promptd.Idempotent(ctx, rt, call, create)
		if err != nil || !replayed || again.ID != first.ID || countRecords(t, db) != 1 {
			t.Fatalf("repeat: %v replayed %v, %v, %d records", again, replayed, err, countRecords(t, db))
		}
	})
}
