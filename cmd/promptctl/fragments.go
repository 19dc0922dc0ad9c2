package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"go.yaml.in/yaml/v4"

	"github.com/promptd/promptd/api/client"
)

// fragmentsDir is the subdirectory of a prompts directory that holds the
// fragment files: one file per fragment.
const fragmentsDir = "fragments"

// fragmentFile is one fragment file: {name, text|messages, variables?,
// fragments?, message?, envs?}.
type fragmentFile struct {
	Path    string
	Name    string
	Body    map[string]json.RawMessage // text|messages, variables, fragments: as written
	Message string
	Envs    []string // env pointers to move to the version the file is applied as
	Hash    string   // of the file's content and envs (the lock file's entry)
}

// request is the create of a version with the file's content.
func (f fragmentFile) request(base int, message string) client.CreateFragmentVersionRequest {
	content := map[string]json.RawMessage{}
	for _, k := range []string{"text", "messages"} {
		if f.Body[k] != nil {
			content[k] = f.Body[k]
		}
	}
	req := client.CreateFragmentVersionRequest{BaseVersion: base, Fragment: content, Message: message}
	if f.Body["variables"] != nil {
		req.Variables = f.Body["variables"]
	}
	if f.Body["fragments"] != nil {
		req.Fragments = f.Body["fragments"]
	}
	return req
}

// refNames is the fragment names the file's fragments reference.
func (f fragmentFile) refNames() []string {
	var names []string
	for _, r := range fragmentRefs(f.Body["fragments"]) {
		names = append(names, r.Name)
	}
	return names
}

