package deploy

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// What the API server would refuse, offline: the manifests are decoded
// strictly into the API types (decode), then checked with apimachinery's
// own validation (object names, labels and selectors, DNS names, port and
// environment variable names) and the rules of the kinds used here that
// apimachinery does not hold (they live in k8s.io/kubernetes, which is
// not a module to import): a selector that matches its template, probe
// ports that exist, env sources with a name and key, podFailurePolicy's
// constraints. Field names and kinds were checked by strict decoding.

// validator collects the errors of one manifest.
type validator struct{ errs field.ErrorList }

func (v *validator) add(errs ...*field.Error) { v.errs = append(v.errs, errs...) }

func (v *validator) strs(p *field.Path, value string, msgs []string) {
	for _, m := range msgs {
		v.add(field.Invalid(p, value, m))
	}
}

func (v *validator) meta(m metav1.ObjectMeta, namespaced bool) {
	if m.Namespace == "" {
		m.Namespace = "default" // kubectl's, when the manifest names none
	}
	v.add(apivalidation.ValidateObjectMeta(&m, namespaced, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
}

// selector checks a label selector and that it selects labels.
func (v *validator) selector(p *field.Path, sel *metav1.LabelSelector, labels map[string]string) {
	if sel == nil || len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		v.add(field.Required(p, "a selector that selects something"))
		return
	}
	v.add(metavalidation.ValidateLabelSelector(sel, metavalidation.LabelSelectorValidationOptions{}, p)...)
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		v.add(field.Invalid(p, sel, err.Error()))
		return
	}
	if labels != nil && !s.Matches(labelSet(labels)) {
		v.add(field.Invalid(p, sel, fmt.Sprintf("does not select the pod template's labels %v", labels)))
	}
}

type labelSet map[string]string

func (l labelSet) Has(k string) bool              { _, ok := l[k]; return ok }
func (l labelSet) Get(k string) string            { return l[k] }
func (l labelSet) Lookup(k string) (string, bool) { v, ok := l[k]; return v, ok }

func (v *validator) podTemplate(p *field.Path, t corev1.PodTemplateSpec) {
	v.add(metavalidation.ValidateLabels(t.Labels, p.Child("metadata", "labels"))...)
	spec := p.Child("spec")
	volumes := map[string]bool{}
	for i, vol := range t.Spec.Volumes {
		v.strs(spec.Child("volumes").Index(i).Child("name"), vol.Name, validation.IsDNS1123Label(vol.Name))
		if volumes[vol.Name] {
			v.add(field.Duplicate(spec.Child("volumes").Index(i).Child("name"), vol.Name))
		}
		volumes[vol.Name] = true
	}
	if len(t.Spec.Containers) == 0 {
		v.add(field.Required(spec.Child("containers"), ""))
	}
	for i, c := range t.Spec.Containers {
		cp := spec.Child("containers").Index(i)
		v.strs(cp.Child("name"), c.Name, validation.IsDNS1123Label(c.Name))
		if c.Image == "" {
			v.add(field.Required(cp.Child("image"), ""))
		}
		ports := map[string]bool{}
		for j, port := range c.Ports {
			pp := cp.Child("ports").Index(j)
			v.strs(pp.Child("containerPort"), fmt.Sprint(port.ContainerPort), validation.IsValidPortNum(int(port.ContainerPort)))
			if port.Name != "" {
				v.strs(pp.Child("name"), port.Name, validation.IsValidPortName(port.Name))
				ports[port.Name] = true
			}
		}
		for j, e := range c.Env {
			ep := cp.Child("env").Index(j)
			v.strs(ep.Child("name"), e.Name, validation.IsEnvVarName(e.Name))
			if e.ValueFrom != nil {
				if e.Value != "" {
					v.add(field.Invalid(ep.Child("value"), e.Value, "may not be set with valueFrom"))
				}
				switch src := e.ValueFrom; {
				case src.SecretKeyRef != nil:
					v.strs(ep.Child("valueFrom", "secretKeyRef", "name"), src.SecretKeyRef.Name, validation.IsDNS1123Subdomain(src.SecretKeyRef.Name))
					v.strs(ep.Child("valueFrom", "secretKeyRef", "key"), src.SecretKeyRef.Key, validation.IsConfigMapKey(src.SecretKeyRef.Key))
				case src.FieldRef != nil:
					if src.FieldRef.FieldPath == "" {
						v.add(field.Required(ep.Child("valueFrom", "fieldRef", "fieldPath"), ""))
					}
				case src.ConfigMapKeyRef == nil && src.ResourceFieldRef == nil:
					v.add(field.Required(ep.Child("valueFrom"), "one source"))
				}
			}
		}
		for j, m := range c.VolumeMounts {
			if !volumes[m.Name] {
				v.add(field.NotFound(cp.Child("volumeMounts").Index(j).Child("name"), m.Name))
			}
			if !strings.HasPrefix(m.MountPath, "/") {
				v.add(field.Invalid(cp.Child("volumeMounts").Index(j).Child("mountPath"), m.MountPath, "must be absolute"))
			}
		}
		for name, pr := range map[string]*corev1.Probe{"readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe, "startupProbe": c.StartupProbe} {
			if pr == nil || pr.HTTPGet == nil {
				continue
			}
			hp := cp.Child(name, "httpGet")
			if !strings.HasPrefix(pr.HTTPGet.Path, "/") {
				v.add(field.Invalid(hp.Child("path"), pr.HTTPGet.Path, "must start with /"))
			}
			if port := pr.HTTPGet.Port; port.Type == intstr.String && !ports[port.StrVal] {
				v.add(field.NotFound(hp.Child("port"), port.StrVal))
			}
		}
	}
}

