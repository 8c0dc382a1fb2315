package deploy_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"text/template"

	"go.yaml.in/yaml/v3"
)

// The main suite renders the chart with text/template and the handful of
// Helm functions its templates use (toYaml, nindent, quote; the templates
// keep to those on purpose), so it runs without Helm's dependencies:
// every template renders, every document parses as YAML, the objects the
// chart promises are there with the values wired in, and every .Values
// path a template names exists in values.yaml. Helm's own engine, helm
// lint and strict decoding into the Kubernetes API types are in
// deploy/helmcheck, a module of its own that test.sh runs.

func helmFuncs() template.FuncMap {
	return template.FuncMap{
		"toYaml": func(v any) string {
			b, err := yaml.Marshal(v)
			if err != nil {
				panic(err)
			}
			return strings.TrimSuffix(string(b), "\n")
		},
		"nindent": func(n int, s string) string {
			pad := strings.Repeat(" ", n)
			return "\n" + pad + strings.ReplaceAll(s, "\n", "\n"+pad)
		},
		"quote": func(s any) string { return `"` + strings.ReplaceAll(strings.TrimSpace(toString(s)), `"`, `\"`) + `"` },
	}
}

func toString(v any) string {
	b, _ := yaml.Marshal(v)
	return strings.TrimSpace(string(b))
}

func chartValues(t *testing.T, set func(map[string]any)) map[string]any {
	t.Helper()
	raw, err := os.ReadFile("helm/trustd/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(raw, &v); err != nil {
		t.Fatalf("values.yaml: %v", err)
	}
	if set != nil {
		set(v)
	}
	return v
}

// render returns the chart's objects by kind and name.
func render(t *testing.T, values map[string]any) map[string]map[string]any {
	t.Helper()
	files, _ := filepath.Glob("helm/trustd/templates/*.yaml")
	if len(files) == 0 {
		t.Fatal("no templates")
	}
	data := map[string]any{"Values": values, "Release": map[string]any{"Name": "trustd", "Namespace": "default"},
		"Chart": map[string]any{"Name": "trustd", "Version": "0.1.0"}}
	objs := map[string]map[string]any{}
	for _, f := range files {
		tpl, err := template.New(filepath.Base(f)).Funcs(helmFuncs()).ParseFiles(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var out bytes.Buffer
		if err := tpl.Execute(&out, data); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if bytes.Contains(out.Bytes(), []byte("<no value>")) {
			t.Fatalf("%s renders a missing value:\n%s", f, out.String())
		}
		dec := yaml.NewDecoder(&out)
		for {
			var o map[string]any
			if err := dec.Decode(&o); err != nil {
				if err.Error() == "EOF" {
					break
				}
				t.Fatalf("%s: rendered YAML does not parse: %v", f, err)
			}
			if o == nil {
				continue
			}
			md, _ := o["metadata"].(map[string]any)
			objs[o["kind"].(string)+"/"+md["name"].(string)] = o
		}
	}
	return objs
}

// at walks a path of map keys and list indexes.
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%v: not a map at %q", path, k)
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("%v: no element %d", path, k)
			}
			v = l[k]
		}
	}
	return v
}

