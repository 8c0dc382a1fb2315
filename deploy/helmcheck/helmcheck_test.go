package helmcheck

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

const chartDir = "../helm/trustd"

func mustChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// render is `helm template trustd deploy/helm/trustd --set …` as objects by
// kind and name, each decoded strictly into its API type.
func render(t *testing.T, set map[string]any) map[string]any {
	t.Helper()
	ch := mustChart(t)
	vals, err := chartutil.ToRenderValues(ch, set, chartutil.ReleaseOptions{Name: "trustd", Namespace: "default", IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	objs := map[string]any{}
	for name, text := range files {
		if filepath.Ext(name) != ".yaml" {
			continue
		}
		for _, doc := range strings.Split(text, "\n---") {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			var head struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var obj any
			switch head.Kind {
			case "StatefulSet":
				obj = &appsv1.StatefulSet{}
			case "Service":
				obj = &corev1.Service{}
			case "PodDisruptionBudget":
				obj = &policyv1.PodDisruptionBudget{}
			case "NetworkPolicy":
				obj = &networkingv1.NetworkPolicy{}
			default:
				t.Fatalf("%s: a %s this test does not know; add its type", name, head.Kind)
			}
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				t.Fatalf("%s: %s %s does not decode strictly into its API type: %v", name, head.Kind, head.Metadata.Name, err)
			}
			objs[head.Kind+"/"+head.Metadata.Name] = obj
		}
	}
	return objs
}

// TestHelmLintPasses is `helm lint deploy/helm/trustd`: no warning or error.
func TestHelmLintPasses(t *testing.T) {
	l := lint.All(chartDir, map[string]any{}, "default", false)
	for _, m := range l.Messages {
		if m.Severity >= support.WarningSev {
			t.Errorf("helm lint: %s", m)
		}
	}
}

func TestChartRendersValidObjectsWithItsValues(t *testing.T) {
	objs := render(t, nil)
	sts, _ := objs["StatefulSet/trustd"].(*appsv1.StatefulSet)
	pdb, _ := objs["PodDisruptionBudget/trustd"].(*policyv1.PodDisruptionBudget)
	np, _ := objs["NetworkPolicy/trustd-internal"].(*networkingv1.NetworkPolicy)
	headless, _ := objs["Service/trustd-headless"].(*corev1.Service)
	if sts == nil || pdb == nil || np == nil || headless == nil || objs["Service/trustd"] == nil {
		t.Fatalf("rendered: %v", keys(objs))
	}
	if *sts.Spec.Replicas != 3 || sts.Spec.ServiceName != headless.Name || headless.Spec.ClusterIP != "None" {
		t.Fatalf("StatefulSet replicas %d, service %q; headless clusterIP %q", *sts.Spec.Replicas, sts.Spec.ServiceName, headless.Spec.ClusterIP)
	}
	pod := sts.Spec.Template
	for k, v := range sts.Spec.Selector.MatchLabels {
		if pod.Labels[k] != v || np.Spec.PodSelector.MatchLabels[k] != v || pdb.Spec.Selector.MatchLabels[k] != v || headless.Spec.Selector[k] != v {
			t.Fatalf("label %s=%s does not select the same pods everywhere", k, v)
		}
	}
	c := pod.Spec.Containers[0]
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Fatal("readiness is not /readyz")
	}
	if c.Resources.Limits.Memory().String() != "1Gi" {
		t.Fatalf("memory limit %s", c.Resources.Limits.Memory())
	}
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Fatal("the PodDisruptionBudget does not keep a quorum of three")
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatal("the face engine runs although face.enabled is false")
	}
	internal := map[int32]bool{}
	for _, r := range np.Spec.Ingress {
		if len(r.From) == 0 {
			for _, p := range r.Ports {
				if p.Port.IntValue() != 8080 && p.Port.IntValue() != 9090 {
					t.Fatalf("port %s is open to every pod", p.Port)
				}
			}
			continue
		}
		for _, p := range r.Ports {
			internal[int32(p.Port.IntValue())] = true
		}
	}
	for _, p := range []int32{7946, 8090, 8300} {
		if !internal[p] {
			t.Fatalf("internal port %d is not limited to the release's pods", p)
		}
	}

	five := render(t, map[string]any{"replicas": 5, "face": map[string]any{"enabled": true}, "networkPolicy": map[string]any{"enabled": false},
		"image": map[string]any{"repository": "registry.example/trustd", "tag": "1.2.3"}})
	s5 := five["StatefulSet/trustd"].(*appsv1.StatefulSet)
	if *s5.Spec.Replicas != 5 || len(s5.Spec.Template.Spec.Containers) != 2 || s5.Spec.Template.Spec.Containers[0].Image != "registry.example/trustd:1.2.3" {
		t.Fatalf("--set replicas/face/image not honoured: %d replicas, %d containers, image %s",
			*s5.Spec.Replicas, len(s5.Spec.Template.Spec.Containers), s5.Spec.Template.Spec.Containers[0].Image)
	}
	if five["NetworkPolicy/trustd-internal"] != nil {
		t.Fatal("networkPolicy.enabled=false still renders one")
	}
}

func keys(m map[string]any) string {
	var b bytes.Buffer
	for k := range m {
		fmt.Fprintf(&b, "%s ", k)
	}
	return b.String()
}
