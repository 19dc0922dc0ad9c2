package main

import (
	"fmt"
	"strings"

	"github.com/promptd/promptd/api/client"
)

func runApprovals(a *app, args []string) error {
	if len(args) == 0 {
		return usageError{"approvals needs a subcommand: list, show, approve, reject or cancel"}
	}
	if isHelp(args[0]) {
		a.help("approvals", nil)
		return nil
	}
	switch verb := args[0]; verb {
	case "list":
		fs := a.flags("approvals list")
		state := fs.String("state", "pending", "pending, applied, failed, rejected, expired, cancelled, or all")
		agent := fs.String("agent", "", "only this agent")
		env := fs.String("env", "", "only this env")
		if _, err := a.parse(fs, args[1:], 0, 0); err != nil {
			return err
		}
		if *state == "all" {
			*state = ""
		}
		p, err := a.c.ChangeRequests(a.ctx, *state, *agent, *env, client.ListOptions{Limit: 500})
		if err != nil {
			return err
		}
		return a.show(p, []string{"ID", "STATE", "ACTION", "AGENT", "ENV", "BY", "APPROVALS", "EXPIRES"}, func() [][]string {
			rows := make([][]string, len(p.Items))
			for i, cr := range p.Items {
				rows[i] = []string{cr.ID, cr.State, cr.Action, cr.Agent, cr.Env, cr.RequestedBy,
					fmt.Sprintf("%d/%d %s", len(cr.Approvals), cr.ApprovalsNeeded, strings.Join(cr.Approvals, ",")), when(cr.ExpiresAt)}
			}
			return rows
		})
	case "show", "approve", "reject", "cancel":
		pos, err := a.parse(a.flags("approvals "+verb), args[1:], 1, 1)
		if err != nil {
			return err
		}
		var cr *client.ChangeRequest
		if verb == "show" {
			cr, err = a.c.GetChangeRequest(a.ctx, pos[0])
		} else {
			cr, err = a.c.DecideChangeRequest(a.ctx, pos[0], verb)
		}
		if err != nil {
			return err
		}
		if a.output == "json" {
			return a.printJSON(cr)
		}
		fmt.Fprintf(a.stdout, "%s: %s %s/%s, %s (approvals %d/%d: %s), requested by %s\nrequest: %s\n", cr.ID, cr.Action, cr.Agent, cr.Env,
			cr.State, len(cr.Approvals), cr.ApprovalsNeeded, strings.Join(cr.Approvals, ","), cr.RequestedBy, cr.Request)
		if cr.State == "failed" {
			fmt.Fprintf(a.stdout, "problem: %s\n", cr.Problem)
		}
		return nil
	}
	return usageError{fmt.Sprintf("unknown approvals subcommand %q", args[0])}
}
