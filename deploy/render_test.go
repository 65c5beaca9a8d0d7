package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// What gets applied is what kustomize renders: these tests render every
// base and overlay with kustomize's own library (the engine `kubectl
// kustomize` embeds; when kubectl is on PATH, its output must be the
// same), decode every object strictly, validate the built-in kinds as
// the API server would and the custom resources (CloudNativePG's
// Cluster, cert-manager's Certificate and Issuer) against their CRDs'
// schemas (testdata/crds), and check what the deployment promises.

// deployments are the directories applied as they are.
var deployments = []string{"serve", "overlays/cnpg", "overlays/external", "batch"}

// object is one rendered manifest.
type object struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	raw        []byte            // its YAML
}

// render runs kustomize on dir (under deploy/, or any directory on fs).
func renderFS(t *testing.T, fs filesys.FileSystem, dir string) ([]object, []byte) {
	t.Helper()
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy // as kubectl kustomize orders them
	m, err := krusty.MakeKustomizer(opts).Run(fs, dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var objs []object
	for _, r := range m.Resources() {
		b, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		var o object
		if err := yaml.Unmarshal(b, &o); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		o.raw = b
		objs = append(objs, o)
	}
	all, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return objs, all
}

func render(t *testing.T, dir string) ([]object, []byte) {
	t.Helper()
	return renderFS(t, filesys.MakeFsOnDisk(), dir)
}

// find returns the rendered object of kind and name, decoded strictly.
func find[T any](t *testing.T, objs []object, kind, name string) T {
	t.Helper()
	var v T
	for _, o := range objs {
		if o.Kind == kind && (name == "" || o.Metadata.Name == name) {
			if err := yaml.UnmarshalStrict(o.raw, &v); err != nil {
				t.Fatalf("%s %s: %v", kind, o.Metadata.Name, err)
			}
			return v
		}
	}
	t.Fatalf("no %s %s rendered", kind, name)
	return v
}

func has(objs []object, kind, name string) bool {
	return slices.ContainsFunc(objs, func(o object) bool { return o.Kind == kind && o.Metadata.Name == name })
}

// crdSchemas are the custom resources' schemas, by apiVersion and kind.
var crdSchemas = map[string]string{
	"postgresql.cnpg.io/v1 Cluster":           "postgresql.cnpg.io_v1_Cluster.json",
	"cert-manager.io/v1 Certificate":          "cert-manager.io_v1_Certificate.json",
	"cert-manager.io/v1 Issuer":               "cert-manager.io_v1_Issuer.json",
	"monitoring.coreos.com/v1 ServiceMonitor": "monitoring.coreos.com_v1_ServiceMonitor.json",
	"monitoring.coreos.com/v1 PrometheusRule": "monitoring.coreos.com_v1_PrometheusRule.json",
}

// strict closes every object schema that lists its properties and does
// not keep unknown fields: a misspelt field fails, as kubectl apply
// --validate=strict makes it fail.
func strict(s any) {
	switch v := s.(type) {
	case map[string]any:
		_, props := v["properties"]
		_, addl := v["additionalProperties"]
		keep, _ := v["x-kubernetes-preserve-unknown-fields"].(bool)
		if props && !addl && !keep && v["type"] == "object" {
			v["additionalProperties"] = false
		}
		for _, c := range v {
			strict(c)
		}
	case []any:
		for _, c := range v {
			strict(c)
		}
	}
}

// crdSchema compiles the schema of a custom resource's kind.
func crdSchema(t *testing.T, file string) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "crds", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	strict(doc)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft4)
	if err := c.AddResource(file, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(file)
	if err != nil {
		t.Fatalf("compile %s: %v", file, err)
	}
	return sch
}

// validateCR validates a custom resource against its CRD's schema.
func validateCR(t *testing.T, o object) error {
	t.Helper()
	file, ok := crdSchemas[o.APIVersion+" "+o.Kind]
	if !ok {
		return fmt.Errorf("no schema for %s %s: add its CRD to testdata/crds", o.APIVersion, o.Kind)
	}
	js, err := yaml.YAMLToJSON(o.raw)
	if err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		return err
	}
	return crdSchema(t, file).Validate(doc)
}

