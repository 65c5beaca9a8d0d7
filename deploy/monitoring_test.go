package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/spotter-harness/spotter/internal/opsdoc"
)

// The monitoring component (deploy/components/monitoring) is checked
// offline, as an overlay of deploy/serve that includes it would be
// applied: rendered with kustomize's own library (krusty, in process),
// every object decoded strictly into its API type (the Prometheus
// Operator's ServiceMonitor and PrometheusRule are its Go types, from
// which its CRDs are generated; their CRD files are not to be had
// offline), validated as validate_test.go does, and its parts checked
// against each other: the Deployment's metrics port, the Service over it,
// the ServiceMonitor's selector and port, the NetworkPolicy. Every PromQL
// expression of the rules and the dashboard is parsed by Prometheus's own
// parser and may name only the families docs/OPERATIONS.md lists, which
// web's TestObservability holds to what a real server exports. The alerts are
// run on made-up series in alerts_test.go.

const monitoringDir = "components/monitoring"

// component is the part of kustomize's Component the monitoring
// component uses; decoding is strict.
type component struct {
	APIVersion         string   `json:"apiVersion"`
	Kind               string   `json:"kind"`
	Resources          []string `json:"resources"`
	ConfigMapGenerator []struct {
		Name    string   `json:"name"`
		Files   []string `json:"files"`
		Options struct {
			DisableNameSuffixHash bool              `json:"disableNameSuffixHash"`
			Labels                map[string]string `json:"labels"`
		} `json:"options"`
	} `json:"configMapGenerator"`
	Patches []struct {
		Path   string `json:"path"`
		Target struct {
			Kind          string `json:"kind"`
			LabelSelector string `json:"labelSelector"`
		} `json:"target"`
	} `json:"patches"`
}

