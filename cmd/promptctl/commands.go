package main

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/promptd/promptd/api/client"
)

func versionArg(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(s, "v"))
	if err != nil || n < 1 {
		return 0, usageError{fmt.Sprintf("%q is not a version number", s)}
	}
	return n, nil
}

func runAgents(a *app, args []string) error {
	if _, err := a.parse(a.flags("agents"), args, 0, 0); err != nil {
		return err
	}
	agents, err := a.c.AllAgents(a.ctx)
	if err != nil {
		return err
	}
	return a.show(agents, []string{"AGENT", "LATEST", "HASH", "ENVS"}, func() [][]string {
		rows := make([][]string, len(agents))
		for i, ag := range agents {
			rows[i] = []string{ag.Agent, itoa(ag.LatestVersion), short(ag.LatestContentHash), envList(ag.Envs)}
		}
		return rows
	})
}

func envList(envs map[string]int) string {
	var parts []string
	for e, v := range envs {
		parts = append(parts, fmt.Sprintf("%s=%d", e, v))
	}
	sort.Strings(parts)
	return orDefault(strings.Join(parts, " "), "-")
}

func runVersions(a *app, args []string) error {
	fs := a.flags("versions")
	limit := fs.Int("limit", 50, "how many, newest first")
	pos, err := a.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	p, err := a.c.ListVersions(a.ctx, pos[0], client.ListOptions{Limit: *limit})
	if err != nil {
		return err
	}
	return a.show(p, []string{"VERSION", "HASH", "CREATED", "BY", "MESSAGE"}, func() [][]string {
		rows := make([][]string, len(p.Items))
		for i, v := range p.Items {
			rows[i] = []string{itoa(v.Version), short(v.ContentHash), when(v.CreatedAt), v.CreatedBy, v.Message}
		}
		return rows
	})
}

func runGet(a *app, args []string) error {
	pos, err := a.parse(a.flags("get"), args, 2, 2)
	if err != nil {
		return err
	}
	n, err := versionArg(pos[1])
	if err != nil {
		return err
	}
	v, err := a.c.GetVersion(a.ctx, pos[0], n)
	if err != nil {
		return err
	}
	if a.output == "json" {
		return a.printJSON(v)
	}
	fmt.Fprintf(a.stdout, "agent:   %s\nversion: %d\nhash:    %s\ncreated: %s by %s\nmessage: %s\nconfig:\n%s",
		v.Agent, v.Version, v.ContentHash, when(v.CreatedAt), v.CreatedBy, v.Message, client.Pretty(mustCanonical(v.Config)))
	return nil
}

func runDiff(a *app, args []string) error {
	pos, err := a.parse(a.flags("diff"), args, 3, 3)
	if err != nil {
		return err
	}
	x, err := versionArg(pos[1])
	if err != nil {
		return err
	}
	y, err := versionArg(pos[2])
	if err != nil {
		return err
	}
	d, err := a.c.Diff(a.ctx, pos[0], x, y)
	if err != nil {
		return err
	}
	if a.output == "json" {
		return a.printJSON(map[string]any{"agent": pos[0], "a": x, "b": y, "diff": d})
	}
	if d == "" {
		fmt.Fprintf(a.stdout, "versions %d and %d of %s have the same config\n", x, y, pos[0])
	}
	fmt.Fprint(a.stdout, d)
	return nil
}