// loadFragments reads DIR/fragments/*.yaml|yml|json when path is a
// directory (none when it is a file or has no fragments directory), in
// publish order: a fragment after those of the directory it references.
func loadFragments(path string) ([]fragmentFile, error) {
	fi, err := os.Stat(path)
	if err != nil || !fi.IsDir() {
		return nil, err
	}
	dir := filepath.Join(path, fragmentsDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	byName := map[string]fragmentFile{}
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		f, err := loadFragment(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if other, dup := byName[f.Name]; dup {
			return nil, fmt.Errorf("fragment %s is defined twice: in %s and %s", f.Name, other.Path, p)
		}
		byName[f.Name] = f
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []fragmentFile
	done := map[string]bool{}
	var visit func(string, int)
	visit = func(n string, depth int) { // a cycle is promptd's to refuse
		f, ok := byName[n]
		if !ok || done[n] || depth > len(names) {
			return
		}
		for _, r := range f.refNames() {
			visit(r, depth+1)
		}
		if !done[n] {
			done[n] = true
			out = append(out, f)
		}
	}
	for _, n := range names {
		visit(n, 0)
	}
	return out, nil
}

// loadFragment reads one fragment file (YAML or JSON).
func loadFragment(path string) (fragmentFile, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fragmentFile{}, err
	}
	doc := raw
	if strings.ToLower(filepath.Ext(path)) != ".json" {
		if doc, err = yamlToJSON(raw); err != nil {
			return fragmentFile{}, err
		}
	}
	var f struct {
		Name      string          `json:"name"`
		Text      json.RawMessage `json:"text"`
		Messages  json.RawMessage `json:"messages"`
		Variables json.RawMessage `json:"variables"`
		Fragments json.RawMessage `json:"fragments"`
		Message   string          `json:"message"`
		Envs      []string        `json:"envs"`
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return fragmentFile{}, fmt.Errorf("want {name, text|messages, variables?, fragments?, message?, envs?}: %w", err)
	}
	if f.Name == "" {
		return fragmentFile{}, errors.New("name is required")
	}
	if (f.Text == nil) == (f.Messages == nil) {
		return fragmentFile{}, errors.New("exactly one of text or messages is required")
	}
	body := map[string]json.RawMessage{}
	for k, v := range map[string]json.RawMessage{"text": f.Text, "messages": f.Messages, "variables": f.Variables, "fragments": f.Fragments} {
		if v != nil {
			body[k] = v
		}
	}
	envs := append([]string(nil), f.Envs...)
	sort.Strings(envs)
	hash, err := fragmentFileHash(body, envs)
	if err != nil {
		return fragmentFile{}, err
	}
	return fragmentFile{Path: path, Name: f.Name, Body: body, Message: f.Message, Envs: envs, Hash: hash}, nil
}

func fragmentFileHash(body map[string]json.RawMessage, envs []string) (string, error) {
	doc := map[string]any{"body": body}
	if len(envs) > 0 {
		doc["envs"] = envs
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return "", err
	}
	return client.ContentHash(b)
}

// fragmentRef is one reference of a "fragments" object: {name, version}
// or {name, env} (a pinned one also holds content_hash and the content).
type fragmentRef struct {
	Name    string `json:"name"`
	Version int    `json:"version"`
	Env     string `json:"env"`
}

// fragmentRefs decodes a "fragments" object by alias (nil when absent or
// not an object: promptd is the judge of its shape).
func fragmentRefs(raw json.RawMessage) map[string]fragmentRef {
	var refs map[string]fragmentRef
	if len(raw) == 0 || json.Unmarshal(raw, &refs) != nil {
		return nil
	}
	return refs
}

// configRefs is the fragment references of a config document.
func configRefs(config json.RawMessage) map[string]fragmentRef {
	var top struct {
		Fragments json.RawMessage `json:"fragments"`
	}
	if json.Unmarshal(config, &top) != nil {
		return nil
	}
	return fragmentRefs(top.Fragments)
}

// unpinned is doc (a config, or a fragment body) as its author writes it:
// each pinned reference of its "fragments" cut back to {name, env} (or
// {name, version} when it has no env), and the variable declarations the
// pinned fragments brought into "variables" removed (publish merges them
// again), so that publishing it again pins the same content and gets the
// same content hash.
func unpinned(doc json.RawMessage) (json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil {
		return nil, err
	}
	raw, ok := top["fragments"]
	if !ok {
		return doc, nil
	}
	var pins map[string]map[string]json.RawMessage
	if err := json.Unmarshal(raw, &pins); err != nil {
		return nil, err
	}
	brought := map[string][]byte{}
	var collect func(pin map[string]json.RawMessage, depth int)
	collect = func(pin map[string]json.RawMessage, depth int) {
		var vars map[string]json.RawMessage
		if json.Unmarshal(pin["variables"], &vars) == nil {
			for k, v := range vars {
				if _, seen := brought[k]; !seen {
					brought[k] = mustCanonical(v)
				}
			}
		}
		var nested map[string]map[string]json.RawMessage
		if depth < 8 && json.Unmarshal(pin["fragments"], &nested) == nil {
			for _, n := range nested {
				collect(n, depth+1)
			}
		}
	}
	refs := map[string]map[string]json.RawMessage{}
	for alias, pin := range pins {
		ref := map[string]json.RawMessage{"name": pin["name"]}
		if pin["env"] != nil {
			ref["env"] = pin["env"]
		} else {
			ref["version"] = pin["version"]
		}
		refs[alias] = ref
		collect(pin, 0)
	}
	if top["fragments"], ok = mustMarshal(refs); !ok {
		return nil, errors.New("fragments: not JSON")
	}
	var vars map[string]json.RawMessage
	if json.Unmarshal(top["variables"], &vars) == nil && vars != nil {
		removed := false
		for k, v := range vars {
			if b, ok := brought[k]; ok && bytes.Equal(b, mustCanonical(v)) {
				delete(vars, k)
				removed = true
			}
		}
		if removed && len(vars) == 0 {
			delete(top, "variables")
		} else if removed {
			top["variables"], _ = mustMarshal(vars)
		}
	}
	b, ok := mustMarshal(top)
	if !ok {
		return nil, errors.New("not JSON")
	}
	return client.Canonical(b)
}

func mustMarshal(v any) (json.RawMessage, bool) {
	b, err := json.Marshal(v)
	return b, err == nil
}

// fragItem is one fragment of an apply.
type fragItem struct {
	Fragment    string   `json:"fragment"`
	File        string   `json:"file"`
	Status      string   `json:"status"`
	Base        int      `json:"base_version"` // promptd's latest, as read
	Version     int      `json:"version,omitempty"`
	ContentHash string   `json:"content_hash,omitempty"` // promptd's for the file's content
	Detail      string   `json:"detail,omitempty"`
	Code        string   `json:"code,omitempty"`
	Field       string   `json:"field,omitempty"`
	Diff        string   `json:"diff,omitempty"`
	Envs        []*envSw `json:"env_switches,omitempty"`
	file        fragmentFile
}

// applied reports whether promptd holds the file's content (created, or
// unchanged).
func (it *fragItem) applied() bool { return it.Status == stCreated || it.Status == stUnchanged }

// fragPlan is what the fragments of an apply do to the agents that
// reference them: the fragments not applied, and (dry run) the versions a
// reference would pin once the planned versions and pointer moves are made.
type fragPlan struct {
	items      []*fragItem
	notApplied map[string]bool
	planned    map[string]int // fragment -> planned new version (dry run)
	moves      map[string]int // "fragment/env" -> the version it would point at (dry run)
}

// changedRef names the reference of config that the dry run's planned
// fragment changes would make pin something else ("" when none).
func (p *fragPlan) changedRef(config json.RawMessage) string {
	for alias, r := range configRefs(config) {
		if r.Env != "" {
			if v, ok := p.moves[r.Name+"/"+r.Env]; ok {
				return fmt.Sprintf("fragment %s (alias %s) env %s would point at version %d", r.Name, alias, r.Env, v)
			}
		} else if v, ok := p.planned[r.Name]; ok && r.Version == v {
			return fmt.Sprintf("fragment %s (alias %s) version %d is planned in this apply", r.Name, alias, v)
		}
	}
	return ""
}

// blockedBy names a referenced fragment this apply did not apply ("" when none).
func (p *fragPlan) blockedBy(config json.RawMessage) string {
	var names []string
	for _, r := range configRefs(config) {
		if p.notApplied[r.Name] {
			names = append(names, r.Name)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// applyFragments plans each fragment file against promptd's latest version
// (promptd computes the content hash a create would give, ?dry_run=true:
// equal to the latest's is unchanged) and, unless a dry run, publishes each
// changed one with the latest it read as base_version and moves the env
// pointers its file names, one fragment after another (so a fragment that
// references another by an env pins what was just published).
func (a *app) applyFragments(files []fragmentFile, lock *lockFile, o applyOpts) (*fragPlan, error) {
	p := &fragPlan{notApplied: map[string]bool{}, planned: map[string]int{}, moves: map[string]int{}}
	if len(files) == 0 {
		return p, nil
	}
	all, err := a.c.AllFragments(a.ctx)
	if err != nil {
		return nil, err
	}
	latest := map[string]client.Fragment{}
	for _, f := range all {
		latest[f.Name] = f
	}
	for i, f := range files {
		fr := latest[f.Name]
		it := &fragItem{Fragment: f.Name, File: filepath.Join(fragmentsDir, filepath.Base(f.Path)), Base: fr.LatestVersion, file: f}
		p.items = append(p.items, it)
		msg := orDefault(f.Message, orDefault(o.message, "promptctl apply "+it.File))
		chk, err := a.c.CheckFragmentVersion(a.ctx, f.Name, f.request(it.Base, msg))
		if err == nil {
			it.ContentHash = chk.ContentHash
			if it.Base > 0 && chk.ContentHash == fr.LatestContentHash {
				it.Status, it.Version = stUnchanged, it.Base
			} else {
				it.Status = stCreate
				if o.dryRun {
					p.planned[f.Name] = it.Base + 1
					it.Diff = a.fragmentDiff(it)
				} else {
					var v *client.FragmentVersion
					if v, err = a.c.CreateFragmentVersion(a.ctx, f.Name, f.request(it.Base, msg)); err == nil {
						it.Status, it.Version, it.ContentHash = stCreated, v.Version, v.ContentHash
					}
				}
			}
		}
		var pe *client.Error
		switch {
		case err == nil:
		case errors.Is(err, client.ErrVersionConflict) && errors.As(err, &pe):
			it.Status = stConflict
			it.Detail = fmt.Sprintf("promptd's latest version of fragment %s is %d, not %d as read: someone published meanwhile. "+
				"Nothing was published for it; review it (or run `promptctl pull`) and apply again.", f.Name, pe.LatestVersion(), it.Base)
			it.Diff = a.fragmentDiffFrom(it, pe.LatestVersion())
		case refused(err, &pe):
			it.Status, it.Detail, it.Code, it.Field = stInvalid, describe(pe), string(pe.Code), pe.Field()
		default: // promptd unreachable or the token refused: stop
			for _, rest := range p.items[:i+1] {
				if !rest.applied() {
					rest.Status, rest.Detail = stFailed, "not published: "+err.Error()
				}
			}
			return p, err
		}
		if !it.applied() && it.Status != stCreate {
			p.notApplied[f.Name] = true
			continue
		}
		if err := a.moveFragmentEnvs(it, p, o); err != nil {
			return p, err
		}
		for _, sw := range it.Envs { // an agent referencing it would pin what the pointer did not move to
			if sw.Result == stConflict || sw.Result == stFailed {
				p.notApplied[f.Name] = true
			}
		}
	}
	if !o.dryRun {
		if lock.Fragments == nil {
			lock.Fragments = map[string]lockEntry{}
		}
		for _, it := range p.items {
			if it.applied() {
				lock.Fragments[it.Fragment] = lockEntry{Version: it.Version, ContentHash: it.file.Hash}
			}
		}
	}
	return p, nil
}

// moveFragmentEnvs points each env the file names at the version it was
// applied as (a dry run only plans the moves), with the pointer's
// revision read just before.
func (a *app) moveFragmentEnvs(it *fragItem, p *fragPlan, o applyOpts) error {
	to := it.Version
	if it.Status == stCreate {
		to = it.Base + 1
	}
	for _, env := range it.file.Envs {
		sw := &envSw{Env: env, To: to}
		it.Envs = append(it.Envs, sw)
		cur, err := a.c.GetFragmentEnv(a.ctx, it.Fragment, env)
		var pe *client.Error
		switch {
		case err == nil:
			sw.From, sw.Revision = cur.Version, cur.Revision
		case errors.As(err, &pe) && pe.NotFound(): // no pointer yet: create it
		default:
			sw.Result, sw.Detail = stFailed, err.Error()
			if client.Unreachable(err) {
				return err
			}
			continue
		}
		switch {
		case sw.From == sw.To:
			sw.Result = "already"
			continue
		case o.dryRun:
			sw.Result = "planned"
			p.moves[it.Fragment+"/"+env] = to
			continue
		}
		e, err := a.c.PutFragmentEnv(a.ctx, it.Fragment, env, client.PutFragmentEnvRequest{Version: to, ExpectedRevision: sw.Revision})
		switch {
		case err == nil:
			sw.Result, sw.Revision = "switched", e.Revision
		case errors.As(err, &pe) && isConflict(pe):
			sw.Result, sw.Detail = stConflict, describe(pe)
		default:
			sw.Result, sw.Detail = stFailed, err.Error()
		}
	}
	return nil
}

// fragmentDiff is the unified diff from promptd's latest version of the
// fragment to its file (none for a new fragment).
func (a *app) fragmentDiff(it *fragItem) string {
	if it.Base == 0 {
		return ""
	}
	return a.fragmentDiffFrom(it, it.Base)
}

func (a *app) fragmentDiffFrom(it *fragItem, version int) string {
	v, err := a.c.GetFragmentVersion(a.ctx, it.Fragment, version)
	if err != nil {
		return ""
	}
	theirs, err := fragmentBodyOf(v)
	if err != nil {
		return ""
	}
	mine, _ := json.Marshal(it.file.Body)
	lines := func(doc []byte) []string {
		return difflib.SplitLines(strings.TrimSuffix(string(client.Pretty(mustCanonical(doc))), "\n"))
	}
	d, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: lines(theirs), B: lines(mine),
		FromFile: fmt.Sprintf("fragment %s/v%d (promptd)", it.Fragment, version), ToFile: it.File + " (yours)", Context: 3})
	return d
}

// fragmentBodyOf is a fragment version's content as a file holds it:
// text|messages, variables (when any), fragments unpinned (when any).
func fragmentBodyOf(v *client.FragmentVersion) (json.RawMessage, error) {
	body := map[string]json.RawMessage{}
	if err := json.Unmarshal(v.Fragment, &body); err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(v.Variables)) > 0 && !bytes.Equal(mustCanonical(v.Variables), []byte("{}")) {
		body["variables"] = v.Variables
	}
	if len(bytes.TrimSpace(v.Fragments)) > 0 && !bytes.Equal(mustCanonical(v.Fragments), []byte("{}")) {
		body["fragments"] = v.Fragments
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	return unpinned(b)
}

// reportFragments prints the fragments table, their env switches and
// each one's detail and diff.
func (a *app) reportFragments(p *fragPlan) {
	if p == nil || len(p.items) == 0 {
		return
	}
	rows := make([][]string, len(p.items))
	var sws [][]string
	for i, it := range p.items {
		version := "-"
		switch it.Status {
		case stCreated, stUnchanged:
			version = itoa(it.Version)
		case stCreate:
			version = itoa(it.Base+1) + " (planned)"
		}
		rows[i] = []string{it.Fragment, it.File, it.Status, itoa(it.Base), version, short(it.ContentHash)}
		for _, sw := range it.Envs {
			sws = append(sws, []string{it.Fragment, sw.Env, itoa(sw.From), itoa(sw.To), itoa(sw.Revision), sw.Result})
		}
	}
	a.table([]string{"FRAGMENT", "FILE", "STATUS", "BASE", "VERSION", "HASH"}, rows)
	if len(sws) > 0 {
		fmt.Fprintln(a.stdout)
		a.table([]string{"FRAGMENT", "ENV", "FROM", "TO", "REVISION", "RESULT"}, sws)
	}
	for _, it := range p.items {
		if it.Detail != "" {
			fmt.Fprintf(a.stdout, "\n%s fragment %s: %s\n", it.Status, it.Fragment, it.Detail)
		}
		if it.Diff != "" {
			if it.Detail == "" {
				fmt.Fprintf(a.stdout, "\n%s fragment %s:\n", it.Status, it.Fragment)
			}
			fmt.Fprint(a.stdout, indent(it.Diff))
		}
		for _, sw := range it.Envs {
			if sw.Detail != "" {
				fmt.Fprintf(a.stdout, "\nenv %s of fragment %s: %s\n", sw.Env, it.Fragment, sw.Detail)
			}
		}
	}
	s := map[string]int{}
	for _, it := range p.items {
		s[it.Status]++
	}
	fmt.Fprintf(a.stdout, "\nfragments: %d created, %d unchanged, %d conflict, %d invalid or failed", s[stCreated], s[stUnchanged], s[stConflict], s[stInvalid]+s[stFailed])
	if s[stCreate] > 0 {
		fmt.Fprintf(a.stdout, " (dry run: %d to create)", s[stCreate])
	}
	fmt.Fprint(a.stdout, "\n\n")
}

// fragmentOutcome is the fragments' share of apply's outcome: the
// conflicts (their env switches too) and the failures.
func (p *fragPlan) outcome() (conflicts, failed []string) {
	if p == nil {
		return nil, nil
	}
	for _, it := range p.items {
		switch it.Status {
		case stConflict:
			conflicts = append(conflicts, "fragment "+it.Fragment)
		case stInvalid, stFailed:
			failed = append(failed, "fragment "+it.Fragment)
		}
		for _, sw := range it.Envs {
			switch sw.Result {
			case stConflict:
				conflicts = append(conflicts, "fragment "+it.Fragment+" (env "+sw.Env+")")
			case stFailed:
				failed = append(failed, "fragment "+it.Fragment+" (env "+sw.Env+")")
			}
		}
	}
	return conflicts, failed
}

// pulledFragment is one fragment of a pull.
type pulledFragment struct {
	Fragment    string   `json:"fragment"`
	File        string   `json:"file"`   // under DIR
	Status      string   `json:"status"` // written, unchanged
	Version     int      `json:"version"`
	ContentHash string   `json:"content_hash"`
	Envs        []string `json:"envs,omitempty"` // the env pointers at that version, recorded in the file
	content     []byte
	fileHash    string
	edited      bool // the local file changed since it was last applied or pulled, and pulling would replace it
}

// pullFragments reads the latest version of every fragment and renders its
// file (fragments/NAME.yaml, or the file that already defines it), with
// the envs whose pointers name that version.
func (a *app) pullFragments(dir string, lock *lockFile) ([]*pulledFragment, error) {
	all, err := a.c.AllFragments(a.ctx)
	if err != nil || len(all) == 0 {
		return nil, err
	}
	local := map[string]fragmentFile{}
	if files, err := loadFragments(dir); err != nil {
		return nil, err
	} else {
		for _, f := range files {
			local[f.Name] = f
		}
	}
	var out []*pulledFragment
	for _, fr := range all {
		v, err := a.c.GetFragmentVersion(a.ctx, fr.Name, fr.LatestVersion)
		if err != nil {
			return nil, err
		}
		body, err := fragmentBodyOf(v)
		if err != nil {
			return nil, fmt.Errorf("fragment %s version %d: %w", fr.Name, v.Version, err)
		}
		var envs []string
		for env, ver := range fr.Envs {
			if ver == v.Version {
				envs = append(envs, env)
			}
		}
		sort.Strings(envs)
		it := &pulledFragment{Fragment: fr.Name, Status: "written", Version: v.Version, ContentHash: v.ContentHash, Envs: envs,
			File: filepath.Join(fragmentsDir, fr.Name+".yaml")}
		f, have := local[fr.Name]
		if have {
			it.File = filepath.Join(fragmentsDir, filepath.Base(f.Path))
		}
		if it.content, it.fileHash, err = renderFragment(fr.Name, body, envs, strings.HasSuffix(strings.ToLower(it.File), ".json")); err != nil {
			return nil, fmt.Errorf("fragment %s version %d: %w", fr.Name, v.Version, err)
		}
		if have && f.Hash == it.fileHash {
			it.Status = "unchanged"
		}
		it.edited = have && it.Status == "written" && f.Hash != lock.Fragments[fr.Name].ContentHash
		out = append(out, it)
	}
	return out, nil
}

// renderFragment is the fragment file of body: YAML, or JSON when asJSON
// or when YAML would not read back the same; and the file's hash.
func renderFragment(name string, body json.RawMessage, envs []string, asJSON bool) ([]byte, string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, "", err
	}
	want, err := fragmentFileHash(m, envs)
	if err != nil {
		return nil, "", err
	}
	// The members in a reader's order: name, the content, then the rest.
	var doc bytes.Buffer
	doc.WriteString("{")
	nb, _ := json.Marshal(name)
	doc.WriteString(`"name":` + string(nb))
	for _, k := range []string{"text", "messages", "variables", "fragments"} {
		if m[k] != nil {
			fmt.Fprintf(&doc, ",%q:%s", k, mustCanonical(m[k]))
		}
	}
	if len(envs) > 0 {
		eb, _ := json.Marshal(envs)
		doc.WriteString(`,"envs":` + string(eb))
	}
	doc.WriteString("}")
	readBack := func(b []byte, ext string) bool {
		tmp, err := os.CreateTemp("", "promptctl-pull-*"+ext)
		if err != nil {
			return false
		}
		defer os.Remove(tmp.Name())
		_, werr := tmp.Write(b)
		if errors.Join(werr, tmp.Close()) != nil {
			return false
		}
		f, err := loadFragment(tmp.Name())
		return err == nil && f.Hash == want
	}
	if !asJSON {
		dec := json.NewDecoder(bytes.NewReader(doc.Bytes()))
		dec.UseNumber()
		if n, err := jsonNode(dec); err == nil {
			var buf bytes.Buffer
			enc := yaml.NewEncoder(&buf)
			enc.SetIndent(2)
			if enc.Encode(n) == nil && enc.Close() == nil && readBack(buf.Bytes(), ".yaml") {
				return buf.Bytes(), want, nil
			}
		}
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, doc.Bytes(), "", "  "); err != nil {
		return nil, "", err
	}
	buf.WriteByte('\n')
	if !readBack(buf.Bytes(), ".json") {
		return nil, "", errors.New("its content does not read back the same")
	}
	return buf.Bytes(), want, nil
}
