package session_test

import (
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/session"
)

// List shows each open session's own lease holder, looked up in Redis a
// few at a time: 60 open sessions, every third leased by a holder named
// after it; the others show none.
func TestList_showsEachOpenSessionsOwnHolder(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		ctx := ctxT(t)
		want := map[string]string{}
		for i := range 60 {
			id := fmt.Sprintf("conv-%02d", i)
			if _, _, err := w.sess.Create(ctx, session.CreateInput{SessionID: id, Agent: "a", Env: "prod"}); err != nil {
				t.Fatal(err)
			}
			if i%3 == 0 {
				holder := "runtime-" + id
				if _, err := w.sess.AcquireLease(ctx, id, session.LeaseInput{Holder: holder, TTL: time.Minute}); err != nil {
					t.Fatal(err)
				}
				want[id] = holder
			}
		}
		got, next, err := w.sess.List(ctx, session.ListFilter{Limit: 100})
		if err != nil || next != "" || len(got) != 60 {
			t.Fatalf("List = %d sessions, next %q, %v; want 60 on one page", len(got), next, err)
		}
		leased := 0
		for _, s := range got {
			switch {
			case want[s.SessionID] == "" && s.Lease != nil:
				t.Errorf("%s: holder %q, want none", s.SessionID, s.Lease.Holder)
			case want[s.SessionID] != "" && (s.Lease == nil || s.Lease.Holder != want[s.SessionID] || s.Lease.Fence <= 0):
				t.Errorf("%s: lease %+v, want holder %q with a fence", s.SessionID, s.Lease, want[s.SessionID])
			case s.Lease != nil:
				leased++
			}
		}
		if leased != 20 {
			t.Errorf("%d sessions shown leased, want 20", leased)
		}
	})
}