// validateObject checks one rendered object as the API server would: a
// built-in kind decoded strictly and validated, a custom resource against
// its schema.
func validateObject(t *testing.T, o object, objs []object) {
	t.Helper()
	v := &validator{}
	pods := map[string]string{} // the serve pods' labels
	for _, p := range objs {
		if p.Kind == "Deployment" {
			var d appsv1.Deployment
			if yaml.UnmarshalStrict(p.raw, &d) == nil {
				pods = d.Spec.Template.Labels
			}
		}
	}
	switch o.APIVersion + " " + o.Kind {
	case "apps/v1 Deployment":
		decoded(t, o, v.deployment)
	case "batch/v1 Job":
		decoded(t, o, v.job)
	case "v1 Service":
		decoded(t, o, func(s corev1.Service) { v.service(s, pods) })
	case "v1 PersistentVolumeClaim":
		decoded(t, o, v.pvc)
	case "v1 ConfigMap":
		decoded(t, o, func(c corev1.ConfigMap) { v.meta(c.ObjectMeta, true) })
	case "policy/v1 PodDisruptionBudget":
		decoded(t, o, func(p policyv1.PodDisruptionBudget) { v.pdb(p, pods) })
	case "autoscaling/v2 HorizontalPodAutoscaler":
		decoded(t, o, func(h autoscalingv2.HorizontalPodAutoscaler) { v.hpa(h, objs) })
	case "networking.k8s.io/v1 NetworkPolicy":
		decoded(t, o, func(n networkingv1.NetworkPolicy) { v.networkPolicy(n, pods) })
	case "networking.k8s.io/v1 Ingress":
		decoded(t, o, func(i networkingv1.Ingress) { v.ingress(i, objs) })
	default:
		if err := validateCR(t, o); err != nil {
			t.Errorf("%s %s: %v", o.Kind, o.Metadata.Name, err)
		}
		v.meta(o.Metadata, true)
	}
	v.report(t, o.Kind+" "+o.Metadata.Name)
}

// decoded decodes o strictly into its API type and hands it to check.
func decoded[T any](t *testing.T, o object, check func(T)) {
	t.Helper()
	var v T
	if err := yaml.UnmarshalStrict(o.raw, &v); err != nil {
		t.Errorf("%s %s: %v", o.Kind, o.Metadata.Name, err)
		return
	}
	check(v)
}

func (v *validator) hpa(h autoscalingv2.HorizontalPodAutoscaler, objs []object) {
	v.meta(h.ObjectMeta, true)
	p := field.NewPath("spec")
	ref := h.Spec.ScaleTargetRef
	if !has(objs, ref.Kind, ref.Name) || ref.APIVersion != "apps/v1" {
		v.add(field.Invalid(p.Child("scaleTargetRef"), ref, "names no rendered Deployment"))
	}
	if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 1 || h.Spec.MaxReplicas < *h.Spec.MinReplicas {
		v.add(field.Invalid(p.Child("maxReplicas"), h.Spec.MaxReplicas, "want 1 <= minReplicas <= maxReplicas"))
	}
	if len(h.Spec.Metrics) == 0 {
		v.add(field.Required(p.Child("metrics"), "what to scale on"))
	}
}

func (v *validator) networkPolicy(n networkingv1.NetworkPolicy, pods map[string]string) {
	v.meta(n.ObjectMeta, true)
	p := field.NewPath("spec")
	v.selector(p.Child("podSelector"), &n.Spec.PodSelector, pods)
	for i, r := range n.Spec.Egress {
		for j, to := range r.To {
			if to.IPBlock != nil {
				for _, c := range append([]string{to.IPBlock.CIDR}, to.IPBlock.Except...) {
					if _, err := netipPrefix(c); err != nil {
						v.add(field.Invalid(p.Child("egress").Index(i).Child("to").Index(j).Child("ipBlock"), c, err.Error()))
					}
				}
			}
		}
	}
}

