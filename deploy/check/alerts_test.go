package check

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var (
	alertsFile = repoPath("deploy", "prometheus", "promptd-alerts.yml")
	alertsTest = repoPath("deploy", "prometheus", "promptd-alerts.test.yml")
)

func loadRules(t *testing.T, path string) RuleGroups {
	t.Helper()
	js, err := yaml.YAMLToJSON(readFile(t, path))
	if err != nil {
		t.Fatal(err)
	}
	var g RuleGroups
	if err := strictJSON(js, &g); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return g
}

func knownMetrics(t *testing.T) map[string]bool {
	t.Helper()
	known, err := registered(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	// promptd registers some 40; a handful would mean the search broke.
	for _, m := range []string{"promptd_http_request_duration_seconds", "promptd_store_up", "promptd_lock_leases_lost_total", "promptd_webhook_oldest_pending_seconds"} {
		if _, ok := known[m]; !ok {
			t.Fatalf("%s not found among the %d registered metrics: the search of the Go sources broke", m, len(known))
		}
	}
	if !known["promptd_http_request_duration_seconds"] || known["promptd_store_up"] {
		t.Fatal("histograms are not told from the other metrics")
	}
	return known
}

func TestAlerts_useOnlyMetricsPromptdRegisters(t *testing.T) {
	known := knownMetrics(t)
	rules := loadRules(t, alertsFile)
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			if bad := unknownMetrics(r.Expr, known); len(bad) > 0 {
				t.Errorf("%s uses %v, which promptd does not register", r.Alert, bad)
			}
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s lacks a severity, summary or description", r.Alert)
			}
		}
	}
	if n < 10 {
		t.Errorf("%d alerts", n)
	}
}

// The control: a rule file naming metrics promptd does not have is refused
// name by name.
func TestAlerts_unknownMetricFixture_isRefused(t *testing.T) {
	known := knownMetrics(t)
	var got []string
	for _, g := range loadRules(t, filepath.Join("testdata", "alerts-unknown-metrics.yml")).Groups {
		for _, r := range g.Rules {
			got = append(got, unknownMetrics(r.Expr, known)...)
		}
	}
	slices.Sort(got)
	want := []string{"node_cpu_seconds_total", "promptd_http_requests_total", "promptd_store_upp"}
	if !slices.Equal(got, want) {
		t.Errorf("refused %v, want %v", got, want)
	}
}

// alertTests are the evaluations of promptd-alerts.test.yml.
type alertTests struct {
	Tests []struct {
		Name          string `json:"name"`
		AlertRuleTest []struct {
			EvalTime  string `json:"eval_time"`
			Alertname string `json:"alertname"`
			ExpAlerts []any  `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// TestAlerts_promtoolCases_fireAndQuietEachAlert checks the unit tests of
// the rules: each alert has a firing case and a quiet one, and each case
// depends on its rule. With every expression made one that never fires,
// each alert's firing case fails; with every expression firing always,
// each quiet case fails. (promtool itself runs the real file in
// scripts/deploy-check.sh.)
func TestAlerts_promtoolCases_fireAndQuietEachAlert(t *testing.T) {
	var tests alertTests
	if err := yaml.Unmarshal(readFile(t, alertsTest), &tests); err != nil {
		t.Fatal(err)
	}
	firing, quiet := map[string]bool{}, map[string][]string{}
	for _, c := range tests.Tests {
		for _, e := range c.AlertRuleTest {
			if len(e.ExpAlerts) > 0 {
				firing[e.Alertname] = true
			} else {
				quiet[e.Alertname] = append(quiet[e.Alertname], e.EvalTime)
			}
		}
	}
	rules := loadRules(t, alertsFile)
	var alerts []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			if !firing[r.Alert] || len(quiet[r.Alert]) == 0 {
				t.Errorf("%s: firing case %v, quiet cases %v; want both", r.Alert, firing[r.Alert], quiet[r.Alert])
			}
		}
	}

	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("DEPLOY_CHECK_PROMTOOL") == "required" {
			t.Fatal("promtool not found")
		}
		t.Skip("promtool not found (scripts/deploy-check.sh installs it)")
	}
	run := func(expr string) string {
		t.Helper()
		dir := t.TempDir()
		mutated := rules
		mutated.Groups = slices.Clone(rules.Groups)
		for i := range mutated.Groups {
			mutated.Groups[i].Rules = slices.Clone(rules.Groups[i].Rules)
			for j := range mutated.Groups[i].Rules {
				mutated.Groups[i].Rules[j].Expr = expr
			}
		}
		b, err := yaml.Marshal(mutated)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "promptd-alerts.yml"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "test.yml"), readFile(t, alertsTest), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(promtool, "test", "rules", "test.yml")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("promtool passed the tests with every expr %q:\n%s", expr, out)
		}
		return string(out)
	}
	never := run("vector(1) == 2")
	for _, a := range alerts {
		if !strings.Contains(never, fmt.Sprintf("alertname: %s,", a)) {
			t.Errorf("%s: its firing case passed with an expression that never fires", a)
		}
	}
	// A quiet case before an alert's `for` has passed stays quiet even
	// so; each alert needs one past it, where only the condition keeps it
	// quiet.
	always := run("vector(1)")
	for _, a := range alerts {
		if !slices.ContainsFunc(quiet[a], func(at string) bool {
			return strings.Contains(always, fmt.Sprintf("alertname: %s, time: %s,", a, at))
		}) {
			t.Errorf("%s: its quiet cases at %v all passed with an expression that always fires", a, quiet[a])
		}
	}
}
