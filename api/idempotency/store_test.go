package idempotency_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/api/idempotency"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/sqlstore"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var created = idempotency.Response{Status: 201, ContentType: "application/json", Body: []byte(`{"version":1}` + "\n")}

func TestBegin_concurrentRepeat_isInProgress_otherBody_isReused(t *testing.T) {
	s := idempotency.New(nil, idempotency.Options{})
	k := idempotency.NewKey("ops", "POST", "/v1/import", nil, "k1", "aa")
	end, err := s.Begin(k)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Begin(k); !errors.Is(err, idempotency.ErrInProgress) {
		t.Fatalf("same body while in progress: %v", err)
	}
	if _, err := s.Begin(idempotency.NewKey("ops", "POST", "/v1/import", nil, "k1", "bb")); !errors.Is(err, idempotency.ErrKeyReused) {
		t.Fatalf("other body while in progress: %v", err)
	}
	if end2, err := s.Begin(idempotency.NewKey("other-token", "POST", "/v1/import", nil, "k1", "aa")); err != nil {
		t.Fatalf("another caller's scope: %v", err)
	} else {
		end2()
	}
	end()
	end() // twice is harmless
	end3, err := s.Begin(k)
	if err != nil {
		t.Fatalf("after end: %v", err)
	}
	end3()
}

// TestNewKey_partsCannotBleedIntoEachOther: with the parts joined by "|"
// (as before), PUT .../state/k|x with key y and PUT .../state/k with key
// x|y shared a scope, and the second replayed the first's answer.
func TestNewKey_partsCannotBleedIntoEachOther(t *testing.T) {
	route := "/v1/sessions/:id/state/:key"
	a := idempotency.NewKey("ops", "PUT", route, []string{"s1", "k|x"}, "y", "h")
	b := idempotency.NewKey("ops", "PUT", route, []string{"s1", "k"}, "x|y", "h")
	c := idempotency.NewKey("ops", "PUT", route, []string{"s1k", ""}, "y", "h")
	d := idempotency.NewKey("ops", "PUT", route, []string{"s1", "k"}, "y", "h")
	if a.Scope == b.Scope || a.Scope == c.Scope || c.Scope == d.Scope || b.Scope == d.Scope {
		t.Fatalf("scope collision: %v %v %v %v", a.Scope, b.Scope, c.Scope, d.Scope)
	}
	e := idempotency.NewKey("o", "ps|PUT", route, nil, "k", "h")
	f := idempotency.NewKey("o|ps", "PUT", route, nil, "k", "h")
	if e.Scope == f.Scope {
		t.Fatal("name and method bleed into each other")
	}
}

func TestNewKey_scopesByNameMethodPathAndKey(t *testing.T) {
	base := idempotency.NewKey("ops", "POST", "/v1/agents/a/versions", nil, "k", "h")
	for _, k := range []idempotency.Key{
		idempotency.NewKey("ci", "POST", "/v1/agents/a/versions", nil, "k", "h"),
		idempotency.NewKey("ops", "PUT", "/v1/agents/a/versions", nil, "k", "h"),
		idempotency.NewKey("ops", "POST", "/v1/agents/b/versions", nil, "k", "h"),
		idempotency.NewKey("ops", "POST", "/v1/agents/a/versions", []string{"a"}, "k", "h"),
		idempotency.NewKey("ops", "POST", "/v1/agents/a/versions", nil, "k2", "h"),
	} {
		if k.Scope == base.Scope {
			t.Errorf("scope collision: %+v", k)
		}
	}
	if len(base.Scope) != 64 {
		t.Errorf("scope %q is not a hex SHA-256", base.Scope)
	}
}