// runEnvs: envs AGENT lists the agent's env pointers; envs AGENT ENV
// shows one with its history, revocations and active release.
func runEnvs(a *app, args []string) error {
	if len(args) > 0 && args[0] == "set" {
		return runEnvsSet(a, args[1:])
	}
	pos, err := a.parse(a.flags("envs"), args, 1, 2)
	if err != nil {
		return err
	}
	if len(pos) == 1 {
		agents, err := a.c.AllAgents(a.ctx)
		if err != nil {
			return err
		}
		for _, ag := range agents {
			if ag.Agent == pos[0] {
				return a.show(ag.Envs, []string{"ENV", "VERSION"}, func() [][]string {
					var rows [][]string
					for e, v := range ag.Envs {
						rows = append(rows, []string{e, itoa(v)})
					}
					sort.Slice(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
					return rows
				})
			}
		}
		return fmt.Errorf("promptd has no agent %s", pos[0])
	}
	e, err := a.c.GetEnv(a.ctx, pos[0], pos[1])
	if err != nil {
		return err
	}
	if a.output == "json" {
		return a.printJSON(e)
	}
	a.printEnv(e)
	return nil
}

// runEnvsSet: envs set AGENT ENV VERSION [--expected-revision N]
// [--reason R] points the env at VERSION: a compare-and-set on the
// pointer's revision (the one read just before, or the one given), so a
// switch someone made meanwhile is a conflict (exit 3), never overwritten.
// A protected env opens a change request instead (exit 0, its id printed).
func runEnvsSet(a *app, args []string) error {
	fs := a.flags("envs set")
	reason := fs.String("reason", "", "why, for the audit log")
	expected := fs.Int64("expected-revision", -1, "the pointer's revision you read (default: the one read now; 0: the env must have no pointer yet)")
	pos, err := a.parse(fs, args, 3, 3)
	if err != nil {
		return err
	}
	agent, env := pos[0], pos[1]
	version, err := strconv.Atoi(pos[2])
	if err != nil || version < 1 {
		return usageError{fmt.Sprintf("VERSION must be a version number, not %q", pos[2])}
	}
	rev, from := *expected, 0
	if rev < 0 {
		cur, err := a.c.GetEnv(a.ctx, agent, env)
		var pe *client.Error
		switch {
		case err == nil:
			rev, from = cur.Revision, cur.Version
		case errors.As(err, &pe) && pe.NotFound():
			rev = 0 // no pointer yet: create it
		default:
			return err
		}
	}
	e, err := a.c.PutEnv(a.ctx, agent, env, client.PutEnvRequest{Version: version, ExpectedRevision: rev,
		Reason: orDefault(*reason, "promptctl envs set")})
	var pending *client.PendingError
	if errors.As(err, &pending) {
		if a.output == "json" {
			return a.printJSON(pending.ChangeRequest)
		}
		fmt.Fprintf(a.stdout, "%s/%s is protected: change request %s opened to point it at version %d; "+
			"it applies once approved (promptctl approvals show %s)\n", agent, env, pending.ChangeRequest.ID, version, pending.ChangeRequest.ID)
		return nil
	}
	if err != nil {
		return err
	}
	if a.output == "json" {
		return a.printJSON(e)
	}
	if from == e.Version && *expected < 0 {
		fmt.Fprintf(a.stdout, "%s/%s already points at version %d (revision %d)\n", agent, env, e.Version, e.Revision)
		return nil
	}
	fmt.Fprintf(a.stdout, "%s/%s now points at version %d (revision %d)\n", agent, env, e.Version, e.Revision)
	return nil
}

func (a *app) printEnv(e *client.Env) {
	revoked := make([]string, len(e.Revoked))
	for i, v := range e.Revoked {
		revoked[i] = itoa(v)
	}
	fmt.Fprintf(a.stdout, "%s/%s: version %d (revision %d, by %s at %s)\nrevoked: %s\n", e.Agent, e.Env, e.Version,
		e.Revision, e.UpdatedBy, when(e.UpdatedAt.Time()), orDefault(strings.Join(revoked, ", "), "none"))
	if r := e.Release; r != nil {
		fmt.Fprintf(a.stdout, "release: %s %s, candidate %d at %s%% (baseline %d)\n", r.ID, r.State, r.CandidateVersion, r.Percent, r.BaselineVersion)
	} else {
		fmt.Fprintln(a.stdout, "release: none")
	}
	if len(e.History) > 0 {
		fmt.Fprintln(a.stdout, "history:")
		rows := make([][]string, len(e.History))
		for i, m := range e.History {
			rows[i] = []string{itoa(m.Revision), m.Action, itoa(m.FromVersion) + " -> " + itoa(m.ToVersion), m.Actor, when(m.At.Time()), m.Reason}
		}
		a.table([]string{"REVISION", "ACTION", "MOVE", "BY", "AT", "REASON"}, rows)
	}
}

// runRollback: rollback AGENT ENV [--to V]: the active release is rolled
// back if there is one, else the pointer moves back (to V, or the newest
// older unrevoked version of its history) and the version left is revoked.
func runRollback(a *app, args []string) error {
	fs := a.flags("rollback")
	to := fs.Int("to", 0, "version to roll back to (default: the previous one)")
	reason := fs.String("reason", "", "why, for the audit log")
	pos, err := a.parse(fs, args, 2, 2)
	if err != nil {
		return err
	}
	e, err := a.c.GetEnv(a.ctx, pos[0], pos[1])
	if err != nil {
		return err
	}
	r, err := a.c.RollbackEnv(a.ctx, pos[0], pos[1], client.RollbackEnvRequest{ExpectedRevision: e.Revision, ToVersion: *to,
		Reason: orDefault(*reason, "promptctl rollback")})
	if err != nil {
		return err
	}
	if a.output == "json" {
		return a.printJSON(r)
	}
	if r.Release != nil {
		fmt.Fprintf(a.stdout, "rolled back release %s: %s/%s stays at version %d; version %d is revoked there\n",
			r.Release.ID, pos[0], pos[1], r.ToVersion, r.FromVersion)
	} else {
		fmt.Fprintf(a.stdout, "rolled back %s/%s: version %d -> %d; version %d is revoked there\n", pos[0], pos[1], r.FromVersion, r.ToVersion, r.FromVersion)
	}
	return nil
}

func runSessions(a *app, args []string) error {
	fs := a.flags("sessions")
	since := fs.Int64("since", 0, "turns after this seq")
	limit := fs.Int("limit", 50, "turns per page")
	pos, err := a.parse(fs, args, 2, 2)
	if err != nil {
		return err
	}
	if pos[0] != "get" {
		return usageError{"sessions takes get ID"}
	}
	s, err := a.c.GetSession(a.ctx, pos[1], *since, *limit)
	if err != nil {
		return err
	}
	if a.output == "json" {
		return a.printJSON(s)
	}
	user, holder := "-", "none"
	if s.UserID != nil {
		user = *s.UserID
	}
	if s.Lease != nil {
		holder = fmt.Sprintf("%s (fence %d, until %s)", s.Lease.Holder, s.Lease.Fence, when(s.Lease.ExpiresAt.Time()))
	}
	fmt.Fprintf(a.stdout, "session %s: %s/%s, user %s, pinned to version %d, %s, revision %d, %d turns\nlease: %s\nstate keys: %s\n",
		s.SessionID, s.Agent, s.Env, user, s.PinnedVersion, s.State, s.Revision, s.TurnCount, holder,
		orDefault(strings.Join(s.StateKeys, ", "), "none"))
	rows := make([][]string, len(s.Turns))
	for i, t := range s.Turns {
		content := string(t.Content)
		if len(content) > 80 {
			content = content[:77] + "..."
		}
		rows[i] = []string{itoa(t.Seq), t.Role, content}
	}
	if len(rows) > 0 {
		a.table([]string{"SEQ", "ROLE", "CONTENT"}, rows)
	}
	return nil
}

func runAudit(a *app, args []string) error {
	var q client.AuditQuery
	fs := a.flags("audit")
	fs.StringVar(&q.Agent, "agent", "", "only this agent")
	fs.StringVar(&q.Env, "env", "", "only this env")
	fs.StringVar(&q.SessionID, "session", "", "only this session")
	fs.StringVar(&q.Action, "action", "", "only this action, such as version.created")
	fs.Int64Var(&q.Since, "since", 0, "events before this id (after it with --oldest-first)")
	fs.IntVar(&q.Limit, "limit", 50, "how many")
	oldest := fs.Bool("oldest-first", false, "oldest first (default: newest first)")
	if _, err := a.parse(fs, args, 0, 0); err != nil {
		return err
	}
	q.NewestFirst = !*oldest
	p, err := a.c.Audit(a.ctx, q)
	if err != nil {
		return err
	}
	return a.show(p, []string{"ID", "AT", "ACTOR", "ACTION", "RESOURCE", "DETAILS"}, func() [][]string {
		rows := make([][]string, len(p.Items))
		for i, e := range p.Items {
			d := string(e.Details)
			if len(d) > 100 {
				d = d[:97] + "..."
			}
			rows[i] = []string{strconv.FormatInt(e.ID, 10), when(e.At), e.Actor, e.Action, e.Resource, d}
		}
		return rows
	})
}
