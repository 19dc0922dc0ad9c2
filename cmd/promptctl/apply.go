package main

import (
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/promptd/promptd/api/client"
)

// Plan and result statuses of apply.
const (
	stCreate    = "create"    // planned: a new version will be published
	stCreated   = "created"   // published
	stUnchanged = "unchanged" // promptd's latest version has this content
	stConflict  = "conflict"  // promptd's latest is not the version the lock file names
	stInvalid   = "invalid"   // promptd refused the config
	stFailed    = "failed"    // not attempted or not known (promptd unreachable)
)

// planItem is one agent of an apply.
type planItem struct {
	Agent       string `json:"agent"`
	File        string `json:"file"`
	Status      string `json:"status"`
	Base        int    `json:"base_version"`         // from the lock file
	Latest      int    `json:"latest_version"`       // promptd's, when planned
	Version     int    `json:"version,omitempty"`    // created, or unchanged as
	ContentHash string `json:"content_hash"`         // of the file's config
	Detail      string `json:"detail,omitempty"`     // why a conflict or an error
	Code        string `json:"code,omitempty"`       // invalid: promptd's problem code
	Field       string `json:"field,omitempty"`      // invalid: the field it names
	Diff        string `json:"diff,omitempty"`       // promptd's latest -> the file
	Env         *envSw `json:"env_switch,omitempty"` // what --env did
	// Rebase: --rebase merges the file's changes since Base over Latest.
	Rebase bool `json:"rebase,omitempty"`
	// Merge names a merged version's parents (and the file was rewritten
	// with the merged config).
	Merge *client.VersionMerge `json:"merge,omitempty"`
	file  promptFile
	// planned: a dry run's create that references a fragment version this
	// apply plans (promptd cannot check it before that version exists).
	planned bool
}

// envSw is one env pointer switch made by --env.
type envSw struct {
	Env      string `json:"env"`
	From     int    `json:"from_version"`
	To       int    `json:"to_version"`
	Revision int64  `json:"revision,omitempty"`
	Result   string `json:"result"` // switched, created, already, conflict, failed
	Detail   string `json:"detail,omitempty"`
}

type applyOpts struct {
	path, env, message     string
	atomic, dryRun, rebase bool
}

