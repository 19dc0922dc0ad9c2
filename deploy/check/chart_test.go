package check

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"

	chart "helm.sh/helm/v4/pkg/chart/v2"
)

func chartMeta(t *testing.T) *chart.Metadata {
	t.Helper()
	ch, err := loadChart(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return ch.Metadata
}

func TestChart_versionAndAppVersion_areTheRepositorysVersion(t *testing.T) {
	version := strings.TrimSpace(string(readFile(t, repoPath("VERSION"))))
	m := chartMeta(t)
	if m.Version != version || m.AppVersion != version {
		t.Errorf("Chart.yaml version %q, appVersion %q; VERSION is %q", m.Version, m.AppVersion, version)
	}
}

// values sets the chart is rendered and linted with.
var valueSets = map[string]map[string]any{
	"defaults": {},
	"monitoring": {
		"serviceMonitor": map[string]any{"enabled": true},
		"prometheusRule": map[string]any{"enabled": true},
	},
	"existingSecret": {
		"secrets": map[string]any{"existingSecret": "prod-promptd"},
	},
	"chartSecret": {
		"secrets": map[string]any{
			"existingSecret": "",
			"values": map[string]any{
				"mysqlDSN":     "promptd:pw@tcp(mysql:3306)/promptd?parseTime=true",
				"tokens":       "admin:admin:s1,runtime:runtime:s2",
				"secretKey":    "ZXhhbXBsZS1zZWNyZXQta2V5LWNoYW5nZS1tZS0zMmI=",
				"metricsToken": "m",
				"redisURL":     "redis://redis:6379/0",
			},
		},
	},
	"replicas3": {
		"replicaCount": 3,
		"env":          map[string]any{"PROMPTD_LOG_LEVEL": "debug", "PROMPTD_ETCD_ENDPOINTS": "https://etcd:2379"},
	},
}

func TestChart_lintsCleanWithEachValueSet(t *testing.T) {
	for name, vals := range valueSets {
		if msgs := lintChart(chartDir, vals); len(msgs) > 0 {
			t.Errorf("%s: helm lint --strict:\n  %s", name, strings.Join(msgs, "\n  "))
		}
	}
}

// The control of the lint: a chart with a template that does not parse
// is refused for it.
func TestChart_lintRefusesABrokenChart(t *testing.T) {
	msgs := lintChart(filepath.Join("testdata", "badchart"), nil)
	if !slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, "templates/broken.yaml") }) {
		t.Fatalf("lint did not refuse testdata/badchart's template: %q", msgs)
	}
	t.Logf("refused as it should be:\n  %s", strings.Join(msgs, "\n  "))
}

// rendered is one value set's manifests, decoded strictly.
type rendered struct {
	deploy  *appsv1.Deployment
	pdb     *policyv1.PodDisruptionBudget
	service *corev1.Service
	secrets []*corev1.Secret
	sa      []*corev1.ServiceAccount
	monitor []*ServiceMonitor
	rules   []*PrometheusRule
}

func render(t *testing.T, vals map[string]any) rendered {
	t.Helper()
	manifests, err := renderChart(chartDir, vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	var r rendered
	for _, m := range manifests {
		obj, err := decodeStrict(m)
		if err != nil {
			t.Fatalf("strict decode: %v\n%s", err, m)
		}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			if r.deploy != nil {
				t.Fatal("two Deployments")
			}
			r.deploy = o
		case *policyv1.PodDisruptionBudget:
			r.pdb = o
		case *corev1.Service:
			r.service = o
		case *corev1.Secret:
			r.secrets = append(r.secrets, o)
		case *corev1.ServiceAccount:
			r.sa = append(r.sa, o)
		case *ServiceMonitor:
			r.monitor = append(r.monitor, o)
		case *PrometheusRule:
			r.rules = append(r.rules, o)
		}
	}
	if r.deploy == nil || r.service == nil {
		t.Fatalf("no Deployment or Service among %d manifests", len(manifests))
	}
	return r
}

