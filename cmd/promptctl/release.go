package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/promptd/promptd/api/client"
)

// runRelease dispatches the release subcommands. A release is named by
// its id, or by AGENT ENV for the env's active release.
func runRelease(a *app, args []string) error {
	if len(args) == 0 {
		return usageError{"release needs a subcommand: start, set, pause, resume, promote, rollback or status"}
	}
	if isHelp(args[0]) {
		a.help("release", nil)
		return nil
	}
	switch sub, rest := args[0], args[1:]; sub {
	case "start":
		return releaseStart(a, rest)
	case "set":
		return releaseSet(a, rest)
	case "pause", "resume", "promote", "rollback":
		return releaseTransition(a, sub, rest)
	case "status":
		return releaseStatus(a, rest)
	default:
		return usageError{fmt.Sprintf("unknown release subcommand %q", sub)}
	}
}

// steps is the repeatable --step flag: "25@10m" or "promote@1h".
type steps []client.Step

func (s *steps) String() string { return fmt.Sprint(*s) }

func (s *steps) Set(v string) error {
	what, after, ok := strings.Cut(v, "@")
	if !ok || after == "" {
		return fmt.Errorf("want PERCENT@DURATION or promote@DURATION, such as 25@10m")
	}
	if what == "promote" {
		*s = append(*s, client.Step{Promote: true, After: after})
	} else {
		*s = append(*s, client.Step{Percent: json.Number(strings.TrimSuffix(what, "%")), After: after})
	}
	return nil
}

func releaseStart(a *app, args []string) error {
	var req client.CreateReleaseRequest
	var st steps
	fs := a.flags("release start")
	percent := fs.String("percent", "", "share of callers in the candidate arm, 0..100 (2 decimals at most)")
	fs.IntVar(&req.CandidateVersion, "candidate", 0, "candidate version (default: the agent's latest)")
	fs.StringVar(&req.Stickiness, "stickiness", "user", "bucket by user or session")
	fs.Var(&st, "step", "scheduled step PERCENT@DURATION or promote@DURATION (repeatable)")
	fs.StringVar(&req.Message, "message", "", "why, for the audit log")
	guardFlag := fs.String("guard", "", "guard the release: METRIC:MAX_DEGRADATION[:ACTION], such as failure_rate:2:rollback (points) or score:0.05")
	pos, err := a.parse(fs, args, 2, 2)
	if err != nil {
		return err
	}
	if *guardFlag != "" {
		if req.Guard, err = parseGuardFlag(*guardFlag); err != nil {
			return err
		}
	}
	if *percent == "" {
		return usageError{"--percent is required"}
	}
	req.Percent, req.Steps = json.Number(strings.TrimSuffix(*percent, "%")), st
	if req.CandidateVersion == 0 {
		agents, err := a.c.AllAgents(a.ctx)
		if err != nil {
			return err
		}
		for _, ag := range agents {
			if ag.Agent == pos[0] {
				req.CandidateVersion = ag.LatestVersion
			}
		}
		if req.CandidateVersion == 0 {
			return fmt.Errorf("promptd has no agent %s", pos[0])
		}
	}
	r, err := a.c.CreateRelease(a.ctx, pos[0], pos[1], req)
	if err != nil {
		return err
	}
	return a.printRelease(r, fmt.Sprintf("started release %s: %s/%s candidate %d at %s%% (baseline %d)",
		r.ID, r.Agent, r.Env, r.CandidateVersion, r.Percent, r.BaselineVersion))
}

// parseGuardFlag reads --guard METRIC:MAX[:ACTION].
func parseGuardFlag(v string) (*client.GuardConfig, error) {
	parts := strings.Split(v, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return nil, usageError{"--guard wants METRIC:MAX_DEGRADATION[:ACTION], such as failure_rate:2:rollback"}
	}
	max, err := strconv.ParseFloat(parts[1], 64)
	if err != nil {
		return nil, usageError{fmt.Sprintf("--guard: max degradation %q is not a number", parts[1])}
	}
	g := &client.GuardConfig{Metric: parts[0], MaxDegradation: max}
	if len(parts) == 3 {
		g.Action = parts[2]
	}
	return g, nil
}

