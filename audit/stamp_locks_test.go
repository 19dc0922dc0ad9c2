package audit_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/sqlstore"
)

// A stamper stopped in the middle of its transaction (a paused process,
// a long GC) does not hold up the writes of every instance: on MySQL its
// stamping UPDATE took next-key locks on the unstamped events' index
// entries, whose gap is where every new event is inserted, so each write's
// audit insert waited for the stopped stamper. The hook stops Stamp after
// its UPDATEs, before its commit, while another connection appends.
func TestStamp_pausedBeforeItsCommit_doesNotBlockNewEvents(t *testing.T) {
	testenv.ForEachDialect(t, audit.Migrations(), func(t *testing.T, db *gorm.DB) {
		if sqlstore.Dialect(db) != sqlstore.MySQL {
			t.Skip("SQLite has one writer: a paused write transaction holds every other")
		}
		ctx := context.Background()
		appendAt(t, db, time.Now(), "before", 3) // unstamped
		paused, resume := make(chan struct{}), make(chan struct{})
		var armed atomic.Bool
		armed.Store(true)
		if err := db.Callback().Raw().After("gorm:raw").Register("test:pause_stamp", func(tx *gorm.DB) {
			if strings.Contains(tx.Statement.SQL.String(), "UPDATE audit_feed SET head") && armed.CompareAndSwap(true, false) {
				close(paused)
				<-resume
			}
		}); err != nil {
			t.Fatal(err)
		}
		stamped := make(chan error, 1)
		go func() { _, _, err := audit.Stamp(ctx, db, 100); stamped <- err }()
		<-paused
		appended := make(chan error, 1)
		go func() {
			l := audit.Log{Instance: "t"}
			appended <- db.Transaction(func(tx *gorm.DB) error {
				return l.Append(ctx, tx, audit.Event{Action: "during", Resource: "leases/r"}, map[string]any{})
			})
		}()
		blocked := false
		select {
		case err := <-appended:
			if err != nil {
				t.Errorf("append while the stamper is paused: %v", err)
			}
		case <-time.After(5 * time.Second): // a bound for a loaded machine; unblocked, it takes milliseconds
			blocked = true
			t.Errorf("an event's insert waited 5 s for a stamper paused before its commit")
		}
		close(resume)
		if err := <-stamped; err != nil {
			t.Fatal(err)
		}
		if blocked {
			<-appended
		}
		if head := stampAll(t, db); head != 4 {
			t.Fatalf("head = %d, want 4", head)
		}
	})
}