func TestChart_rendersPodsThatAreSafeProbedAndDisruptionBudgeted(t *testing.T) {
	for name, vals := range valueSets {
		t.Run(name, func(t *testing.T) {
			r := render(t, vals)
			wantReplicas := int32(2)
			if n, ok := vals["replicaCount"].(int); ok {
				wantReplicas = int32(n)
			}
			assertDeployment(t, r.deploy, wantReplicas)
			pod := r.deploy.Spec.Template

			if r.pdb == nil {
				t.Fatal("no PodDisruptionBudget")
			}
			if mu := r.pdb.Spec.MaxUnavailable; mu == nil || mu.IntValue() != 1 {
				t.Errorf("PDB maxUnavailable = %v, want 1", mu)
			}
			if !selects(r.pdb.Spec.Selector.MatchLabels, pod.Labels) || len(r.pdb.Spec.Selector.MatchLabels) == 0 {
				t.Errorf("PDB selector %v does not select the pods %v", r.pdb.Spec.Selector.MatchLabels, pod.Labels)
			}
			if !selects(r.service.Spec.Selector, pod.Labels) || len(r.service.Spec.Selector) == 0 {
				t.Errorf("Service selector %v does not select the pods %v", r.service.Spec.Selector, pod.Labels)
			}
			if p := r.service.Spec.Ports; len(p) != 1 || p[0].TargetPort.String() != "http" {
				t.Errorf("Service ports %+v, want one to targetPort http", p)
			}
			if len(r.sa) != 1 || pod.Spec.ServiceAccountName != r.sa[0].Name {
				t.Errorf("pods run as %q; ServiceAccounts %v", pod.Spec.ServiceAccountName, r.sa)
			}
			if a := pod.Spec.AutomountServiceAccountToken; a == nil || *a {
				t.Error("the pods mount a Kubernetes API token they never use")
			}

			secret := secretOf(t, r.deploy)
			switch name {
			case "chartSecret":
				if len(r.secrets) != 1 || r.secrets[0].Name != secret {
					t.Fatalf("pods read Secret %q; chart Secrets %v", secret, r.secrets)
				}
				for _, k := range []string{"PROMPTD_MYSQL_DSN", "PROMPTD_TOKENS", "PROMPTD_SECRET_KEY", "PROMPTD_METRICS_TOKEN", "PROMPTD_REDIS_URL"} {
					if r.secrets[0].StringData[k] == "" {
						t.Errorf("chart Secret lacks %s", k)
					}
				}
				if pod.Annotations["checksum/secret"] == "" {
					t.Error("no checksum/secret annotation: a changed Secret would not roll the pods")
				}
			case "existingSecret":
				if secret != "prod-promptd" || len(r.secrets) != 0 {
					t.Errorf("pods read %q with chart Secrets %v; want prod-promptd and none", secret, r.secrets)
				}
			default:
				if secret != "promptd-secrets" || len(r.secrets) != 0 {
					t.Errorf("pods read %q with chart Secrets %v; want the default existingSecret promptd-secrets and none", secret, r.secrets)
				}
			}

			if name == "monitoring" {
				assertMonitoring(t, r, secret)
			} else if len(r.monitor)+len(r.rules) != 0 {
				t.Errorf("ServiceMonitor or PrometheusRule rendered while off")
			}
		})
	}
}