// releaseRef reads ID or AGENT ENV from the front of pos and returns the
// release (read now: its revision is what the change is based on).
func (a *app) releaseRef(pos []string) (*client.Release, []string, error) {
	if len(pos) >= 2 && !strings.HasPrefix(pos[0], "rel_") {
		e, err := a.c.GetEnv(a.ctx, pos[0], pos[1])
		if err != nil {
			return nil, nil, err
		}
		if e.Release == nil {
			return nil, nil, fmt.Errorf("%s/%s has no active release (promptctl release status %s %s lists the last ones)",
				pos[0], pos[1], pos[0], pos[1])
		}
		return e.Release, pos[2:], nil
	}
	if len(pos) == 0 {
		return nil, nil, usageError{"name the release: ID, or AGENT ENV for the env's active release"}
	}
	r, err := a.c.GetRelease(a.ctx, pos[0])
	return r, pos[1:], err
}

func releaseSet(a *app, args []string) error {
	fs := a.flags("release set")
	reason := fs.String("reason", "", "why, for the audit log")
	pos, err := a.parse(fs, args, 2, 3)
	if err != nil {
		return err
	}
	r, rest, err := a.releaseRef(pos)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return usageError{"release set takes ID PERCENT, or AGENT ENV PERCENT"}
	}
	from := r.Percent
	r, err = a.c.SetPercent(a.ctx, r.ID, json.Number(strings.TrimSuffix(rest[0], "%")), r.Revision, *reason)
	if err != nil {
		return err
	}
	return a.printRelease(r, fmt.Sprintf("release %s: %s%% -> %s%% of callers get version %d", r.ID, from, r.Percent, r.CandidateVersion))
}

func releaseTransition(a *app, action string, args []string) error {
	fs := a.flags("release " + action)
	reason := fs.String("reason", "", "why, for the audit log")
	pos, err := a.parse(fs, args, 1, 2)
	if err != nil {
		return err
	}
	r, rest, err := a.releaseRef(pos)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return usageError{"too many arguments"}
	}
	o := client.TransitionOptions{ExpectedRevision: &r.Revision, Reason: orDefault(*reason, "promptctl release "+action)}
	do := map[string]func() (*client.Release, error){
		"pause":    func() (*client.Release, error) { return a.c.Pause(a.ctx, r.ID, o) },
		"resume":   func() (*client.Release, error) { return a.c.Resume(a.ctx, r.ID, o) },
		"promote":  func() (*client.Release, error) { return a.c.Promote(a.ctx, r.ID, o) },
		"rollback": func() (*client.Release, error) { return a.c.RollbackRelease(a.ctx, r.ID, o) },
	}[action]
	if r, err = do(); err != nil {
		return err
	}
	msg := fmt.Sprintf("release %s is %s", r.ID, r.State)
	switch r.State {
	case client.StatePromoted:
		msg += fmt.Sprintf(": %s/%s now points at version %d", r.Agent, r.Env, r.CandidateVersion)
	case client.StateRolledBack:
		msg += fmt.Sprintf(": %s/%s stays at version %d; version %d is revoked there", r.Agent, r.Env, r.BaselineVersion, r.CandidateVersion)
	}
	return a.printRelease(r, msg)
}