func (v *validator) ingress(i networkingv1.Ingress, objs []object) {
	v.meta(i.ObjectMeta, true)
	p := field.NewPath("spec")
	for ri, r := range i.Spec.Rules {
		if r.HTTP == nil {
			continue
		}
		for pi, path := range r.HTTP.Paths {
			svc := path.Backend.Service
			if svc == nil || !has(objs, "Service", svc.Name) {
				v.add(field.Invalid(p.Child("rules").Index(ri).Child("http", "paths").Index(pi), svc, "names no rendered Service"))
			}
			if path.PathType == nil {
				v.add(field.Required(p.Child("rules").Index(ri).Child("http", "paths").Index(pi).Child("pathType"), ""))
			}
		}
	}
}

// digestImage is an image by registry and digest.
var digestImage = regexp.MustCompile(`^[a-z0-9.-]+\.[a-z]+(:[0-9]+)?/[a-z0-9._/-]+@sha256:[0-9a-f]{64}$`)

// TestRender renders every deployment, validates every object it holds
// offline, and checks the promises each makes.
func TestRender(t *testing.T) {
	kubectl, _ := exec.LookPath("kubectl")
	for _, dir := range deployments {
		t.Run(strings.ReplaceAll(dir, "/", "_"), func(t *testing.T) {
			objs, all := render(t, dir)
			for _, o := range objs {
				validateObject(t, o, objs)
			}
			for _, o := range objs {
				if o.Kind != "Deployment" && o.Kind != "Job" {
					continue
				}
				var spec corev1.PodSpec
				if o.Kind == "Deployment" {
					spec = find[appsv1.Deployment](t, objs, "Deployment", o.Metadata.Name).Spec.Template.Spec
				} else {
					spec = find[batchv1.Job](t, objs, "Job", o.Metadata.Name).Spec.Template.Spec
				}
				for _, p := range checkPod(spec, imageUID(t)) {
					t.Errorf("%s %s: %s", o.Kind, o.Metadata.Name, p)
				}
				for _, c := range spec.Containers {
					if !digestImage.MatchString(c.Image) {
						t.Errorf("%s %s: image %q is not REGISTRY/NAME@sha256:DIGEST", o.Kind, o.Metadata.Name, c.Image)
					}
				}
			}
			if kubectl != "" {
				out, err := exec.Command(kubectl, "kustomize", dir).Output()
				if err != nil {
					t.Errorf("kubectl kustomize %s: %v", dir, err)
				} else if a, b := yamlDocs(t, out), yamlDocs(t, all); !reflect.DeepEqual(a, b) {
					t.Errorf("kubectl kustomize %s renders otherwise than kustomize's library:\n%s\n---- library:\n%s", dir, out, all)
				}
			}
		})
	}
}