func (v *validator) deployment(d appsv1.Deployment) {
	v.meta(d.ObjectMeta, true)
	v.selector(field.NewPath("spec", "selector"), d.Spec.Selector, d.Spec.Template.Labels)
	v.podTemplate(field.NewPath("spec", "template"), d.Spec.Template)
}

func (v *validator) job(j batchv1.Job) {
	v.meta(j.ObjectMeta, true)
	v.podTemplate(field.NewPath("spec", "template"), j.Spec.Template)
	pfp := j.Spec.PodFailurePolicy
	if pfp == nil {
		return
	}
	rp := field.NewPath("spec", "podFailurePolicy", "rules")
	if len(pfp.Rules) > 20 {
		v.add(field.TooMany(rp, len(pfp.Rules), 20))
	}
	if j.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		v.add(field.Invalid(field.NewPath("spec", "template", "spec", "restartPolicy"), j.Spec.Template.Spec.RestartPolicy,
			"must be Never with a podFailurePolicy"))
	}
	for i, r := range pfp.Rules {
		p := rp.Index(i)
		switch r.Action {
		case batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyActionCount:
		case batchv1.PodFailurePolicyActionFailIndex:
			if j.Spec.BackoffLimitPerIndex == nil {
				v.add(field.Invalid(p.Child("action"), r.Action, "FailIndex needs backoffLimitPerIndex"))
			}
		default:
			v.add(field.NotSupported(p.Child("action"), r.Action, []string{"FailJob", "FailIndex", "Ignore", "Count"}))
		}
		if (r.OnExitCodes == nil) == (len(r.OnPodConditions) == 0) {
			v.add(field.Invalid(p, "", "exactly one of onExitCodes and onPodConditions"))
		}
		if ec := r.OnExitCodes; ec != nil {
			ep := p.Child("onExitCodes")
			if ec.ContainerName != nil && !slices.ContainsFunc(j.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == *ec.ContainerName }) {
				v.add(field.NotFound(ep.Child("containerName"), *ec.ContainerName))
			}
			if ec.Operator != batchv1.PodFailurePolicyOnExitCodesOpIn && ec.Operator != batchv1.PodFailurePolicyOnExitCodesOpNotIn {
				v.add(field.NotSupported(ep.Child("operator"), ec.Operator, []string{"In", "NotIn"}))
			}
			if len(ec.Values) == 0 || len(ec.Values) > 255 {
				v.add(field.Invalid(ep.Child("values"), ec.Values, "want 1 to 255 values"))
			}
			for k, val := range ec.Values {
				if ec.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && val == 0 {
					v.add(field.Invalid(ep.Child("values").Index(k), val, "0 cannot be used with the In operator"))
				}
				if k > 0 && ec.Values[k-1] >= val {
					v.add(field.Invalid(ep.Child("values").Index(k), val, "must be unique and ordered"))
				}
			}
		}
		for k, pc := range r.OnPodConditions {
			if pc.Type == "" {
				v.add(field.Required(p.Child("onPodConditions").Index(k).Child("type"), ""))
			}
		}
	}
}