func releaseStatus(a *app, args []string) error {
	pos, err := a.parse(a.flags("release status"), args, 1, 2)
	if err != nil {
		return err
	}
	if len(pos) == 2 {
		p, err := a.c.ListReleases(a.ctx, pos[0], pos[1], client.ListOptions{Limit: 10})
		if err != nil {
			return err
		}
		return a.show(p, []string{"ID", "STATE", "BASELINE", "CANDIDATE", "PERCENT", "GUARD", "CREATED", "BY"}, func() [][]string {
			rows := make([][]string, len(p.Items))
			for i, r := range p.Items {
				g := "-"
				if r.Guard != nil {
					g = r.Guard.State
				}
				rows[i] = []string{r.ID, r.State, itoa(r.BaselineVersion), itoa(r.CandidateVersion), r.Percent.String() + "%", g, when(r.CreatedAt.Time()), r.CreatedBy}
			}
			return rows
		})
	}
	r, err := a.c.GetRelease(a.ctx, pos[0])
	if err != nil {
		return err
	}
	return a.printRelease(r, "")
}

// printRelease prints a release: JSON, or a headline and its details.
func (a *app) printRelease(r *client.Release, headline string) error {
	if a.output == "json" {
		return a.printJSON(r)
	}
	if headline != "" {
		fmt.Fprintln(a.stdout, headline)
		return nil
	}
	fmt.Fprintf(a.stdout, "release %s: %s/%s %s, candidate %d at %s%% (baseline %d), stickiness %s, revision %d\n",
		r.ID, r.Agent, r.Env, r.State, r.CandidateVersion, r.Percent, r.BaselineVersion, r.Stickiness, r.Revision)
	if r.NextStepAt != nil {
		fmt.Fprintf(a.stdout, "next step at %s (%d of %d applied)\n", when(r.NextStepAt.Time()), r.StepsApplied, len(r.Steps))
	}
	a.printGuard(r)
	if len(r.History) > 0 {
		rows := make([][]string, len(r.History))
		for i, h := range r.History {
			rows[i] = []string{itoa(h.Revision), h.Action, h.From + " -> " + h.To, h.Percent.String() + "%", h.Actor, when(h.At.Time()), h.Reason}
		}
		a.table([]string{"REVISION", "ACTION", "STATE", "PERCENT", "BY", "AT", "REASON"}, rows)
	}
	return nil
}

// printGuard prints a release's guard and its arms' figures.
func (a *app) printGuard(r *client.Release) {
	if g := r.Guard; g != nil {
		unit := " points"
		if g.Metric == "score" {
			unit = ""
		}
		fmt.Fprintf(a.stdout, "guard: %s, max degradation %v%s at %v confidence, min %d samples an arm, action %s, gate_steps %v: %s",
			g.Metric, g.MaxDegradation, unit, g.Confidence, g.MinSamples, g.Action, g.GateSteps, g.State)
		if g.DecidedAt != nil {
			fmt.Fprintf(a.stdout, " at %s", when(g.DecidedAt.Time()))
		}
		fmt.Fprintf(a.stdout, " (outcomes since %s)\n", when(g.Since.Time()))
		if g.Reason != "" {
			fmt.Fprintf(a.stdout, "guard reason: %s\n", g.Reason)
		}
	}
	st := r.Stats
	if st == nil {
		return
	}
	arm := func(name string, s client.ArmStats) []string {
		score := "-"
		if s.ScoreMean != nil {
			score = strconv.FormatFloat(*s.ScoreMean, 'f', 4, 64)
		}
		interval := "-" // until both arms have the guard's minimum samples
		if s.Interval != nil {
			interval = fmt.Sprintf("[%.2f%%, %.2f%%]", s.Interval[0], s.Interval[1])
		}
		return []string{name, strconv.FormatInt(s.N, 10), strconv.FormatInt(s.Failures, 10), fmt.Sprintf("%.2f%%", s.Rate),
			interval, score}
	}
	a.table([]string{"ARM", "N", "FAILURES", "RATE", "INTERVAL", "SCORE"}, [][]string{arm("baseline", st.Baseline), arm("candidate", st.Candidate)})
	if d := st.Difference; d != nil {
		fmt.Fprintf(a.stdout, "degradation (candidate worse by): %.4g, always-valid interval [%.4g, %.4g]\n", d.Estimate, d.Lower, d.Upper)
	}
}