func assertDeployment(t *testing.T, d *appsv1.Deployment, replicas int32) {
	t.Helper()
	if d.Spec.Replicas == nil || *d.Spec.Replicas != replicas {
		t.Errorf("replicas = %v, want %d", d.Spec.Replicas, replicas)
	}
	pod := d.Spec.Template.Spec
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v: want runAsNonRoot, runAsUser 65532, seccomp RuntimeDefault", psc)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Image != "promptd/promptd:0.1.0" {
		t.Errorf("image %q, want promptd/promptd:<appVersion>", c.Image)
	}
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Fatal("no container securityContext")
	case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot, sc.RunAsUser == nil || *sc.RunAsUser != 65532:
		t.Errorf("container may run as root: %+v", sc)
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Error("root file system writable")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Error("privilege escalation allowed")
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		t.Errorf("capabilities %+v, want drop [ALL] and no add", sc.Capabilities)
	case sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Error("container seccompProfile not RuntimeDefault")
	}

	probe := func(name string, p *corev1.Probe, ready bool) {
		t.Helper()
		if p == nil || p.Exec == nil {
			t.Errorf("%s probe %+v: want an exec probe", name, p)
			return
		}
		cmd := p.Exec.Command
		if len(cmd) < 2 || filepath.Base(cmd[0]) != "promptd" || cmd[1] != "healthcheck" || slices.Contains(cmd, "--ready") != ready {
			t.Errorf("%s probe runs %q, want promptd healthcheck (--ready: %v)", name, cmd, ready)
		}
		if p.TimeoutSeconds < 4 {
			t.Errorf("%s probe timeoutSeconds %d: below healthcheck's 3s --timeout plus start", name, p.TimeoutSeconds)
		}
	}
	probe("readiness", c.ReadinessProbe, true)
	probe("liveness", c.LivenessProbe, false)
	probe("startup", c.StartupProbe, false)

	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := c.Resources.Requests[r]; !ok || q.IsZero() {
			t.Errorf("no %s request", r)
		}
	}
	if q, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok || q.IsZero() {
		t.Error("no memory limit")
	}

	var tmp bool
	for _, m := range c.VolumeMounts {
		if m.MountPath == "/tmp" {
			for _, v := range pod.Volumes {
				tmp = tmp || v.Name == m.Name && v.EmptyDir != nil
			}
		}
	}
	if !tmp {
		t.Error("/tmp is not an emptyDir (the root file system is read-only)")
	}
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "http" && p.ContainerPort == 8080 }) {
		t.Errorf("ports %+v: no http 8080", c.Ports)
	}
}

// secretOf checks that every secret variable comes from one Secret by
// secretKeyRef, never as a plain value, and returns that Secret's name.
func secretOf(t *testing.T, d *appsv1.Deployment) string {
	t.Helper()
	env := map[string]corev1.EnvVar{}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if _, dup := env[e.Name]; dup {
			t.Errorf("env %s set twice", e.Name)
		}
		env[e.Name] = e
	}
	name := ""
	for _, k := range []string{"PROMPTD_MYSQL_DSN", "PROMPTD_TOKENS", "PROMPTD_SECRET_KEY", "PROMPTD_METRICS_TOKEN", "PROMPTD_REDIS_URL"} {
		e, ok := env[k]
		if !ok {
			if k == "PROMPTD_MYSQL_DSN" || k == "PROMPTD_TOKENS" {
				t.Errorf("env %s missing", k)
			}
			continue
		}
		if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			t.Errorf("env %s is not a secretKeyRef: %+v", k, e)
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		if name == "" {
			name = ref.Name
		} else if ref.Name != name {
			t.Errorf("env %s from Secret %q, others from %q", k, ref.Name, name)
		}
		if ref.Key != k {
			t.Errorf("env %s reads key %q", k, ref.Key)
		}
	}
	return name
}