// renderWith builds an overlay of deploy/serve with the components in
// dirs, as kubectl kustomize would.
func renderWith(t *testing.T, dirs ...string) []object {
	t.Helper()
	tmp := t.TempDir()
	rel := func(p string) string {
		abs, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		r, err := filepath.Rel(tmp, abs)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " + rel("serve") + "\ncomponents:\n"
	for _, d := range dirs {
		k += "  - " + rel(d) + "\n"
	}
	if err := os.WriteFile(filepath.Join(tmp, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	objs, _ := render(t, tmp)
	return objs
}

func TestMonitoringComponent(t *testing.T) {
	var c component
	b, err := os.ReadFile(filepath.Join(monitoringDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		t.Fatalf("decode %s/kustomization.yaml: %v", monitoringDir, err)
	}
	if c.APIVersion != "kustomize.config.k8s.io/v1alpha1" || c.Kind != "Component" {
		t.Fatalf("%s: apiVersion %q kind %q, want a kustomize.config.k8s.io/v1alpha1 Component", monitoringDir, c.APIVersion, c.Kind)
	}
	// Every file in the directory is used.
	used := slices.Concat(c.Resources, []string{"kustomization.yaml"})
	for _, g := range c.ConfigMapGenerator {
		used = append(used, g.Files...)
	}
	for _, p := range c.Patches {
		used = append(used, p.Path)
	}
	files, _ := os.ReadDir(monitoringDir)
	for _, f := range files {
		if !slices.Contains(used, f.Name()) {
			t.Errorf("%s/%s is not used by the component", monitoringDir, f.Name())
		}
	}

	plain := renderWith(t)
	objs := renderWith(t, monitoringDir)
	var v validator

	// The Deployment gains --metrics-addr on every interface, on a port
	// named metrics, and nothing else.
	before := find[appsv1.Deployment](t, plain, "Deployment", "spotter")
	dep := find[appsv1.Deployment](t, objs, "Deployment", "spotter")
	v.deployment(dep)
	ctr := dep.Spec.Template.Spec.Containers[0]
	old := before.Spec.Template.Spec.Containers[0]
	if added := ctr.Args[len(old.Args):]; !slices.Equal(ctr.Args[:len(old.Args)], old.Args) || !slices.Equal(added, []string{"--metrics-addr", "0.0.0.0:9090"}) {
		t.Errorf("serve's args with the component = %q, want %q and --metrics-addr 0.0.0.0:9090", ctr.Args, old.Args)
	}
	port := slices.IndexFunc(ctr.Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" })
	if port < 0 || ctr.Ports[port].ContainerPort != 9090 {
		t.Fatalf("serve's ports with the component = %+v, want one named metrics on 9090", ctr.Ports)
	}

	// The headless Service selects the pods and targets the port.
	svc := find[corev1.Service](t, objs, "Service", "spotter-metrics")
	v.meta(svc.ObjectMeta, true)
	v.selector(field.NewPath("spec", "selector"), &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, dep.Spec.Template.Labels)
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("Service spotter-metrics has clusterIP %q, want None: Prometheus scrapes each replica", svc.Spec.ClusterIP)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort != intstr.FromString("metrics") {
		t.Errorf("Service spotter-metrics ports = %+v, want one targeting the container port metrics", svc.Spec.Ports)
	}

	// The ServiceMonitor selects that Service and scrapes its port.
	sm := find[monitoringv1.ServiceMonitor](t, objs, "ServiceMonitor", "spotter")
	if sm.APIVersion != "monitoring.coreos.com/v1" {
		t.Errorf("ServiceMonitor apiVersion %q, want monitoring.coreos.com/v1", sm.APIVersion)
	}
	v.meta(sm.ObjectMeta, true)
	v.selector(field.NewPath("spec", "selector"), &sm.Spec.Selector, svc.Labels)
	if len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("ServiceMonitor endpoints = %+v, want one", sm.Spec.Endpoints)
	}
	ep := sm.Spec.Endpoints[0]
	if ep.Port != svc.Spec.Ports[0].Name || ep.Path != "/metrics" {
		t.Errorf("ServiceMonitor endpoint port %q path %q, want the Service's port %q and /metrics", ep.Port, ep.Path, svc.Spec.Ports[0].Name)
	}
	for name, d := range map[string]*monitoringv1.Duration{"interval": &ep.Interval, "scrapeTimeout": &ep.ScrapeTimeout} {
		if _, err := model.ParseDuration(string(*d)); err != nil {
			t.Errorf("ServiceMonitor endpoint %s %q: %v", name, *d, err)
		}
	}

	// The NetworkPolicy admits the scrape on that port of those pods.
	np := find[networkingv1.NetworkPolicy](t, objs, "NetworkPolicy", "spotter-metrics")
	v.meta(np.ObjectMeta, true)
	v.selector(field.NewPath("spec", "podSelector"), &np.Spec.PodSelector, dep.Spec.Template.Labels)
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].Ports) != 1 || *np.Spec.Ingress[0].Ports[0].Port != intstr.FromString("metrics") {
		t.Errorf("NetworkPolicy ingress = %+v, want one rule for the port metrics", np.Spec.Ingress)
	}

	// The rules and the dashboard name only the families Spotter exports.
	families, err := opsdoc.Families("..")
	if err != nil {
		t.Fatal(err)
	}
	rule := find[monitoringv1.PrometheusRule](t, objs, "PrometheusRule", "spotter")
	v.meta(rule.ObjectMeta, true)
	alerts := 0
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			where := fmt.Sprintf("PrometheusRule %s alert %s", g.Name, r.Alert)
			if r.Alert == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" || r.Labels["severity"] == "" {
				t.Errorf("%s: want an alert name, a severity, a summary and a description", where)
			}
			if r.For != nil {
				if _, err := model.ParseDuration(string(*r.For)); err != nil {
					t.Errorf("%s: for %q: %v", where, *r.For, err)
				}
			}
			checkExpr(t, where, r.Expr.String(), families)
			alerts++
		}
	}
	if alerts == 0 {
		t.Error("the PrometheusRule has no alerts")
	}

	cm := find[corev1.ConfigMap](t, objs, "ConfigMap", "spotter-grafana-dashboard")
	if cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("the dashboard's ConfigMap labels = %v, want grafana_dashboard: \"1\" (Grafana's sidecar)", cm.Labels)
	}
	for name, body := range cm.Data {
		var d dashboard
		dec := json.NewDecoder(strings.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d); err != nil {
			t.Fatalf("dashboard %s: %v", name, err)
		}
		if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
			t.Errorf("dashboard %s: uid %q title %q %d panels, want all three", name, d.UID, d.Title, len(d.Panels))
		}
		targets := 0
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				checkExpr(t, fmt.Sprintf("dashboard %s panel %q", name, p.Title), dashboardVars.Replace(tg.Expr), families)
				targets++
			}
		}
		for _, tv := range d.Templating.List {
			if tv.Definition != "" {
				if m := labelValues.FindStringSubmatch(tv.Definition); m == nil || !families[m[1]] {
					t.Errorf("dashboard %s variable %s: %q, want label_values of a documented family", name, tv.Name, tv.Definition)
				}
			}
		}
		if targets == 0 {
			t.Errorf("dashboard %s has no queries", name)
		}
	}
	if len(v.errs) > 0 {
		t.Errorf("the monitoring component:\n%v", v.errs.ToAggregate())
	}
}

