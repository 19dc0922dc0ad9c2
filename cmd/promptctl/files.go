package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/promptd/promptd/api/client"
)

// lockName is the lock file kept beside the prompt files: for each agent,
// the version (and content hash) its file was last applied as; for each
// fragment file (fragments/), the version and the file's hash.
const lockName = "promptd.lock.json"

// errNoPromptFiles: a directory holds no prompt file.
var errNoPromptFiles = errors.New("has no prompt files (*.yaml, *.yml, *.json)")

// promptFile is one prompt file: one agent's config.
type promptFile struct {
	Path    string
	Agent   string
	Config  json.RawMessage // as JSON, numbers as written
	Message string
	Hash    string // content_hash promptd gives Config
}

// loadPrompts reads -f: one file, or every *.yaml, *.yml and *.json file of
// a directory (not its subdirectories; the lock file excluded). It returns
// the files sorted by agent and the directory that holds the lock file.
func loadPrompts(path string) ([]promptFile, string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, "", err
	}
	paths, dir := []string{path}, filepath.Dir(path)
	if fi.IsDir() {
		dir, paths = path, nil
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, "", err
		}
		for _, e := range entries {
			ext := strings.ToLower(filepath.Ext(e.Name()))
			if !e.IsDir() && e.Name() != lockName && !strings.HasPrefix(e.Name(), ".") && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
				paths = append(paths, filepath.Join(path, e.Name()))
			}
		}
		if len(paths) == 0 {
			return nil, "", fmt.Errorf("%s %w", path, errNoPromptFiles)
		}
	}
	var out []promptFile
	seen := map[string]string{}
	for _, p := range paths {
		f, err := loadPrompt(p)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", p, err)
		}
		if other, dup := seen[f.Agent]; dup {
			return nil, "", fmt.Errorf("agent %s is defined twice: in %s and %s", f.Agent, other, p)
		}
		seen[f.Agent] = p
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Agent < out[j].Agent })
	return out, dir, nil
}

// loadPrompt reads one file: {agent, config, message?} in YAML or JSON.
func loadPrompt(path string) (promptFile, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return promptFile{}, err
	}
	doc := raw
	if ext := strings.ToLower(filepath.Ext(path)); ext != ".json" {
		if doc, err = yamlToJSON(raw); err != nil {
			return promptFile{}, err
		}
	}
	var f struct {
		Agent   string          `json:"agent"`
		Config  json.RawMessage `json:"config"`
		Message string          `json:"message"`
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return promptFile{}, fmt.Errorf("want {agent, config, message?}: %w", err)
	}
	if f.Agent == "" {
		return promptFile{}, errors.New("agent is required")
	}
	if c := bytes.TrimSpace(f.Config); len(c) == 0 || c[0] != '{' {
		return promptFile{}, errors.New("config is required and must be an object")
	}
	hash, err := client.ContentHash(f.Config)
	if err != nil {
		return promptFile{}, fmt.Errorf("config: %w", err)
	}
	return promptFile{Path: path, Agent: f.Agent, Config: f.Config, Message: f.Message, Hash: hash}, nil
}

// yamlToJSON converts one YAML document to JSON, keeping numbers as
// written where they are JSON numbers (so "0.20" hashes as 0.20, as it
// would in a JSON file).
func yamlToJSON(raw []byte) ([]byte, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(raw, &n); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := writeYAML(&buf, &n, 0); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

func writeYAML(buf *bytes.Buffer, n *yaml.Node, depth int) error {
	if depth > 100 {
		return errors.New("YAML nested too deeply")
	}
	at := func(format string, a ...any) error {
		return fmt.Errorf("line %d: %s", n.Line, fmt.Sprintf(format, a...))
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return errors.New("empty document")
		}
		return writeYAML(buf, n.Content[0], depth+1)
	case yaml.AliasNode:
		return writeYAML(buf, n.Alias, depth+1)
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeYAML(buf, c, depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	case yaml.MappingNode:
		buf.WriteByte('{')
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
				return at("keys must be plain scalars (no merge keys)")
			}
			if seen[k.Value] {
				return at("key %q is defined twice", k.Value)
			}
			seen[k.Value] = true
			if i > 0 {
				buf.WriteByte(',')
			}
			kb, _ := json.Marshal(k.Value)
			buf.Write(kb)
			buf.WriteByte(':')
			if err := writeYAML(buf, n.Content[i+1], depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
		return nil
	case yaml.ScalarNode:
		return writeScalar(buf, n, at)
	}
	return at("unsupported YAML node")
}

func writeScalar(buf *bytes.Buffer, n *yaml.Node, at func(string, ...any) error) error {
	switch n.ShortTag() {
	case "!!null":
		buf.WriteString("null")
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return at("%v", err)
		}
		buf.WriteString(strconv.FormatBool(b))
	case "!!int", "!!float":
		if jsonNumber.MatchString(n.Value) {
			buf.WriteString(n.Value)
			return nil
		}
		var f float64
		if err := n.Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return at("%q is not a number JSON can hold", n.Value)
		}
		b, _ := json.Marshal(f)
		buf.Write(b)
	default: // !!str, !!timestamp, !!binary: the text as written
		b, _ := json.Marshal(n.Value)
		buf.Write(b)
	}
	return nil
}

// lockFile is promptd.lock.json.
type lockFile struct {
	Agents map[string]lockEntry `json:"agents"`
	// Fragments: for each fragment file, the version it was last applied
	// or pulled as (and the hash of the file).
	Fragments map[string]lockEntry `json:"fragments,omitempty"`
}

type lockEntry struct {
	Version     int    `json:"version"`
	ContentHash string `json:"content_hash"`
}

func readLock(dir string) (*lockFile, error) {
	l := &lockFile{Agents: map[string]lockEntry{}}
	raw, err := os.ReadFile(filepath.Join(dir, lockName))
	if errors.Is(err, os.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, l); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, lockName), err)
	}
	if l.Agents == nil {
		l.Agents = map[string]lockEntry{}
	}
	return l, nil
}

// writeLock replaces the lock file atomically (a temp file renamed).
func writeLock(dir string, l *lockFile) error {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".promptd.lock.*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(append(b, '\n'))
	if err := errors.Join(werr, tmp.Close()); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, lockName))
}