func (v *validator) service(s corev1.Service, pods map[string]string) {
	v.meta(s.ObjectMeta, true)
	v.add(metavalidation.ValidateLabels(s.Spec.Selector, field.NewPath("spec", "selector"))...)
	for k, val := range s.Spec.Selector {
		if pods[k] != val {
			v.add(field.Invalid(field.NewPath("spec", "selector"), s.Spec.Selector, fmt.Sprintf("does not select the pods %v", pods)))
			break
		}
	}
	for i, p := range s.Spec.Ports {
		pp := field.NewPath("spec", "ports").Index(i)
		v.strs(pp.Child("port"), fmt.Sprint(p.Port), validation.IsValidPortNum(int(p.Port)))
		if len(s.Spec.Ports) > 1 || p.Name != "" {
			v.strs(pp.Child("name"), p.Name, validation.IsDNS1123Label(p.Name))
		}
		if p.TargetPort.Type == intstr.String {
			v.strs(pp.Child("targetPort"), p.TargetPort.StrVal, validation.IsValidPortName(p.TargetPort.StrVal))
		}
	}
}

func (v *validator) pdb(p policyv1.PodDisruptionBudget, pods map[string]string) {
	v.meta(p.ObjectMeta, true)
	sp := field.NewPath("spec")
	if (p.Spec.MinAvailable == nil) == (p.Spec.MaxUnavailable == nil) {
		v.add(field.Invalid(sp, "", "exactly one of minAvailable and maxUnavailable"))
	}
	v.selector(sp.Child("selector"), p.Spec.Selector, pods)
}

func (v *validator) pvc(c corev1.PersistentVolumeClaim) {
	v.meta(c.ObjectMeta, true)
	if len(c.Spec.AccessModes) == 0 {
		v.add(field.Required(field.NewPath("spec", "accessModes"), ""))
	}
	if q, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]; !ok || q.Sign() <= 0 {
		v.add(field.Required(field.NewPath("spec", "resources", "requests", "storage"), "a positive size"))
	}
}

func (v *validator) secret(s corev1.Secret) {
	v.meta(s.ObjectMeta, true)
	for k := range s.StringData {
		v.strs(field.NewPath("stringData").Key(k), k, validation.IsConfigMapKey(k))
	}
}

// report fails t with every error of a manifest.
func (v *validator) report(t *testing.T, path string) {
	t.Helper()
	for _, e := range v.errs {
		t.Errorf("%s: the API server would refuse it: %v", path, e)
	}
}