func assertMonitoring(t *testing.T, r rendered, secret string) {
	t.Helper()
	if len(r.monitor) != 1 || len(r.rules) != 1 {
		t.Fatalf("%d ServiceMonitors, %d PrometheusRules; want 1 each", len(r.monitor), len(r.rules))
	}
	sm := r.monitor[0]
	if !selects(sm.Spec.Selector.MatchLabels, r.service.Labels) {
		t.Errorf("ServiceMonitor selects %v, Service labels %v", sm.Spec.Selector.MatchLabels, r.service.Labels)
	}
	if len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("endpoints %+v", sm.Spec.Endpoints)
	}
	ep := sm.Spec.Endpoints[0]
	if ep.Port != r.service.Spec.Ports[0].Name || ep.Path != "/metrics" {
		t.Errorf("endpoint port %q path %q, want the Service's %q and /metrics", ep.Port, ep.Path, r.service.Spec.Ports[0].Name)
	}
	if a := ep.Authorization; a == nil || a.Type != "Bearer" || a.Credentials == nil || a.Credentials.Name != secret || a.Credentials.Key != "PROMPTD_METRICS_TOKEN" {
		t.Errorf("endpoint authorization %+v, want Bearer from %s/PROMPTD_METRICS_TOKEN", ep.Authorization, secret)
	}
	var file RuleGroups
	js, err := yaml.YAMLToJSON(readFile(t, repoPath("deploy", "prometheus", "promptd-alerts.yml")))
	if err != nil {
		t.Fatal(err)
	}
	if err := strictJSON(js, &file); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.rules[0].Spec, file) {
		t.Error("the PrometheusRule's groups differ from deploy/prometheus/promptd-alerts.yml")
	}
	if len(file.Groups) == 0 || len(file.Groups[0].Rules) < 10 {
		t.Errorf("alerts file has %d groups", len(file.Groups))
	}
}

// selects says every label of sel is on labels.
func selects(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func TestChart_alertsFile_isDeployPrometheusAlerts(t *testing.T) {
	a := readFile(t, repoPath("deploy", "prometheus", "promptd-alerts.yml"))
	b := readFile(t, filepath.Join(chartDir, "files", "promptd-alerts.yml"))
	if !bytes.Equal(a, b) {
		t.Error("deploy/helm/promptd/files/promptd-alerts.yml differs from deploy/prometheus/promptd-alerts.yml: copy it")
	}
}

// The chart refuses values that would run promptd wrongly.
func TestChart_refusesValuesThatCannotWork(t *testing.T) {
	own := func(v map[string]any) map[string]any {
		return map[string]any{"secrets": map[string]any{"existingSecret": "", "values": v}}
	}
	for name, c := range map[string]struct {
		vals map[string]any
		want string
	}{
		"own Secret without a DSN":       {own(map[string]any{"tokens": "a:admin:s", "redisURL": "redis://r"}), "mysqlDSN is required"},
		"own Secret without tokens":      {own(map[string]any{"mysqlDSN": "u:p@tcp(m)/d", "redisURL": "redis://r"}), "tokens is required"},
		"replicas without a lease store": {own(map[string]any{"mysqlDSN": "u:p@tcp(m)/d", "tokens": "a:admin:s"}), "needs a lease store"},
		"a secret in env":                {map[string]any{"env": map[string]any{"PROMPTD_MYSQL_DSN": "u:p@tcp(m)/d"}}, "the chart sets it"},
	} {
		_, err := renderChart(chartDir, c.vals)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", name, err, c.want)
		}
	}
}

// The control of the strict decode: manifests with a field their type
// lacks, or of an unknown kind, are refused.
func TestDecodeStrict_refusesUnknownFieldsAndKinds(t *testing.T) {
	good, err := renderChart(chartDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var deploy string
	for _, m := range good {
		if strings.Contains(m, "kind: Deployment") {
			deploy = m
		}
	}
	if _, err := decodeStrict(deploy); err != nil {
		t.Fatalf("the rendered Deployment itself is refused: %v", err)
	}
	broken := map[string]string{
		"replica: at spec":     strings.Replace(deploy, "  replicas: 2", "  replica: 2", 1),
		"securityContext typo": strings.Replace(deploy, "readOnlyRootFilesystem: true", "readOnlyRootFileSystem: true", 1),
		"runAsNonroot":         strings.Replace(deploy, "runAsNonRoot: true", "runAsNonroot: true", 1),
	}
	files, err := filepath.Glob(filepath.Join("testdata", "broken", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("testdata/broken: %v %v", files, err)
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		broken[f] = string(b)
	}
	for name, m := range broken {
		if m == deploy {
			t.Errorf("%s: the replacement did not apply", name)
			continue
		}
		if _, err := decodeStrict(m); err == nil {
			t.Errorf("%s: accepted", name)
		} else {
			t.Logf("%s: refused as it should be: %v", name, err)
		}
	}
}
