package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/promptd/promptd/api/client"
)

// pulled is one agent of a pull.
type pulled struct {
	Agent       string `json:"agent"`
	File        string `json:"file,omitempty"`
	Status      string `json:"status"` // written, unchanged (the file already held it), dropped (promptd has no such agent)
	Version     int    `json:"version,omitempty"`
	ContentHash string `json:"content_hash,omitempty"`
	content     []byte
	fileHash    string // of the file's config: its references unpinned
}

// agentList is the repeatable --agent flag.
type agentList []string

func (l *agentList) String() string     { return strings.Join(*l, ",") }
func (l *agentList) Set(v string) error { *l = append(*l, v); return nil }

// runPull: promptctl pull DIR [--agent A ...] [--force]. It writes every
// file first, then the lock file, so an interrupted pull leaves the old
// lock file: the next apply conflicts rather than overwrites.
func runPull(a *app, args []string) error {
	var only agentList
	fs := a.flags("pull")
	fs.Var(&only, "agent", "pull only this agent (repeatable; default: every agent)")
	force := fs.Bool("force", false, "overwrite files with changes not applied yet")
	pos, err := a.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	dir := pos[0]
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	local, err := localPrompts(dir)
	if err != nil {
		return err
	}
	lock, err := readLock(dir)
	if err != nil {
		return err
	}
	agents, err := a.c.AllAgents(a.ctx)
	if err != nil {
		return err
	}
	items, err := a.pullPlan(agents, only, local, lock)
	if err != nil {
		return err
	}
	var frags []*pulledFragment
	if len(only) == 0 { // every agent: and every fragment
		if frags, err = a.pullFragments(dir, lock); err != nil {
			return err
		}
	}
	var edited []string
	for _, it := range frags {
		if it.edited && !*force {
			edited = append(edited, it.File)
		}
	}
	for _, it := range items {
		f, ok := local[it.Agent]
		if ok && it.Status == "written" && f.Hash != lock.Agents[it.Agent].ContentHash && !*force {
			edited = append(edited, filepath.Base(f.Path))
		}
	}
	if len(edited) > 0 {
		return fmt.Errorf("not pulled: %s changed since they were last applied or pulled, and pulling would overwrite them; "+
			"apply them first, or pass --force to replace them with promptd's versions", strings.Join(edited, ", "))
	}
	for _, it := range items {
		if it.Status == "written" {
			if err := writeAtomic(filepath.Join(dir, it.File), it.content); err != nil {
				return err
			}
		}
		if it.Status == "dropped" {
			delete(lock.Agents, it.Agent)
		} else {
			lock.Agents[it.Agent] = lockEntry{Version: it.Version, ContentHash: it.fileHash}
		}
	}
	for _, it := range frags {
		if it.Status == "written" {
			if err := os.MkdirAll(filepath.Join(dir, fragmentsDir), 0o755); err != nil {
				return err
			}
			if err := writeAtomic(filepath.Join(dir, it.File), it.content); err != nil {
				return err
			}
		}
		if lock.Fragments == nil {
			lock.Fragments = map[string]lockEntry{}
		}
		lock.Fragments[it.Fragment] = lockEntry{Version: it.Version, ContentHash: it.fileHash}
	}
	if len(only) == 0 { // a lock entry of a fragment promptd does not have is dropped
		have := map[string]bool{}
		for _, it := range frags {
			have[it.Fragment] = true
		}
		for name := range lock.Fragments {
			if !have[name] {
				delete(lock.Fragments, name)
			}
		}
	}
	if err := writeLock(dir, lock); err != nil {
		return fmt.Errorf("writing %s: %w", lockName, err)
	}
	if a.output == "json" {
		rep := map[string]any{"dir": dir, "lock_file": filepath.Join(dir, lockName), "items": items}
		if len(frags) > 0 {
			rep["fragments"] = frags
		}
		return a.printJSON(rep)
	}
	if len(frags) > 0 {
		rows := make([][]string, len(frags))
		for i, it := range frags {
			rows[i] = []string{it.Fragment, it.File, it.Status, itoa(it.Version), strings.Join(it.Envs, ","), short(it.ContentHash)}
		}
		a.table([]string{"FRAGMENT", "FILE", "STATUS", "VERSION", "ENVS", "HASH"}, rows)
		fmt.Fprintln(a.stdout)
	}
	rows := make([][]string, len(items))
	for i, it := range items {
		rows[i] = []string{it.Agent, orDefault(it.File, "-"), it.Status, itoa(it.Version), short(it.ContentHash)}
	}
	a.table([]string{"AGENT", "FILE", "STATUS", "VERSION", "HASH"}, rows)
	fmt.Fprintf(a.stdout, "\npulled %d agent(s)", len(items))
	if len(frags) > 0 {
		fmt.Fprintf(a.stdout, " and %d fragment(s)", len(frags))
	}
	fmt.Fprintf(a.stdout, " into %s; %s records their versions\n", dir, lockName)
	return nil
}