// runApply: promptctl apply -f DIR|FILE [--atomic] [--env ENV] [--message M] [--dry-run] [--rebase].
func runApply(a *app, args []string) error {
	var o applyOpts
	fs := a.flags("apply")
	fs.StringVar(&o.path, "f", "", "prompt file, or directory of prompt files (*.yaml, *.yml, *.json)")
	fs.BoolVar(&o.atomic, "atomic", false, "publish every version through one all_or_nothing import, or none")
	fs.StringVar(&o.env, "env", "", "then point ENV at each applied version")
	fs.StringVar(&o.message, "message", "", "version message (a file's own message wins)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "show the plan; change nothing")
	fs.BoolVar(&o.rebase, "rebase", false, "merge your changes over versions published since your base (three-way); overlaps are printed as a diff")
	if _, err := a.parse(fs, args, 0, 0); err != nil {
		return err
	}
	if o.path == "" {
		return usageError{"-f DIR|FILE is required"}
	}
	if o.rebase && o.atomic {
		return usageError{"--rebase merges each agent's version on its own; it cannot be --atomic"}
	}
	files, dir, err := loadPrompts(o.path)
	if err != nil {
		return err
	}
	frags, err := loadFragments(o.path)
	if err != nil {
		return err
	}
	lock, err := readLock(dir)
	if err != nil {
		return err
	}
	// Fragments first: an agent that references one by an env or a version
	// then pins what this apply just published.
	fp, err := a.applyFragments(frags, lock, o)
	if err != nil {
		if fp != nil && !o.dryRun {
			err = errors.Join(err, writeLock(dir, lock))
		}
		if fp != nil && a.output == "json" {
			_ = a.printJSON(map[string]any{"dry_run": o.dryRun, "lock_file": filepath.Join(dir, lockName), "fragments": fp.items})
		} else if fp != nil {
			a.reportFragments(fp)
		}
		return err
	}
	items, err := a.plan(files, lock, fp)
	if err != nil {
		if !o.dryRun {
			err = errors.Join(err, writeLock(dir, lock))
		}
		return err
	}
	if o.rebase {
		for _, it := range items { // a stale base merges instead of conflicting
			if it.Status == stConflict && it.Base > 0 && it.Latest > it.Base {
				it.Status, it.Rebase, it.Detail, it.Diff = stCreate, true, "", ""
			}
		}
	}
	if o.env != "" {
		if err := a.refuseActiveReleases(items, o.env); err != nil {
			return err
		}
	}
	if o.dryRun {
		err = a.check(items, o)
	} else {
		err = a.publish(items, o)
		for _, it := range items { // the lock file records only what promptd has
			if it.Status == stCreated || it.Status == stUnchanged {
				lock.Agents[it.Agent] = lockEntry{Version: it.Version, ContentHash: it.ContentHash}
			}
		}
		if werr := writeLock(dir, lock); werr != nil {
			err = errors.Join(err, fmt.Errorf("writing %s: %w", lockName, werr))
		}
		if err == nil && o.env != "" && !(o.atomic && count(items, stConflict) > 0) {
			a.switchEnvs(items, o.env)
		}
	}
	a.report(items, fp, o, dir)
	return outcome(items, fp, err, o)
}

// plan compares each file with promptd's latest version of its agent and
// with the lock file. A config that references fragments is unchanged when
// the version promptd would make of it now (?dry_run=true, its references
// pinned again) has the latest's content hash; it is not published when a
// fragment it references was not applied (fp), and in a dry run it is
// planned when a planned fragment change would make it pin another version.
func (a *app) plan(files []promptFile, lock *lockFile, fp *fragPlan) ([]*planItem, error) {
	agents, err := a.c.AllAgents(a.ctx)
	if err != nil {
		return nil, err
	}
	latest := map[string]client.Agent{}
	for _, ag := range agents {
		latest[ag.Agent] = ag
	}
	items := make([]*planItem, len(files))
	for i, f := range files {
		ag, known := latest[f.Agent]
		it := &planItem{Agent: f.Agent, File: filepath.Base(f.Path), Base: lock.Agents[f.Agent].Version,
			Latest: ag.LatestVersion, ContentHash: f.Hash, file: f}
		items[i] = it
		refs := len(configRefs(f.Config)) > 0
		if refs && fp != nil {
			if names := fp.blockedBy(f.Config); names != "" {
				it.Status, it.Detail = stFailed, "not published: it references fragment "+names+", which this apply did not apply (see above)"
				continue
			}
			if why := fp.changedRef(f.Config); why != "" && it.Base == it.Latest {
				it.Status, it.Detail, it.planned = stCreate, "would pin a new fragment version: "+why, true
				continue
			}
		}
		switch {
		case known && ag.LatestContentHash == f.Hash:
			it.Status, it.Version = stUnchanged, ag.LatestVersion
		case known && refs && a.pinsSame(it, ag):
			it.Status, it.Version = stUnchanged, ag.LatestVersion
		case it.Base == it.Latest:
			it.Status = stCreate
		default:
			a.conflict(it, it.Latest)
		}
	}
	return items, nil
}

// pinsSame reports whether publishing the file's config now over agent
// ag's latest version would make a version of the same content hash
// (promptd pins its fragment references again, writing nothing).
func (a *app) pinsSame(it *planItem, ag client.Agent) bool {
	v, err := a.c.CheckVersion(a.ctx, it.Agent, client.CreateVersionRequest{BaseVersion: ag.LatestVersion, Config: it.file.Config})
	return err == nil && v.ContentHash == ag.LatestContentHash
}

// conflict marks it as a conflict with promptd's latest version and diffs
// that version against the file.
func (a *app) conflict(it *planItem, latest int) {
	it.Status, it.Latest = stConflict, latest
	switch {
	case latest == 0:
		it.Detail = fmt.Sprintf("%s names version %d of %s, but promptd has no agent %s (another --server? was its data reset?). "+
			"Check the server; to publish the file there as a new agent, run `promptctl pull %s --agent %s` (it drops lock entries "+
			"of agents promptd does not have) and apply again.", lockName, it.Base, it.Agent, it.Agent, dirArg(it), it.Agent)
		return
	case it.Base == 0:
		it.Detail = fmt.Sprintf("promptd already has %s at version %d, and %s has no entry for it: nothing was published for %s. "+
			"Review it (promptctl get %s %d); to base your change on it, keep a copy of %s, run `promptctl pull %s --agent %s --force` "+
			"(it writes promptd's version and its lock entry), redo your change and apply again.",
			it.Agent, latest, lockName, it.Agent, it.Agent, latest, it.File, dirArg(it), it.Agent)
	default:
		by := ""
		if v, err := a.c.GetVersion(a.ctx, it.Agent, latest); err == nil {
			by = fmt.Sprintf(" (by %s at %s)", v.CreatedBy, when(v.CreatedAt))
		}
		it.Detail = fmt.Sprintf("your files were last applied as version %d, but promptd's latest version of %s is %d%s: "+
			"someone published meanwhile, or this branch is stale. Nothing was published for %s. "+
			"Pull/rebase your prompt files (so %s names version %d), or run `promptctl diff %s %d %d`, then apply again.",
			it.Base, it.Agent, latest, by, it.Agent, lockName, latest, it.Agent, it.Base, latest)
	}
	it.Diff = a.diffLatest(it, latest)
}

// dirArg is the directory of it's file, as a command argument.
func dirArg(it *planItem) string { return filepath.Dir(it.file.Path) }

// diffLatest is the unified diff from promptd's version latest to the file.
func (a *app) diffLatest(it *planItem, latest int) string {
	return a.diffVersion(it, latest, it.file.Config, it.File+" (yours)")
}

// diffVersion is the unified diff from promptd's version latest of it's
// agent to config (named toName).
func (a *app) diffVersion(it *planItem, latest int, config []byte, toName string) string {
	v, err := a.c.GetVersion(a.ctx, it.Agent, latest)
	if err != nil {
		return ""
	}
	// Both sides as an author writes them: fragment references, not the
	// pinned content (a config without fragments is as it is).
	theirs, err := unpinned(v.Config)
	if err != nil {
		theirs = v.Config
	}
	if u, err := unpinned(config); err == nil {
		config = u
	}
	local, err := client.Canonical(config)
	if err != nil {
		return ""
	}
	lines := func(canonical []byte) []string {
		return difflib.SplitLines(strings.TrimSuffix(string(client.Pretty(canonical)), "\n"))
	}
	d, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: lines(mustCanonical(theirs)), B: lines(local),
		FromFile: fmt.Sprintf("%s/v%d (promptd)", it.Agent, latest), ToFile: toName, Context: 3})
	return d
}

