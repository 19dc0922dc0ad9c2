package check

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// registered finds the metrics promptd's Go sources declare
// (prometheus.CounterOpts{Name: "promptd_..."} and the like), with whether
// each is a histogram, under root (deploy/ and tests left out).
func registered(root string) (map[string]bool, error) {
	decl := regexp.MustCompile(`(Counter|Gauge|Histogram|Summary)Opts\{\s*Name:\s*"(promptd_[a-z0-9_]+)"`)
	out := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "deploy", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			out[m[2]] = out[m[2]] || m[1] == "Histogram" || m[1] == "Summary"
		}
		return nil
	})
	return out, err
}

var (
	promptdName = regexp.MustCompile(`promptd_[a-z0-9_]+`)
	// a name right before a label matcher or a range: a metric selector
	selector = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*[{\[]`)
)

// builtin are the series Prometheus makes itself that rules may use.
var builtin = map[string]bool{"up": true}

// unknownMetrics are the metrics expr selects that neither promptd
// registers nor Prometheus makes (a histogram's _bucket, _count and _sum
// are its own).
func unknownMetrics(expr string, known map[string]bool) []string {
	var out []string
	isKnown := func(name string) bool {
		if _, ok := known[name]; ok {
			return true
		}
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && known[base] {
				return true
			}
		}
		return false
	}
	for _, name := range promptdName.FindAllString(expr, -1) {
		if !isKnown(name) {
			out = append(out, name)
		}
	}
	for _, m := range selector.FindAllStringSubmatch(expr, -1) {
		if name := m[1]; !strings.HasPrefix(name, "promptd_") && !builtin[name] {
			out = append(out, name)
		}
	}
	return out
}