func TestHelmChartRendersTheClusterItPromises(t *testing.T) {
	objs := render(t, chartValues(t, nil))
	for _, want := range []string{"StatefulSet/trustd", "Service/trustd", "Service/trustd-headless", "PodDisruptionBudget/trustd", "NetworkPolicy/trustd-internal"} {
		if objs[want] == nil {
			t.Fatalf("the chart lacks %s (has %v)", want, keys(objs))
		}
	}
	sts := objs["StatefulSet/trustd"]
	if at(t, sts, "spec", "replicas") != 3 || at(t, sts, "spec", "serviceName") != "trustd-headless" {
		t.Fatalf("StatefulSet: replicas %v, serviceName %v", at(t, sts, "spec", "replicas"), at(t, sts, "spec", "serviceName"))
	}
	if at(t, objs["Service/trustd-headless"], "spec", "clusterIP") != "None" {
		t.Fatal("the headless service is not headless")
	}
	c := at(t, sts, "spec", "template", "spec", "containers", 0)
	if at(t, c, "readinessProbe", "httpGet", "path") != "/readyz" || at(t, c, "image") != "trustd:local" {
		t.Fatalf("trustd container: readiness %v, image %v", at(t, c, "readinessProbe", "httpGet", "path"), at(t, c, "image"))
	}
	script := at(t, c, "args", 0).(string)
	for _, want := range []string{`/etc/trustd/tls/$HOSTNAME.pem`, `--node-id "$HOSTNAME"`, "trustd-0.trustd-headless:7946"} {
		if !strings.Contains(script, want) {
			t.Fatalf("the start script lacks %q (per-pod certificate and node id):\n%s", want, script)
		}
	}
	if at(t, c, "resources", "limits", "memory") != "1Gi" {
		t.Fatal("resources are not the values'")
	}
	if len(at(t, sts, "spec", "template", "spec", "containers").([]any)) != 1 {
		t.Fatal("the face engine runs although face.enabled is false")
	}
	if at(t, sts, "spec", "template", "spec", "volumes", 0, "secret", "secretName") != "trustd-tls" {
		t.Fatal("the certificates do not come from tlsSecretName")
	}
	if at(t, objs["PodDisruptionBudget/trustd"], "spec", "maxUnavailable") != 1 {
		t.Fatal("the PodDisruptionBudget does not keep a quorum of three")
	}
	np := objs["NetworkPolicy/trustd-internal"]
	internal := at(t, np, "spec", "ingress", 1)
	if at(t, internal, "from", 0, "podSelector", "matchLabels", "app.kubernetes.io/instance") != "trustd" {
		t.Fatal("internal ports are not limited to the release's pods")
	}
	ports := map[any]bool{}
	for _, p := range at(t, internal, "ports").([]any) {
		ports[at(t, p, "port")] = true
	}
	for _, p := range []int{7946, 8090, 8300} {
		if !ports[p] {
			t.Fatalf("internal port %d not in the NetworkPolicy", p)
		}
	}
	for _, p := range at(t, np, "spec", "ingress", 0, "ports").([]any) {
		if n := at(t, p, "port"); n != 8080 && n != 9090 {
			t.Fatalf("port %v open to everyone", n)
		}
	}

	withFace := render(t, chartValues(t, func(v map[string]any) {
		v["face"].(map[string]any)["enabled"] = true
		v["networkPolicy"].(map[string]any)["enabled"] = false
		v["replicas"] = 5
	}))
	fs := withFace["StatefulSet/trustd"]
	if len(at(t, fs, "spec", "template", "spec", "containers").([]any)) != 2 || at(t, fs, "spec", "replicas") != 5 {
		t.Fatal("face.enabled or replicas not honoured")
	}
	if withFace["NetworkPolicy/trustd-internal"] != nil {
		t.Fatal("networkPolicy.enabled false still renders one")
	}
}

// TestHelmTemplatesNameOnlyValuesThatExist: a typo in .Values.x renders
// as nothing in Helm; here it fails.
func TestHelmTemplatesNameOnlyValuesThatExist(t *testing.T) {
	values := chartValues(t, nil)
	ref := regexp.MustCompile(`\.Values((?:\.[A-Za-z0-9_]+)+)`)
	files, _ := filepath.Glob("helm/trustd/templates/*")
	optional := map[string]bool{".storage.storageClassName": true} // documented, commented out by default
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, m := range ref.FindAllStringSubmatch(string(b), -1) {
			if optional[m[1]] {
				continue
			}
			var v any = values
			for _, k := range strings.Split(strings.TrimPrefix(m[1], "."), ".") {
				mv, ok := v.(map[string]any)
				if !ok {
					t.Errorf("%s: .Values%s: %s is not a map", f, m[1], k)
					break
				}
				if v, ok = mv[k]; !ok {
					t.Errorf("%s names .Values%s, which values.yaml lacks", f, m[1])
					break
				}
			}
		}
	}
}

func keys(m map[string]map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