func mustCanonical(doc []byte) []byte {
	c, err := client.Canonical(doc)
	if err != nil {
		return doc
	}
	return c
}

// publish creates the planned versions: one by one, or (--atomic) in one
// all_or_nothing import, and only when nothing conflicts.
func (a *app) publish(items []*planItem, o applyOpts) error {
	var todo []*planItem
	for _, it := range items {
		if it.Status == stCreate {
			todo = append(todo, it)
		}
	}
	if len(todo) == 0 || (o.atomic && count(items, stConflict) > 0) {
		return nil
	}
	if o.atomic {
		return a.publishAtomic(todo, o)
	}
	for i, it := range todo {
		v, err := a.c.CreateVersion(a.ctx, it.Agent, client.CreateVersionRequest{
			BaseVersion: it.Base, Config: it.file.Config, Message: message(it, o), Merge: it.Rebase})
		var pe *client.Error
		switch {
		case err == nil:
			it.Status, it.Version = stCreated, v.Version
			if v.Merge != nil {
				a.rebased(it, v)
			}
		case errors.Is(err, client.ErrMergeConflict) && errors.As(err, &pe):
			a.mergeConflict(it, pe)
		case errors.Is(err, client.ErrVersionConflict) && errors.As(err, &pe):
			a.conflict(it, pe.LatestVersion()) // published between the plan and now
		case refused(err, &pe):
			it.invalid(pe)
		default: // promptd unreachable or the token refused: stop; what was created is kept
			for _, rest := range todo[i:] {
				rest.Status, rest.Detail = stFailed, "not published: "+err.Error()
			}
			return err
		}
	}
	return nil
}

