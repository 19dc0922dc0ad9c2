package check

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// ServiceMonitor is the part of monitoring.coreos.com/v1 ServiceMonitor
// the chart writes: a field outside it fails the strict decode, as a
// misspelt one would fail on the operator's schema.
type ServiceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path"`
			Interval      string `json:"interval"`
			ScrapeTimeout string `json:"scrapeTimeout"`
			Authorization *struct {
				Type        string                    `json:"type"`
				Credentials *corev1.SecretKeySelector `json:"credentials"`
			} `json:"authorization"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// RuleGroups is a Prometheus rule file, and the spec of a PrometheusRule.
type RuleGroups struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []Rule `json:"rules"`
	} `json:"groups"`
}

// Rule is one alerting rule.
type Rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// PrometheusRule is monitoring.coreos.com/v1 PrometheusRule.
type PrometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              RuleGroups `json:"spec"`
}

// kinds maps apiVersion/kind to a new value of its type: a manifest of any
// other kind fails to decode.
var kinds = map[string]func() any{
	"apps/v1/Deployment":                      func() any { return new(appsv1.Deployment) },
	"policy/v1/PodDisruptionBudget":           func() any { return new(policyv1.PodDisruptionBudget) },
	"v1/Service":                              func() any { return new(corev1.Service) },
	"v1/Secret":                               func() any { return new(corev1.Secret) },
	"v1/ServiceAccount":                       func() any { return new(corev1.ServiceAccount) },
	"monitoring.coreos.com/v1/ServiceMonitor": func() any { return new(ServiceMonitor) },
	"monitoring.coreos.com/v1/PrometheusRule": func() any { return new(PrometheusRule) },
}

// decodeStrict decodes one YAML manifest into its Kubernetes type by
// apiVersion and kind, refusing any field the type does not have.
func decodeStrict(manifest string) (any, error) {
	js, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		return nil, err
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return nil, err
	}
	newObj, ok := kinds[tm.APIVersion+"/"+tm.Kind]
	if !ok {
		return nil, fmt.Errorf("unknown kind %q (apiVersion %q)", tm.Kind, tm.APIVersion)
	}
	obj := newObj()
	if err := strictJSON(js, obj); err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	return obj, nil
}

// strictJSON decodes one JSON value into v, refusing unknown fields and
// anything after the value.
//
// encoding/json matches keys to fields case-insensitively, so its
// DisallowUnknownFields lets readOnlyRootFileSystem through as
// readOnlyRootFilesystem, which the API server would drop. A second,
// case-sensitive pass (the Kubernetes API machinery's own decoder) refuses
// such keys, and duplicates too.
func strictJSON(js []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("data after the object")
	}
	strict, err := kjson.UnmarshalStrict(js, v, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}
