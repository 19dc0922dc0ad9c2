package browsertest

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// axeSource is axe-core's browser build, installed by npm ci in this
// directory (package.json pins the version).
var axeSource struct {
	once sync.Once
	js   string
	err  error
}

func loadAxe(t *testing.T) string {
	t.Helper()
	axeSource.once.Do(func() {
		b, err := os.ReadFile("node_modules/axe-core/axe.min.js")
		axeSource.js, axeSource.err = string(b), err
	})
	if axeSource.err != nil {
		unavailable(t, fmt.Sprintf("axe-core: %v (npm ci in internal/harness/browsertest)", axeSource.err))
	}
	return axeSource.js
}

// axeViolation is one rule axe-core found broken, with how many nodes
// break it.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target []any  `json:"target"`
		HTML   string `json:"html"`
	} `json:"nodes"`
}

func (v axeViolation) String() string {
	var where []string
	for i, n := range v.Nodes {
		if i == 3 {
			where = append(where, fmt.Sprintf("and %d more", len(v.Nodes)-3))
			break
		}
		where = append(where, fmt.Sprint(n.Target))
	}
	return fmt.Sprintf("%s (%s): %s at %s", v.ID, v.Impact, v.Help, strings.Join(where, ", "))
}

// axeRun injects axe-core into the page (once per document) and checks the
// document against WCAG 2.0/2.1 A and AA, returning the violations of
// serious or critical impact and the count of all violations.
func (tb *tab) axeRun() (severe []axeViolation, all int) {
	tb.t.Helper()
	if !eval[bool](tb, "typeof window.axe === 'object'") {
		eval[bool](tb, loadAxe(tb.t)+"\n;true")
	}
	vs := eval[[]axeViolation](tb, `axe.run(document, {
		runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']},
		resultTypes: ['violations'],
	}).then(r => r.violations)`)
	for _, v := range vs {
		if v.Impact == "serious" || v.Impact == "critical" {
			severe = append(severe, v)
		}
	}
	return severe, len(vs)
}