func TestStore_recordsInTheWritesTransaction_andReplays(t *testing.T) {
	testenv.ForEachDialect(t, idempotency.Migrations(), func(t *testing.T, db *gorm.DB) {
		clk := &clock{t: time.UnixMilli(1_700_000_000_000)}
		s := idempotency.New(db, idempotency.Options{TTL: time.Hour, Now: clk.now})
		ctx := ctxT(t)
		k := idempotency.NewKey("ops", "POST", "/v1/agents/a/versions", nil, "k1", idempotency.HashBody([]byte(`{}`)))

		if r, err := s.Lookup(ctx, k); r != nil || err != nil {
			t.Fatalf("Lookup before = %v, %v", r, err)
		}
		// A write that fails after the hook ran leaves no record.
		var stored *idempotency.Response
		record := func(k idempotency.Key) sqlstore.Then[int] {
			return func(tx *gorm.DB, n int) error {
				r := idempotency.Response{Status: 201, ContentType: "application/json", Body: []byte{byte('0' + n)}}
				if err := s.Insert(ctx, tx, k, r); err != nil {
					return err
				}
				stored = &r
				return nil
			}
		}
		boom := errors.New("boom")
		_, err := sqlstore.Transact(ctx, db, func(tx *gorm.DB) (int, error) { return 1, nil }, record(k))
		if err != nil || stored == nil || string(stored.Body) != "1" {
			t.Fatalf("hooked write: %v, %+v", err, stored)
		}
		r, err := s.Lookup(ctx, k)
		if err != nil || r == nil || r.Status != 201 || string(r.Body) != "1" || r.ContentType != "application/json" {
			t.Fatalf("Lookup after = %+v, %v", r, err)
		}
		// A second record for the key (another request's hook) loses: the
		// whole write rolls back.
		_, err = sqlstore.Transact(ctx, db, func(tx *gorm.DB) (int, error) { return 2, nil }, record(k))
		if !errors.Is(err, idempotency.ErrExists) {
			t.Fatalf("second hooked write: %v", err)
		}
		// A write that fails leaves no record, although its Then ran.
		k2 := idempotency.NewKey("ops", "POST", "/v1/agents/a/versions", nil, "k2", "h")
		if _, err := sqlstore.Transact(ctx, db, func(tx *gorm.DB) (int, error) { return 0, boom }, record(k2)); !errors.Is(err, boom) {
			t.Fatal(err)
		}
		if r, _ := s.Lookup(ctx, k2); r != nil {
			t.Fatalf("a failed write left a record: %+v", r)
		}

		// The same key with another body is reused.
		other := k
		other.BodyHash = idempotency.HashBody([]byte(`{"x":1}`))
		if _, err := s.Lookup(ctx, other); !errors.Is(err, idempotency.ErrKeyReused) {
			t.Fatalf("Lookup other body = %v", err)
		}

		// After the TTL the record is ignored, replaced, and swept.
		clk.add(time.Hour)
		if r, err := s.Lookup(ctx, k); r != nil || err != nil {
			t.Fatalf("expired Lookup = %+v, %v", r, err)
		}
		if err := s.Save(ctx, other, created); err != nil {
			t.Fatalf("Save over an expired record: %v", err)
		}
		if r, err := s.Lookup(ctx, other); err != nil || r == nil || r.Status != 201 {
			t.Fatalf("Lookup of the new record = %+v, %v", r, err)
		}
		// Save keeps a live record.
		if err := s.Save(ctx, other, idempotency.Response{Status: 400, ContentType: "x", Body: []byte("y")}); err != nil {
			t.Fatal(err)
		}
		if r, _ := s.Lookup(ctx, other); r == nil || r.Status != 201 {
			t.Fatalf("Save replaced a live record: %+v", r)
		}
		clk.add(time.Hour)
		n, err := s.Sweep(ctx) // other's record
		if err != nil || n != 1 {
			t.Fatalf("Sweep = %d, %v", n, err)
		}
		var left int64
		db.Raw(`SELECT COUNT(*) FROM idempotency_keys`).Scan(&left)
		if left != 0 {
			t.Fatalf("%d records left", left)
		}
	})
}

func TestSweep_deletesOnlyExpired_inBatches(t *testing.T) {
	testenv.ForEachDialect(t, idempotency.Migrations(), func(t *testing.T, db *gorm.DB) {
		clk := &clock{t: time.UnixMilli(1_700_000_000_000)}
		s := idempotency.New(db, idempotency.Options{TTL: time.Minute, Now: clk.now})
		ctx := ctxT(t)
		for i := range 1005 {
			k := idempotency.NewKey("ops", "POST", "/p", nil, string(rune('a'+i%26))+time.Duration(i).String(), "h")
			if err := s.Save(ctx, k, created); err != nil {
				t.Fatal(err)
			}
		}
		clk.add(2 * time.Minute)
		live := idempotency.NewKey("ops", "POST", "/p", nil, "live", "h")
		if err := s.Save(ctx, live, created); err != nil {
			t.Fatal(err)
		}
		n, err := s.Sweep(ctx)
		if err != nil || n != 1005 {
			t.Fatalf("Sweep = %d, %v", n, err)
		}
		if r, _ := s.Lookup(ctx, live); r == nil {
			t.Fatal("Sweep deleted a live record")
		}
	})
}

// On MySQL, a second instance recording the same key waits on the first's
// row lock and then fails with ErrExists, so it replays the winner.
func TestInsert_concurrentTransactions_secondWaitsThenExists(t *testing.T) {
	db := testenv.OpenDB(t, sqlstore.Config{MySQLDSN: testenv.MySQLDSN(t)}, idempotency.Migrations())
	s := idempotency.New(db, idempotency.Options{})
	ctx := ctxT(t)
	k := idempotency.NewKey("ops", "POST", "/v1/import", nil, "race", "h")
	inserted, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := sqlstore.Transact(ctx, db, func(tx *gorm.DB) (int, error) {
			if err := s.Insert(ctx, tx, k, created); err != nil {
				return 0, err
			}
			close(inserted)
			<-release
			return 0, nil
		})
		done <- err
	}()
	<-inserted
	second := make(chan error, 1)
	go func() {
		_, err := sqlstore.Transact(ctx, db, func(tx *gorm.DB) (int, error) { return 0, s.Insert(ctx, tx, k, created) })
		second <- err
	}()
	select {
	case err := <-second:
		t.Fatalf("the second insert did not wait: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-second; !errors.Is(err, idempotency.ErrExists) {
		t.Fatalf("second insert = %v, want ErrExists", err)
	}
	if r, err := s.Lookup(ctx, k); err != nil || r == nil {
		t.Fatalf("Lookup = %v, %v", r, err)
	}
}