// TestValidate checks every manifest as the API server would, and that
// the checks catch what they are for.
func TestValidate(t *testing.T) {
	var job batchv1.Job
	decode(t, "batch/job.yaml", &job, batchv1.SchemeGroupVersion.WithKind("Job"))
	var bpvc corev1.PersistentVolumeClaim
	decode(t, "batch/pvc.yaml", &bpvc, corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"))
	var dep appsv1.Deployment
	decode(t, "serve/deployment.yaml", &dep, appsv1.SchemeGroupVersion.WithKind("Deployment"))
	var svc corev1.Service
	decode(t, "serve/service.yaml", &svc, corev1.SchemeGroupVersion.WithKind("Service"))
	var pdb policyv1.PodDisruptionBudget
	decode(t, "serve/pdb.yaml", &pdb, policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"))
	var spvc corev1.PersistentVolumeClaim
	decode(t, "serve/pvc.yaml", &spvc, corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"))
	pods := dep.Spec.Template.Labels

	for _, m := range []struct {
		path  string
		check func(*validator)
	}{
		{"batch/job.yaml", func(v *validator) { v.job(job) }},
		{"batch/pvc.yaml", func(v *validator) { v.pvc(bpvc) }},
		{"serve/deployment.yaml", func(v *validator) { v.deployment(dep) }},
		{"serve/service.yaml", func(v *validator) { v.service(svc, pods) }},
		{"serve/pdb.yaml", func(v *validator) { v.pdb(pdb, pods) }},
		{"serve/pvc.yaml", func(v *validator) { v.pvc(spvc) }},
	} {
		var v validator
		m.check(&v)
		v.report(t, m.path)
	}
	for _, path := range []string{"serve/postgres-secret.example.yaml", "serve/token-secret.example.yaml"} {
		var s corev1.Secret
		decode(t, path, &s, corev1.SchemeGroupVersion.WithKind("Secret"))
		var v validator
		v.secret(s)
		v.report(t, path)
	}

	// Each check fails what it is for.
	bad := []struct {
		name  string
		check func(*validator)
		want  string
	}{
		{"job name", func(v *validator) { j := *job.DeepCopy(); j.Name = "Spotter_Batch"; v.job(j) }, "metadata.name"},
		{"exit code 0 with In", func(v *validator) {
			j := *job.DeepCopy()
			j.Spec.PodFailurePolicy.Rules[1].OnExitCodes.Values = []int32{0, 1}
			v.job(j)
		}, "0 cannot be used"},
		{"unordered exit codes", func(v *validator) {
			j := *job.DeepCopy()
			j.Spec.PodFailurePolicy.Rules[1].OnExitCodes.Values = []int32{2, 1}
			v.job(j)
		}, "ordered"},
		{"unknown container", func(v *validator) {
			j := *job.DeepCopy()
			n := "other"
			j.Spec.PodFailurePolicy.Rules[1].OnExitCodes.ContainerName = &n
			v.job(j)
		}, "containerName"},
		{"selector", func(v *validator) {
			d := *dep.DeepCopy()
			d.Spec.Selector.MatchLabels["app.kubernetes.io/component"] = "other"
			v.deployment(d)
		}, "does not select"},
		{"probe port", func(v *validator) {
			d := *dep.DeepCopy()
			d.Spec.Template.Spec.Containers[0].ReadinessProbe.HTTPGet.Port = intstr.FromString("admin")
			v.deployment(d)
		}, "readinessProbe.httpGet.port"},
		{"env name", func(v *validator) {
			d := *dep.DeepCopy()
			d.Spec.Template.Spec.Containers[0].Env[0].Name = "POD IP"
			v.deployment(d)
		}, "env[0].name"},
		{"port name", func(v *validator) {
			d := *dep.DeepCopy()
			d.Spec.Template.Spec.Containers[0].Ports[0].Name = "http-port-that-is-long"
			v.deployment(d)
		}, "ports[0].name"},
		{"pdb both", func(v *validator) {
			p := *pdb.DeepCopy()
			one := intstr.FromInt32(1)
			p.Spec.MinAvailable = &one
			v.pdb(p, pods)
		}, "exactly one"},
		{"pdb selector", func(v *validator) { v.pdb(pdb, map[string]string{"app": "x"}) }, "does not select"},
		{"service selector", func(v *validator) { v.service(svc, map[string]string{"app": "x"}) }, "does not select"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			var v validator
			tt.check(&v)
			if !slices.ContainsFunc(v.errs, func(e *field.Error) bool { return strings.Contains(e.Error(), tt.want) }) {
				t.Errorf("validation of a manifest broken by %s = %v, want an error containing %q", tt.name, v.errs, tt.want)
			}
		})
	}
}