// TestServeOverlays checks what the serve deployments promise, in the
// rendered objects: replicas the HPA sets, spread over nodes; a
// ReadWriteMany claim; a NetworkPolicy over the pods, in and out; and, in
// the overlays, TLS between the replicas (cert-manager), an Ingress with
// TLS, and their database.
func TestServeOverlays(t *testing.T) {
	for _, dir := range []string{"serve", "overlays/cnpg", "overlays/external"} {
		t.Run(strings.ReplaceAll(dir, "/", "_"), func(t *testing.T) {
			objs, _ := render(t, dir)
			dep := find[appsv1.Deployment](t, objs, "Deployment", "spotter")
			pod := dep.Spec.Template.Spec
			c := pod.Containers[0]
			if dep.Spec.Replicas != nil {
				t.Errorf("the Deployment sets replicas %d: every apply would reset what the HPA set", *dep.Spec.Replicas)
			}
			hpa := find[autoscalingv2.HorizontalPodAutoscaler](t, objs, "HorizontalPodAutoscaler", "spotter")
			if *hpa.Spec.MinReplicas < 2 {
				t.Errorf("HPA minReplicas %d, want 2 or more: one replica's loss must leave one", *hpa.Spec.MinReplicas)
			}
			spread := map[string]corev1.UnsatisfiableConstraintAction{}
			for _, s := range pod.TopologySpreadConstraints {
				spread[s.TopologyKey] = s.WhenUnsatisfiable
			}
			if spread["kubernetes.io/hostname"] != corev1.DoNotSchedule || spread["topology.kubernetes.io/zone"] == "" {
				t.Errorf("topology spread %v, want nodes (DoNotSchedule) and zones", spread)
			}
			pvc := find[corev1.PersistentVolumeClaim](t, objs, "PersistentVolumeClaim", "spotter-data")
			if !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany) {
				t.Errorf("the data claim is %v: any replica adopts any session, so every pod mounts it: ReadWriteMany", pvc.Spec.AccessModes)
			}
			np := find[networkingv1.NetworkPolicy](t, objs, "NetworkPolicy", "spotter")
			if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
				t.Errorf("NetworkPolicy types %v, want Ingress and Egress", np.Spec.PolicyTypes)
			}
			if v, ok := argValue(c.Args, "--retain"); !ok || v == "" {
				t.Errorf("serve args %v have no --retain: the data volume would fill", c.Args)
			}
			if dir == "serve" {
				return
			}
			adv, _ := argValue(c.Args, "--advertise")
			var tlsArgs []string
			for _, f := range []string{"--tls-cert", "--tls-key", "--peer-ca", "--peer-name"} {
				if v, ok := argValue(c.Args, f); ok {
					tlsArgs = append(tlsArgs, f+" "+v)
				}
			}
			if !strings.HasPrefix(adv, "https://") || len(tlsArgs) != 4 {
				t.Errorf("--advertise %q and %v: want https between the replicas, with a certificate and its CA", adv, tlsArgs)
			}
			if c.ReadinessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS || c.LivenessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS {
				t.Errorf("the probes are not HTTPS, while the replica serves it")
			}
			cert := find[map[string]any](t, objs, "Certificate", "spotter-peer")
			secret := cert["spec"].(map[string]any)["secretName"]
			mounted := slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == secret })
			if !mounted {
				t.Errorf("the peer Certificate's Secret %v is not mounted", secret)
			}
			for _, o := range objs {
				if o.Kind == "Certificate" {
					crt := find[map[string]any](t, objs, "Certificate", o.Metadata.Name)
					issuer := crt["spec"].(map[string]any)["issuerRef"].(map[string]any)["name"].(string)
					if !has(objs, "Issuer", issuer) {
						t.Errorf("Certificate %s is issued by %s, which is not rendered", o.Metadata.Name, issuer)
					}
				}
			}
			ing := find[networkingv1.Ingress](t, objs, "Ingress", "spotter")
			if len(ing.Spec.TLS) == 0 || ing.Annotations["cert-manager.io/cluster-issuer"] == "" ||
				ing.Annotations["nginx.ingress.kubernetes.io/backend-protocol"] != "HTTPS" {
				t.Errorf("Ingress: TLS %v, annotations %v; want TLS from cert-manager and HTTPS to the replicas", ing.Spec.TLS, ing.Annotations)
			}
			db := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "SPOTTER_DATABASE_URL" })
			ref := c.Env[db].ValueFrom.SecretKeyRef
			pgnp := find[networkingv1.NetworkPolicy](t, objs, "NetworkPolicy", "spotter-postgres")
			switch dir {
			case "overlays/cnpg":
				cl := find[map[string]any](t, objs, "Cluster", "")
				name := cl["metadata"].(map[string]any)["name"].(string)
				if ref.Name != name+"-app" || ref.Key != "uri" {
					t.Errorf("the database URL comes from %s/%s, want CloudNativePG's %s-app/uri", ref.Name, ref.Key, name)
				}
				if sel := pgnp.Spec.Egress[0].To[0].PodSelector; sel == nil || sel.MatchLabels["cnpg.io/cluster"] != name {
					t.Errorf("the postgres NetworkPolicy reaches %v, want the pods of Cluster %s", sel, name)
				}
			case "overlays/external":
				if ref.Name != "spotter-postgres" || ref.Key != "dsn" {
					t.Errorf("the database URL comes from %s/%s, want the Secret spotter-postgres/dsn", ref.Name, ref.Key)
				}
			}
		})
	}
}