// check asks promptd to validate each planned create without writing
// (?dry_run=true): a config promptd would refuse is invalid, with its
// problem code and field, and a base someone moved meanwhile a conflict.
func (a *app) check(items []*planItem, o applyOpts) error {
	for _, it := range items {
		if it.Status != stCreate {
			continue
		}
		if it.planned {
			if it.Latest > 0 {
				it.Diff = a.diffVersion(it, it.Latest, it.file.Config, it.File+" (yours)")
			}
			continue
		}
		v, err := a.c.CheckVersion(a.ctx, it.Agent, client.CreateVersionRequest{
			BaseVersion: it.Base, Config: it.file.Config, Message: message(it, o), Merge: it.Rebase})
		var pe *client.Error
		switch {
		case err == nil:
			if v.Merge != nil {
				it.Merge, it.Version = v.Merge, v.Version
				it.Detail = fmt.Sprintf("would merge your changes since version %d over version %d as version %d",
					v.Merge.BaseVersion, v.Merge.TheirsVersion, v.Version)
				it.Diff = a.diffVersion(it, it.Latest, v.Config, fmt.Sprintf("%s/v%d (merged, planned)", it.Agent, v.Version))
			} else if it.Latest > 0 {
				it.Diff = a.diffVersion(it, it.Latest, it.file.Config, it.File+" (yours)") // what the create would change
			}
		case errors.Is(err, client.ErrMergeConflict) && errors.As(err, &pe):
			a.mergeConflict(it, pe)
		case errors.Is(err, client.ErrVersionConflict) && errors.As(err, &pe):
			a.conflict(it, pe.LatestVersion())
		case refused(err, &pe):
			it.invalid(pe)
		default: // promptd unreachable or the token refused: the plan is not known
			for _, rest := range items {
				if rest.Status == stCreate {
					rest.Status, rest.Detail = stFailed, "not checked: "+err.Error()
				}
			}
			return err
		}
	}
	return nil
}

// refuseActiveReleases: --env would switch a pointer that an active
// release holds (409 release_active) after the version was published; an
// agent whose env has one is a conflict before anything is published for
// it, naming the release and how to finish it.
func (a *app) refuseActiveReleases(items []*planItem, env string) error {
	for _, it := range items {
		if it.Status != stCreate || it.Latest == 0 {
			continue
		}
		p, err := a.c.ListReleases(a.ctx, it.Agent, env, client.ListOptions{Limit: 1})
		if err != nil {
			return err
		}
		if len(p.Items) == 0 || (p.Items[0].State != "running" && p.Items[0].State != "paused") {
			continue
		}
		r := p.Items[0]
		it.Status, it.Code = stConflict, "release_active"
		it.Detail = fmt.Sprintf("release_active: env %s of %s has release %s (%s, candidate version %d), and a pointer switch waits "+
			"for it to end: nothing was published for %s. Promote it (promptctl release promote %s) or roll it back (promptctl release rollback %s), "+
			"or apply without --env and start a release of the new version once it ends.",
			env, it.Agent, r.ID, r.State, r.CandidateVersion, it.Agent, r.ID, r.ID)
	}
	return nil
}

