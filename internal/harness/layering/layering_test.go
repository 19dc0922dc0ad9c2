package layering

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// pkg is one package as `go list -json` shows it.
type pkg struct {
	ImportPath string
	Imports    []string
	Error      *struct{ Err string }
}

// graph lists the module's packages and their imports (tests excluded),
// with overlay (a `go list -overlay` file) when it is not "".
func graph(t *testing.T, overlay string) []pkg {
	t.Helper()
	args := []string{"list", "-e", "-json=ImportPath,Imports,Error"}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	cmd := exec.Command("go", append(args, Module+"/...")...)
	cmd.Dir = moduleRoot(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(p.ImportPath, "/node_modules/") {
			continue // an npm package's own Go sources (the SDK's dependencies), not promptd's
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// rel is p relative to the module ("" for the root package), and whether
// p is in the module.
func rel(p string) (string, bool) {
	if p == Module {
		return "", true
	}
	r, ok := strings.CutPrefix(p, Module+"/")
	return r, ok
}

// violations checks pkgs against the rules of layers.go.
func violations(pkgs []pkg) []string {
	layer := map[string]int{}
	for i, l := range Layers {
		for _, p := range l {
			layer[p] = i
		}
	}
	var out []string
	for _, p := range pkgs {
		name, ok := rel(p.ImportPath)
		if !ok {
			continue
		}
		if p.Error != nil {
			out = append(out, fmt.Sprintf("%s: %s", p.ImportPath, p.Error.Err))
			continue
		}
		harness := slices.Contains(Harness, name)
		if under := strings.HasPrefix(name, "internal/harness/"); under != harness && !strings.HasSuffix(name, "test") {
			out = append(out, fmt.Sprintf("%q: the test harness lives under internal/harness/ (or in a package named *test), and only it", name))
		}
		from, known := layer[name]
		if !known && !harness && !strings.HasPrefix(name, "examples/") {
			out = append(out, fmt.Sprintf("%q has no layer: add it to Layers or Harness in internal/harness/layering/layers.go", name))
			continue
		}
		for _, imp := range p.Imports {
			if imp == HTTPFramework && !slices.Contains(MayImportHTTPFramework, name) && !harness {
				out = append(out, fmt.Sprintf("%q imports %s: only %v may", name, HTTPFramework, MayImportHTTPFramework))
			}
			to, in := rel(imp)
			if !in || harness || !known {
				continue
			}
			if slices.Contains(Harness, to) {
				out = append(out, fmt.Sprintf("%q (shipped) imports the test harness %q", name, to))
				continue
			}
			if name == "api/client" && !slices.Contains(ClientMayImport, to) {
				out = append(out, fmt.Sprintf("the Go client imports %q: it may import only %v", to, ClientMayImport))
			}
			target, ok := layer[to]
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("%q imports %q, which has no layer", name, to))
			case target > from:
				out = append(out, fmt.Sprintf("%q (layer %d) imports %q (layer %d): an upward import", name, from, to, target))
			case target == from && !slices.Contains(Sideways[name], to):
				out = append(out, fmt.Sprintf("%q imports %q in its own layer %d: not in Sideways", name, to, from))
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestImports_pointDownTheLayers(t *testing.T) {
	if v := violations(graph(t, "")); len(v) > 0 {
		t.Fatalf("%d import(s) break the layering:\n%s", len(v), strings.Join(v, "\n"))
	}
}

// The control: the same check on the real tool path, with one file added
// (through go list's overlay, nothing written to the tree) that makes a
// leaf import a package above it, and a domain package import Echo. Both
// must be reported, or the test above proves nothing.
func TestImports_anUpwardImport_isReported(t *testing.T) {
	root := moduleRoot(t)
	dir := t.TempDir()
	files := map[string]string{
		filepath.Join(root, "release", "guard", "zz_layering_control.go"): "package guard\n\nimport _ \"" + Module + "/locks\"\n",
		filepath.Join(root, "board", "zz_layering_control.go"):            "package board\n\nimport _ \"" + HTTPFramework + "\"\n",
	}
	replace := map[string]string{}
	for path, src := range files {
		f := filepath.Join(dir, filepath.Base(filepath.Dir(path))+".go")
		if err := os.WriteFile(f, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		replace[path] = f
	}
	overlay := filepath.Join(dir, "overlay.json")
	b, _ := json.Marshal(map[string]any{"Replace": replace})
	if err := os.WriteFile(overlay, b, 0o600); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(violations(graph(t, overlay)), "\n")
	for _, want := range []string{`"release/guard" (layer 1) imports "locks" (layer 2): an upward import`,
		`"board" imports ` + HTTPFramework} {
		if !strings.Contains(got, want) {
			t.Errorf("the control's violation %q was not reported; got:\n%s", want, got)
		}
	}
}

// The harness rule's control: a package under internal/harness/ that is
// not in Harness, and one in Harness outside it, are both reported.
func TestImports_harnessOutsideItsPlace_isReported(t *testing.T) {
	v := violations([]pkg{{ImportPath: Module + "/internal/harness/newsuite"}, {ImportPath: Module + "/internal/testenv2"}})
	if len(v) < 2 || !strings.Contains(strings.Join(v, "\n"), "internal/harness/newsuite") {
		t.Fatalf("violations = %q", v)
	}
}
