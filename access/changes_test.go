package access_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/sqlstore"
)

// clock is a settable Now.
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

func TestChangeRequest_after24h_isExpiredAndCannotBeApproved(t *testing.T) {
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "promptd.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sqlstore.Close(db) })
	if err := sqlstore.Migrate(ctx, db, append(audit.Migrations(), access.Migrations()...)...); err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Now()}
	s := access.New(access.Options{DB: db, Now: c.now})
	if _, err := s.SetProtection(ctx, access.Protection{Env: "prod", Approvals: 1}, nil); err != nil {
		t.Fatal(err)
	}
	ops := &access.Token{Name: "ops", Role: access.RoleAdmin, Principal: "ops", Bootstrap: true}
	lead := &access.Token{Name: "lead", Role: access.RoleAdmin, Principal: "lead", Bootstrap: true}
	cr, err := s.Gate(ctx, ops, access.Filing{Action: "pointer.switch", Agent: "support", Env: "prod", Request: map[string]int{"version": 2}, Target: 1})
	if err != nil || cr == nil {
		t.Fatalf("gate: %v %v", cr, err)
	}
	c.add(access.RequestTTL + time.Second)
	got, _ := s.ChangeRequest(ctx, cr.ID)
	if got.State != access.Expired {
		t.Fatalf("state after 24 h = %s", got.State)
	}
	applied := false
	_, err = s.Approve(ctx, cr.ID, lead, func(context.Context, *access.ChangeRequest, func(tx *gorm.DB) error) error {
		applied = true
		return nil
	})
	var closed *access.ClosedError
	if !errors.As(err, &closed) || closed.State != access.Expired || applied {
		t.Fatalf("approve after expiry: %v (applied %v)", err, applied)
	}
	if n, err := s.ExpireRequests(ctx); n != 1 || err != nil {
		t.Fatalf("sweep: %d %v", n, err)
	}
	var events int64
	db.Raw(`SELECT COUNT(*) FROM audit_events WHERE action = 'change_request.expired'`).Scan(&events)
	if events != 1 {
		t.Fatalf("expired events = %d", events)
	}
	if n, _ := s.ExpireRequests(ctx); n != 0 {
		t.Fatalf("a second sweep expired %d", n)
	}
}

func TestProtection_weakenedBy_fewerApprovalsFewerAgentsOrOtherApprovers(t *testing.T) {
	cur := &access.Protection{Env: "prod", Approvals: 2, Agents: []string{"support", "team-a-*"}, Approvers: []string{"lead", "lead2"}}
	for _, c := range []struct {
		next access.Protection
		want bool
	}{
		{access.Protection{Approvals: 2, Agents: []string{"team-a-*", "support"}, Approvers: []string{"lead2", "lead"}}, false}, // reordered
		{access.Protection{Approvals: 3, Agents: nil, Approvers: []string{"lead", "lead2"}}, false},                             // stronger, every agent
		{access.Protection{Approvals: 2, Agents: []string{"support", "team-a-*", "x"}, Approvers: []string{"lead", "lead2"}}, false},
		{access.Protection{Approvals: 1, Agents: cur.Agents, Approvers: cur.Approvers}, true},
		{access.Protection{Approvals: 0}, true},
		{access.Protection{Approvals: 2, Agents: []string{"support"}, Approvers: cur.Approvers}, true},         // a pattern dropped
		{access.Protection{Approvals: 2, Agents: []string{"*"}, Approvers: cur.Approvers}, true},               // patterns compared as written
		{access.Protection{Approvals: 2, Agents: cur.Agents, Approvers: []string{"lead"}}, true},               // narrowed
		{access.Protection{Approvals: 2, Agents: cur.Agents, Approvers: []string{"lead", "lead2", "x"}}, true}, // widened
		{access.Protection{Approvals: 2, Agents: cur.Agents}, true},                                            // anyone may approve
	} {
		if got := cur.WeakenedBy(c.next); got != c.want {
			t.Errorf("WeakenedBy(%+v) = %v, want %v", c.next, got, c.want)
		}
	}
	all := &access.Protection{Approvals: 1}
	if !all.WeakenedBy(access.Protection{Approvals: 1, Agents: []string{"support"}}) || !all.WeakenedBy(access.Protection{Approvals: 1, Approvers: []string{"lead"}}) {
		t.Error("a list of agents or approvers where there was none is a weakening")
	}
	if (*access.Protection)(nil).WeakenedBy(access.Protection{}) || (&access.Protection{}).WeakenedBy(access.Protection{Approvals: 0, Agents: []string{}}) {
		t.Error("a protection not in force is not weakened")
	}
}