// The batch's shard count is one knob: completions in batch/job.yaml;
// the shard argument's N, parallelism and maxFailedIndexes follow it.
func TestBatchShardKnob(t *testing.T) {
	for _, n := range []int32{4, 6} {
		fs := filesys.MakeFsInMemory()
		for _, f := range []string{"kustomization.yaml", "job.yaml", "pvc.yaml", "jobs.jsonl"} {
			b, err := os.ReadFile(filepath.Join("batch", f))
			if err != nil {
				t.Fatal(err)
			}
			if f == "job.yaml" {
				b = regexp.MustCompile(`(?m)^(  completions:) 4\b`).ReplaceAll(b, []byte(fmt.Sprintf("$1 %d", n)))
			}
			if err := fs.WriteFile(filepath.Join("/batch", f), b); err != nil {
				t.Fatal(err)
			}
		}
		objs, _ := renderFS(t, fs, "/batch")
		job := find[batchv1.Job](t, objs, "Job", "spotter-batch")
		shard, _ := argValue(job.Spec.Template.Spec.Containers[0].Args, "--shard")
		if *job.Spec.Completions != n || shard != fmt.Sprintf("$(JOB_COMPLETION_INDEX)/%d", n) ||
			*job.Spec.Parallelism != n || *job.Spec.MaxFailedIndexes != n {
			t.Errorf("completions %d, --shard %s, parallelism %d, maxFailedIndexes %d; want all %d",
				*job.Spec.Completions, shard, *job.Spec.Parallelism, *job.Spec.MaxFailedIndexes, n)
		}
	}
}

// The CRD schemas catch what the API server would refuse: a misspelt
// field and a wrong type.
func TestCRDSchemasFail(t *testing.T) {
	objs, _ := render(t, "overlays/cnpg")
	for _, o := range objs {
		if !slices.Contains([]string{"Cluster", "Certificate", "ServiceMonitor", "PrometheusRule"}, o.Kind) {
			continue
		}
		if err := validateCR(t, o); err != nil {
			t.Fatalf("%s: %v", o.Kind, err)
		}
		for _, bad := range []struct{ from, to string }{{"spec:\n", "spec:\n  instancez: 3\n"}, {"spec:\n", "spec:\n  bogus: {}\n"}} {
			b := o
			b.raw = []byte(strings.Replace(string(o.raw), bad.from, bad.to, 1))
			if err := validateCR(t, b); err == nil {
				t.Errorf("%s with %q validates, want an error", o.Kind, strings.TrimSpace(bad.to))
			}
		}
	}
	var cl map[string]any
	for _, o := range objs {
		if o.Kind == "Cluster" {
			_ = yaml.Unmarshal(o.raw, &cl)
			cl["spec"].(map[string]any)["instances"] = "three"
			b, _ := json.Marshal(cl)
			o.raw, _ = yaml.JSONToYAML(b)
			if err := validateCR(t, o); err == nil {
				t.Errorf("a Cluster with instances \"three\" validates, want an error")
			}
		}
	}
}

func netipPrefix(s string) (netip.Prefix, error) { return netip.ParsePrefix(s) }

// yamlDocs decodes a stream of YAML documents.
func yamlDocs(t *testing.T, b []byte) []any {
	t.Helper()
	var out []any
	for _, d := range strings.Split(string(b), "\n---\n") {
		var v any
		if err := yaml.Unmarshal([]byte(d), &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}