// rebased records a merged create: its parents, and the file rewritten
// with the merged config (so that the lock file's entry is the file's and
// the next apply does not publish the unmerged config over it).
func (a *app) rebased(it *planItem, v *client.Version) {
	it.Merge, it.ContentHash = v.Merge, v.ContentHash
	it.Detail = fmt.Sprintf("merged your changes since version %d over version %d; %s now holds the merged config",
		v.Merge.BaseVersion, v.Merge.TheirsVersion, it.File)
	b, err := renderPrompt(it.Agent, v.Config, v.ContentHash, strings.HasSuffix(it.file.Path, ".json"))
	if err == nil {
		err = writeAtomic(it.file.Path, b)
	}
	if err != nil {
		it.Detail += fmt.Sprintf(" (not rewritten: %v; run `promptctl pull %s --agent %s --force`)", err, dirArg(it), it.Agent)
	}
}

// mergeConflict marks it as a conflict of a rebase: the paths both sides
// changed, as a diff of promptd's latest (theirs) against the file (yours).
func (a *app) mergeConflict(it *planItem, pe *client.Error) {
	paths := pe.MergeConflicts()
	it.Status, it.Latest, it.Code = stConflict, pe.LatestVersion(), string(pe.Code)
	it.Detail = fmt.Sprintf("your changes since version %d and versions %d..%d of %s changed %d of the same paths, "+
		"shown below (promptd's value as -, yours as +, the base in each hunk's header): nothing was published for %s. "+
		"Keep the values you want in %s, set the %s entry of %s to version %d, and apply again.",
		it.Base, it.Base+1, it.Latest, it.Agent, len(paths), it.Agent, it.File, it.Agent, lockName, it.Latest)
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s/v%d (promptd, theirs)\n+++ %s (yours)\n", it.Agent, it.Latest, it.File)
	show := func(raw []byte) string {
		if raw == nil {
			return "(absent)"
		}
		return string(mustCanonical(raw))
	}
	for _, p := range paths {
		fmt.Fprintf(&b, "@@ %s (base v%d: %s) @@\n-%s\n+%s\n", orDefault(p.String(), "(the whole config)"), it.Base, show(p.Base),
			show(p.Theirs), show(p.Ours))
	}
	it.Diff = b.String()
}

// refused reports a problem that is promptd's verdict on the request
// itself (not the token's rights, not a passing outage), setting *pe.
func refused(err error, pe **client.Error) bool {
	return errors.As(err, pe) && (*pe).Status != http.StatusUnauthorized && (*pe).Status != http.StatusForbidden && !(*pe).Temporary()
}

// invalid marks it as refused by promptd with problem pe.
func (it *planItem) invalid(pe *client.Error) {
	it.Status, it.Detail, it.Code, it.Field = stInvalid, describe(pe), string(pe.Code), pe.Field()
}

func (a *app) publishAtomic(todo []*planItem, o applyOpts) error {
	batch := make([]client.ImportItem, len(todo))
	for i, it := range todo {
		batch[i] = client.ImportItem{Agent: it.Agent, BaseVersion: it.Base, Config: it.file.Config, Message: message(it, o)}
	}
	res, err := a.c.Import(a.ctx, client.ImportAllOrNothing, batch)
	var pe *client.Error
	if errors.Is(err, client.ErrImportRejected) && errors.As(err, &pe) {
		res = pe.ImportResult()
	} else if err != nil {
		for _, it := range todo {
			it.Status, it.Detail = stFailed, "not published: "+err.Error()
		}
		return err
	}
	for i, r := range res.Results {
		it := todo[i]
		switch r.Status {
		case stCreated:
			it.Status, it.Version = stCreated, r.Version
		case stConflict:
			a.conflict(it, r.LatestVersion)
		case stInvalid:
			it.Status = stInvalid
			if r.Error != nil {
				it.Detail = fmt.Sprintf("%s: %s", r.Error.Code, r.Error.Detail)
				it.Code, it.Field = r.Error.Code, r.Error.Field
			}
		default: // not_applied: valid, but the batch was rejected
			it.Status, it.Detail = stFailed, "not published: the batch was rejected (--atomic)"
		}
		if err != nil && it.Status == stCreated {
			it.Status, it.Detail = stFailed, "not published: the batch was rejected (--atomic)"
		}
	}
	return nil
}