// localPrompts is DIR's prompt files by agent (none when DIR has none).
func localPrompts(dir string) (map[string]promptFile, error) {
	files, _, err := loadPrompts(dir)
	if err != nil && !errors.Is(err, errNoPromptFiles) {
		return nil, err
	}
	m := map[string]promptFile{}
	for _, f := range files {
		m[f.Agent] = f
	}
	return m, nil
}

// pullPlan reads the latest version of each agent to pull and renders its
// file. An agent of the lock file that promptd does not have is dropped
// from the lock file (when pulling all, or when named by --agent).
func (a *app) pullPlan(agents []client.Agent, only agentList, local map[string]promptFile, lock *lockFile) ([]*pulled, error) {
	want := map[string]bool{}
	for _, ag := range only {
		want[ag] = true
	}
	var items []*pulled
	have := map[string]bool{}
	for _, ag := range agents {
		have[ag.Agent] = true
		if len(want) > 0 && !want[ag.Agent] {
			continue
		}
		v, err := a.c.GetVersion(a.ctx, ag.Agent, ag.LatestVersion)
		if err != nil {
			return nil, err
		}
		it := &pulled{Agent: ag.Agent, Status: "written", Version: v.Version, ContentHash: v.ContentHash, fileHash: v.ContentHash}
		config := v.Config
		if len(configRefs(config)) > 0 { // written as its author would: references, not the pinned content
			if config, err = unpinned(config); err != nil {
				return nil, fmt.Errorf("%s version %d: %w", ag.Agent, v.Version, err)
			}
			if it.fileHash, err = client.ContentHash(config); err != nil {
				return nil, err
			}
		}
		name := ag.Agent + ".yaml"
		if f, ok := local[ag.Agent]; ok {
			name = filepath.Base(f.Path)
			if f.Hash == it.fileHash {
				it.Status = "unchanged"
			}
		}
		it.File = name
		if it.content, err = renderPrompt(ag.Agent, config, it.fileHash, strings.ToLower(filepath.Ext(name)) == ".json"); err != nil {
			return nil, fmt.Errorf("%s version %d: %w", ag.Agent, v.Version, err)
		}
		items = append(items, it)
	}
	var gone []string
	for ag := range lock.Agents {
		if !have[ag] && (len(want) == 0 || want[ag]) {
			gone = append(gone, ag)
		}
	}
	for ag := range want {
		if !have[ag] && lock.Agents[ag].Version == 0 {
			return nil, fmt.Errorf("promptd has no agent %s", ag)
		}
	}
	sort.Strings(gone)
	for _, ag := range gone {
		items = append(items, &pulled{Agent: ag, Status: "dropped"})
	}
	return items, nil
}

// renderPrompt is the prompt file of config: YAML, or JSON when asJSON or
// when YAML would not read back with the same content hash.
func renderPrompt(agent string, config json.RawMessage, hash string, asJSON bool) ([]byte, error) {
	if !asJSON {
		if b, err := promptAsYAML(agent, config); err == nil {
			if f, err := parsePrompt(b, ".yaml"); err == nil && f.Hash == hash {
				return b, nil
			}
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(struct {
		Agent  string          `json:"agent"`
		Config json.RawMessage `json:"config"`
	}{agent, mustCanonical(config)}); err != nil {
		return nil, err
	}
	f, err := parsePrompt(buf.Bytes(), ".json")
	if err != nil || f.Hash != hash {
		return nil, errors.New("its config does not read back with the same content hash")
	}
	return buf.Bytes(), nil
}

// parsePrompt reads a prompt file's bytes as loadPrompt reads the file.
func parsePrompt(b []byte, ext string) (promptFile, error) {
	tmp, err := os.CreateTemp("", "promptctl-pull-*"+ext)
	if err != nil {
		return promptFile{}, err
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(b)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		return promptFile{}, err
	}
	return loadPrompt(tmp.Name())
}

// promptAsYAML writes {agent, config} as YAML, numbers as promptd holds
// them (0.20 stays 0.20) and multi-line strings as literal blocks.
func promptAsYAML(agent string, config json.RawMessage) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(config))
	dec.UseNumber()
	cfg, err := jsonNode(dec)
	if err != nil {
		return nil, err
	}
	doc := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		str("agent"), str(agent), str("config"), cfg}}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func str(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	if strings.Contains(s, "\n") {
		n.Style = yaml.LiteralStyle
	}
	return n
}

// jsonNode reads the next JSON value of dec as a YAML node.
func jsonNode(dec *json.Decoder) (*yaml.Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		if t == '[' {
			n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
		}
		for dec.More() {
			if n.Kind == yaml.MappingNode {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, str(k.(string)))
			}
			c, err := jsonNode(dec)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, c)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		if len(n.Content) == 0 {
			n.Style = yaml.FlowStyle
		}
		return n, nil
	case string:
		return str(t), nil
	case json.Number:
		tag := "!!int"
		if strings.ContainsAny(t.String(), ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: t.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(t)}, nil
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

// writeAtomic replaces path with b (a temp file renamed).
func writeAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".promptctl.*")
	if err != nil {
		return err
	}
	_, werr := io.Copy(tmp, bytes.NewReader(b))
	if err := errors.Join(werr, tmp.Close(), os.Chmod(tmp.Name(), 0o644)); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
