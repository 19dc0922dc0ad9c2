package changes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/changes"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/sqlstore"
)

// A pointer switch in a protected env, in process: the write files a
// change request instead of moving the pointer, and the approval of
// another principal applies it.
func ExampleService_SwitchPointer() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "changes-example")
	defer os.RemoveAll(dir)
	rt, err := promptd.Open(ctx, sqlstore.Config{SQLitePath: filepath.Join(dir, "promptd.db")}, promptd.Options{Instance: "example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	ops := changes.Caller{Token: &access.Token{Name: "ops", Role: access.RoleAdmin, Principal: "ops", Bootstrap: true}}
	lead := &access.Token{Name: "lead", Role: access.RoleAdmin, Principal: "lead", Bootstrap: true}
	for base := range 2 {
		if _, err := rt.Prompts.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "support", BaseVersion: base,
			Config: json.RawMessage(fmt.Sprintf(`{"system": "v%d"}`, base+1))}); err != nil {
			fmt.Println(err)
			return
		}
	}
	zero := int64(0)
	env, _, _ := rt.Changes.SwitchPointer(ctx, ops, promptstore.SwitchInput{Agent: "support", Env: "prod", Version: 1, ExpectedRevision: &zero})
	_, _, _ = rt.Changes.SetProtection(ctx, ops, access.Protection{Env: "prod", Approvals: 1}, &zero)

	rev := env.Revision
	moved, cr, err := rt.Changes.SwitchPointer(ctx, ops, promptstore.SwitchInput{Agent: "support", Env: "prod", Version: 2, ExpectedRevision: &rev})
	fmt.Println(moved == nil, cr.Action, cr.State, err)
	if _, err := rt.Changes.Approve(ctx, cr.ID, ops.Token); err != nil {
		fmt.Println("the requester's own approval:", err)
	}
	cr, err = rt.Changes.Approve(ctx, cr.ID, lead)
	now, _ := rt.Prompts.GetEnv(ctx, "support", "prod")
	fmt.Println(cr.State, err, "v", now.Version)
	// Output:
	// true pointer.switch pending <nil>
	// the requester's own approval: access: a change request is approved by principals other than its requester's
	// applied <nil> v 2
}
