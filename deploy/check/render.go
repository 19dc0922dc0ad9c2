package check

import (
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
)

// chartDir is promptd's Helm chart.
var chartDir = repoPath("deploy", "helm", "promptd")

// kubeVersion is the Kubernetes version the chart is rendered and linted
// for (Helm's client-only default is older than the chart's floor).
var kubeVersion = func() *common.KubeVersion {
	v, err := common.ParseKubeVersion("v1.33.0")
	if err != nil {
		panic(err)
	}
	return v
}()

// quiet drops Helm's own log lines.
var quiet = slog.New(slog.DiscardHandler)

func loadChart(dir string) (*chart.Chart, error) { return loader.Load(dir) }

// renderChart renders the chart with vals as `helm install --dry-run`
// (client only, no cluster) and returns its manifests in install order.
func renderChart(dir string, vals map[string]any) ([]string, error) {
	ch, err := loadChart(dir)
	if err != nil {
		return nil, err
	}
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(quiet.Handler()))
	inst := action.NewInstall(cfg)
	inst.DryRunStrategy = action.DryRunClient
	inst.Replace = true
	inst.ReleaseName = "promptd"
	inst.Namespace = "promptd"
	inst.KubeVersion = kubeVersion
	rel, err := inst.Run(ch, vals)
	if err != nil {
		return nil, err
	}
	r, ok := rel.(*release.Release)
	if !ok {
		return nil, fmt.Errorf("release of type %T", rel)
	}
	split := releaseutil.SplitManifests(r.Manifest)
	var keys []string
	for k := range split {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	var out []string
	for _, k := range keys {
		if m := strings.TrimSpace(split[k]); m != "" {
			out = append(out, m)
		}
	}
	return out, nil
}

// lintChart runs Helm's lint action (strict: warnings count) and returns
// every message above info.
func lintChart(dir string, vals map[string]any) []string {
	l := action.NewLint()
	l.Strict = true
	l.Namespace = "promptd"
	l.KubeVersion = kubeVersion
	res := l.Run([]string{dir}, vals)
	var out []string
	for _, m := range res.Messages {
		if m.Severity > support.InfoSev {
			out = append(out, m.Error())
		}
	}
	for _, e := range res.Errors {
		out = append(out, e.Error())
	}
	return out
}