func message(it *planItem, o applyOpts) string {
	return orDefault(it.file.Message, orDefault(o.message, "promptctl apply "+it.File))
}

// switchEnvs points env at each applied version, with the pointer's
// revision read just before, reporting each switch.
func (a *app) switchEnvs(items []*planItem, env string) {
	for _, it := range items {
		if it.Status != stCreated && it.Status != stUnchanged {
			continue
		}
		sw := &envSw{Env: env, To: it.Version}
		it.Env = sw
		cur, err := a.c.GetEnv(a.ctx, it.Agent, env)
		var pe *client.Error
		var pending *client.PendingError
		switch {
		case err == nil:
			sw.From, sw.Revision = cur.Version, cur.Revision
		case errors.As(err, &pe) && pe.NotFound(): // no pointer yet: create it
		default:
			sw.Result, sw.Detail = stFailed, err.Error()
			continue
		}
		if sw.From == sw.To {
			sw.Result = "already"
			continue
		}
		e, err := a.c.PutEnv(a.ctx, it.Agent, env, client.PutEnvRequest{Version: sw.To, ExpectedRevision: sw.Revision,
			Reason: "promptctl apply " + it.File})
		switch {
		case err == nil:
			sw.Result, sw.Revision = "switched", e.Revision
		case errors.As(err, &pending):
			sw.Result, sw.Detail = "pending approval", "change request "+pending.ChangeRequest.ID+" (promptctl approvals show "+pending.ChangeRequest.ID+")"
		case errors.As(err, &pe) && isConflict(pe):
			sw.Result, sw.Detail = stConflict, describe(pe)
		default:
			sw.Result, sw.Detail = stFailed, err.Error()
		}
	}
}

// outcome is apply's error: a conflict (exit 3), a failure (exit 1), or nil.
func outcome(items []*planItem, fp *fragPlan, err error, o applyOpts) error {
	conflicts, failed := fp.outcome()
	for _, it := range items {
		switch it.Status {
		case stConflict:
			conflicts = append(conflicts, it.Agent)
		case stInvalid, stFailed:
			failed = append(failed, it.Agent)
		}
		if it.Env != nil && it.Env.Result == stConflict {
			conflicts = append(conflicts, it.Agent+" (env "+it.Env.Env+")")
		}
		if it.Env != nil && it.Env.Result == stFailed {
			failed = append(failed, it.Agent+" (env "+it.Env.Env+")")
		}
	}
	switch {
	case err != nil:
		return err
	case len(conflicts) > 0:
		what := fmt.Sprintf("%d other agent(s) applied", count(items, stCreated)+count(items, stUnchanged))
		if o.atomic {
			what = "nothing was published (--atomic)"
		}
		if o.dryRun {
			what = "dry run: nothing was changed"
		}
		return conflictError{fmt.Sprintf("conflict: %s (see above); %s. Pull/rebase your prompt files (or run `promptctl diff`) and apply again.",
			strings.Join(conflicts, ", "), what)}
	case len(failed) > 0 && o.dryRun:
		return fmt.Errorf("dry run: promptd would not apply %s (see above); nothing was changed", strings.Join(failed, ", "))
	case len(failed) > 0:
		return fmt.Errorf("not applied: %s", strings.Join(failed, ", "))
	}
	return nil
}

func count(items []*planItem, status string) int {
	n := 0
	for _, it := range items {
		if it.Status == status {
			n++
		}
	}
	return n
}