// dashboard is the part of Grafana's dashboard JSON the dashboard uses;
// decoding is strict.
type dashboard struct {
	UID, Title, Description, Timezone, Refresh string
	Tags                                       []string
	SchemaVersion                              int `json:"schemaVersion"`
	Version                                    int
	Editable                                   bool
	Time                                       struct{ From, To string }
	Annotations                                struct {
		List []json.RawMessage
	}
	Templating struct {
		List []struct {
			Name, Label, Type, Definition, AllValue string
			Query                                   json.RawMessage
			Datasource                              json.RawMessage
			Current                                 json.RawMessage
			IncludeAll, Multi                       bool
			Refresh, Hide                           int
		}
	}
	Panels []struct {
		ID          int
		Type, Title string
		Description string
		Collapsed   bool
		Panels      []json.RawMessage
		GridPos     struct{ H, W, X, Y int } `json:"gridPos"`
		Datasource  json.RawMessage
		FieldConfig json.RawMessage `json:"fieldConfig"`
		Options     json.RawMessage
		Targets     []struct {
			Datasource   json.RawMessage
			Expr         string
			LegendFormat string `json:"legendFormat"`
			RefID        string `json:"refId"`
		}
	}
}

// dashboardVars stands in for Grafana's variables, so that a query
// parses as Prometheus would receive it.
var dashboardVars = strings.NewReplacer("$__rate_interval", "5m", "$namespace", ".*")

var labelValues = regexp.MustCompile(`^label_values\(([a-z_]+), [a-z_]+\)$`)

// checkExpr parses a PromQL expression and checks that every metric it
// selects is a documented family (a histogram's _bucket, _sum and _count
// series are its family's).
func checkExpr(t *testing.T, where, expr string, families map[string]bool) {
	t.Helper()
	for _, p := range exprProblems(expr, families) {
		t.Errorf("%s: %s", where, p)
	}
}

// exprProblems says what is wrong with expr, a sentence each.
func exprProblems(expr string, families map[string]bool) []string {
	e, err := parser.ParseExpr(expr)
	if err != nil {
		return []string{fmt.Sprintf("%q does not parse: %v", expr, err)}
	}
	var out []string
	n := 0
	parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		n++
		name := vs.Name
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")
		if !families[name] && !families[base] {
			out = append(out, fmt.Sprintf("%q selects %s, which docs/OPERATIONS.md does not list", expr, name))
		}
		return nil
	})
	if n == 0 {
		out = append(out, fmt.Sprintf("%q selects no metric", expr))
	}
	return out
}

// The expression check fails on what it should: a misspelt family, a
// PromQL syntax error, a query of no metric.
func TestExprProblems(t *testing.T) {
	families := map[string]bool{"spotter_ready": true, "spotter_step_duration_seconds": true}
	for _, tt := range []struct {
		expr string
		ok   bool
	}{
		{`absent(spotter_ready == 1)`, true},
		{`histogram_quantile(0.9, sum by (le) (rate(spotter_step_duration_seconds_bucket[5m])))`, true},
		{`absent(spotter_redy == 1)`, false},
		{`sum(rate(spotter_ready[5m])`, false},
		{`vector(1)`, false},
	} {
		if got := exprProblems(tt.expr, families); (len(got) == 0) != tt.ok {
			t.Errorf("exprProblems(%q) = %q, want ok %v", tt.expr, got, tt.ok)
		}
	}
}
