package deploy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/spotter-harness/spotter/internal/batch"
)

// kustomization is the part of kustomize's Kustomization these bases use.
// Decoding is strict, so a field outside it fails the test: add it here
// when a base needs it.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Labels     []struct {
		Pairs            map[string]string `json:"pairs"`
		IncludeSelectors bool              `json:"includeSelectors"`
	} `json:"labels"`
	ConfigMapGenerator []struct {
		Name  string   `json:"name"`
		Files []string `json:"files"`
	} `json:"configMapGenerator"`
	Images []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
		Digest  string `json:"digest"`
	} `json:"images"`
	// Replacements are checked by rendering (render_test.go).
	Replacements []map[string]any `json:"replacements"`
}

// typed is an object with its apiVersion and kind, as every manifest has.
type typed interface {
	GetObjectKind() schema.ObjectKind
}

// decode reads a manifest strictly: an unknown or duplicate field fails,
// and so does a kind other than want's.
func decode(t *testing.T, path string, want typed, gvk schema.GroupVersionKind) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, want); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	if got := want.GetObjectKind().GroupVersionKind(); got != gvk {
		t.Fatalf("%s is a %v, want %v", path, got, gvk)
	}
}

func readKustomization(t *testing.T, dir string) kustomization {
	t.Helper()
	path := filepath.Join(dir, "kustomization.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(b, &k); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Fatalf("%s: apiVersion %q kind %q, want a kustomize.config.k8s.io/v1beta1 Kustomization", path, k.APIVersion, k.Kind)
	}
	for _, r := range k.Resources {
		if _, err := os.Stat(filepath.Join(dir, r)); err != nil {
			t.Errorf("%s: resource %s: %v", path, r, err)
		}
	}
	for _, g := range k.ConfigMapGenerator {
		for _, f := range g.Files {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("%s: configMapGenerator %s: %v", path, g.Name, err)
			}
		}
	}
	// Every manifest in the directory is applied, or says it is an example.
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range files {
		base := filepath.Base(f)
		if base != "kustomization.yaml" && !slices.Contains(k.Resources, base) && !strings.Contains(base, ".example.") {
			t.Errorf("%s is neither in %s's resources nor named *.example.yaml", f, path)
		}
	}
	return k
}

// copyLine is a Dockerfile COPY from the build context.
var copyLine = regexp.MustCompile(`(?m)^COPY +([^-\s][^\s]*) +(/[^\s]+)\s*$`)

// inImage rewrites the image's paths in b (a jobs file's cassettes, say)
// to where they come from in this repository, as the Dockerfile's COPY
// lines put them there.
func inImage(t *testing.T, b []byte) []byte {
	t.Helper()
	df, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range copyLine.FindAllSubmatch(df, -1) {
		src, err := filepath.Abs(filepath.Join("..", string(m[1])))
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.ReplaceAll(b, append(bytes.TrimSuffix(m[2], []byte("/")), '/'), []byte(src+"/"))
	}
	return b
}

// imageUID is the uid the Dockerfile's spotter user gets.
func imageUID(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`useradd [^\n]*--uid (\d+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("Dockerfile: no useradd --uid: the manifests' runAsUser cannot be checked")
	}
	uid, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return uid
}

// problems collects what is wrong with a manifest, a sentence each.
type problems []string

func (p *problems) add(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

// checkPod lists what is wrong with a pod template for running Spotter:
// every rule here holds for every workload in deploy/.
func checkPod(spec corev1.PodSpec, uid int64) []string {
	var bad problems
	checkPodSecurity(&bad, spec, uid)
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			bad.add("volume %s is a hostPath", v.Name)
		}
		volumes[v.Name] = v
	}
	used := map[string]bool{}
	if len(spec.Containers) == 0 {
		bad.add("pod has no containers")
	}
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		checkContainer(&bad, c, volumes, used)
	}
	for name := range volumes {
		if !used[name] {
			bad.add("volume %s is not mounted", name)
		}
	}
	return bad
}

// checkPodSecurity checks the pod's own hardening: non-root as the
// image's user uid, the runtime's seccomp profile, no host namespaces and
// no service account token.
func checkPodSecurity(bad *problems, spec corev1.PodSpec, uid int64) {
	psc := spec.SecurityContext
	switch {
	case psc == nil:
		bad.add("pod has no securityContext")
	default:
		if psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
			bad.add("pod securityContext.runAsNonRoot is not true")
		}
		if psc.RunAsUser == nil || *psc.RunAsUser != uid {
			bad.add("pod securityContext.runAsUser is not the image's user %d", uid)
		}
		if psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			bad.add("pod seccompProfile is not RuntimeDefault")
		}
	}
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		bad.add("pod shares a host namespace")
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		bad.add("pod mounts a service account token it does not need")
	}
}

// checkContainer checks one container of a pod whose volumes are given:
// its image, resources, hardening and mounts. It marks the volumes it
// mounts in used; the mounts of a container without a securityContext are
// not looked at.
func checkContainer(bad *problems, c corev1.Container, volumes map[string]corev1.Volume, used map[string]bool) {
	if c.Image == "" {
		bad.add("container %s has no image", c.Name)
	}
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, hasReq := c.Resources.Requests[res]
		lim, hasLim := c.Resources.Limits[res]
		switch {
		case !hasReq || !hasLim:
			bad.add("container %s has no %s request and limit", c.Name, res)
		case req.Cmp(lim) > 0:
			bad.add("container %s requests more %s (%s) than its limit (%s)", c.Name, res, req.String(), lim.String())
		}
	}
	if c.SecurityContext == nil {
		bad.add("container %s has no securityContext", c.Name)
		return
	}
	checkContainerSecurity(bad, c.Name, c.SecurityContext)
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		if _, ok := volumes[m.Name]; !ok {
			bad.add("container %s mounts undefined volume %s", c.Name, m.Name)
		}
		used[m.Name] = true
		mounts[m.MountPath] = m.Name
	}
	// Chromium writes its profile to /tmp and caches to $HOME.
	for _, dir := range []string{"/tmp", "/home/spotter"} {
		if v, ok := volumes[mounts[dir]]; !ok || v.EmptyDir == nil {
			bad.add("container %s has no emptyDir at %s for Chromium to write to", c.Name, dir)
		}
	}
}

// checkContainerSecurity checks container name's securityContext: not
// privileged, no privilege escalation, not root, every capability dropped
// and a read-only root filesystem.
func checkContainerSecurity(bad *problems, name string, sc *corev1.SecurityContext) {
	if sc.Privileged != nil && *sc.Privileged {
		bad.add("container %s is privileged", name)
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		bad.add("container %s allows privilege escalation", name)
	}
	if sc.RunAsNonRoot != nil && !*sc.RunAsNonRoot || sc.RunAsUser != nil && *sc.RunAsUser == 0 {
		bad.add("container %s runs as root", name)
	}
	if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
		bad.add("container %s does not drop all capabilities", name)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		bad.add("container %s has a writable root filesystem", name)
	}
}

// shardArg matches the --shard argument the Job passes.
var shardArg = regexp.MustCompile(`^\$\(JOB_COMPLETION_INDEX\)/(\d+)$`)

// checkJob lists what is wrong with the batch Job, beyond checkPod.
func checkJob(job batchv1.Job, pvc corev1.PersistentVolumeClaim, jobsConfigMap string) []string {
	var bad problems
	s := job.Spec
	if !checkJobSpec(&bad, s) {
		return bad
	}
	pod := s.Template.Spec
	c := pod.Containers[0]
	args := c.Args
	if len(args) < 2 || args[0] != "batch" {
		bad.add("args %v do not run spotter batch JOBS", args)
		return bad
	}
	checkJobArgs(&bad, args, *s.Completions)
	checkCompletionIndex(&bad, c.Env)
	checkJobMounts(&bad, c, pod.Volumes, pvc, jobsConfigMap)
	return bad
}

// checkJobSpec checks the Job's completion and retry settings and that
// its pod has one container, which podFailurePolicy names. It reports
// false when the rest cannot be checked: completions is not set, or the
// pod does not have one container.
func checkJobSpec(bad *problems, s batchv1.JobSpec) bool {
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		bad.add("completionMode is not Indexed")
	}
	if s.Completions == nil || *s.Completions < 1 {
		bad.add("completions is not set")
		return false
	}
	if s.Parallelism == nil || *s.Parallelism < 1 || *s.Parallelism > *s.Completions {
		bad.add("parallelism is not 1..completions")
	}
	if s.BackoffLimitPerIndex == nil {
		bad.add("backoffLimitPerIndex is not set: one shard's retries would fail the others")
	}
	pod := s.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		bad.add("restartPolicy is %q, want Never (a new pod per retry)", pod.RestartPolicy)
	}
	if len(pod.Containers) != 1 {
		bad.add("%d containers, want 1", len(pod.Containers))
		return false
	}
	c := pod.Containers[0]
	if s.PodFailurePolicy != nil {
		for _, r := range s.PodFailurePolicy.Rules {
			if r.OnExitCodes != nil && r.OnExitCodes.ContainerName != nil && *r.OnExitCodes.ContainerName != c.Name {
				bad.add("podFailurePolicy names container %q, not %q", *r.OnExitCodes.ContainerName, c.Name)
			}
		}
	}
	return true
}

// argValue is the value that follows flag name in args, and whether there
// is one.
func argValue(args []string, name string) (string, bool) {
	i := slices.Index(args, name)
	if i < 0 || i+1 >= len(args) {
		return "", false
	}
	return args[i+1], true
}

// checkJobArgs checks the batch's --shard (this pod's index of as many
// shards as the Job has completions) and --isolate (no containerd in a
// pod).
func checkJobArgs(bad *problems, args []string, completions int32) {
	if v, ok := argValue(args, "--shard"); !ok {
		bad.add("args have no --shard")
	} else if m := shardArg.FindStringSubmatch(v); m == nil {
		bad.add("--shard %q is not $(JOB_COMPLETION_INDEX)/N", v)
	} else if n, _ := strconv.Atoi(m[1]); int32(n) != completions {
		bad.add("--shard's N is %d but completions is %d: shards would be lost or run twice", n, completions)
	}
	if v, ok := argValue(args, "--isolate"); !ok || v != "local" && v != "none" {
		bad.add("--isolate is %q; a pod has no containerd daemon, so it must be local or none (auto would pick local anyway)", v)
	}
}

// checkCompletionIndex checks that env declares JOB_COMPLETION_INDEX from
// the pod's completion-index annotation, which --shard reads.
func checkCompletionIndex(bad *problems, env []corev1.EnvVar) {
	declared := false
	for _, e := range env {
		if e.Name == "JOB_COMPLETION_INDEX" {
			declared = e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
				e.ValueFrom.FieldRef.FieldPath == "metadata.annotations['batch.kubernetes.io/job-completion-index']"
		}
	}
	if !declared {
		bad.add("JOB_COMPLETION_INDEX is not declared from the completion-index annotation")
	}
}

// checkJobMounts checks where container c of a pod with volumes reads and
// writes: --out on a writable mount of the claim pvc, the jobs file (its
// first argument after batch) on a read-only mount of the ConfigMap
// jobsConfigMap.
func checkJobMounts(bad *problems, c corev1.Container, volumes []corev1.Volume, pvc corev1.PersistentVolumeClaim, jobsConfigMap string) {
	volumeOf := map[string]corev1.Volume{}
	for _, v := range volumes {
		volumeOf[v.Name] = v
	}
	mountOf := func(path string) (corev1.VolumeMount, corev1.Volume, bool) {
		for _, m := range c.VolumeMounts {
			if path == m.MountPath || strings.HasPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/") {
				v, ok := volumeOf[m.Name]
				return m, v, ok
			}
		}
		return corev1.VolumeMount{}, corev1.Volume{}, false
	}
	if out, ok := argValue(c.Args, "--out"); !ok {
		bad.add("args have no --out")
	} else if m, v, ok := mountOf(out); !ok || v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != pvc.Name || m.ReadOnly {
		bad.add("--out %s is not on a writable mount of the claim %s", out, pvc.Name)
	}
	if m, v, ok := mountOf(c.Args[1]); !ok || v.ConfigMap == nil || v.ConfigMap.Name != jobsConfigMap || !m.ReadOnly {
		bad.add("the jobs file %s is not on a read-only mount of the ConfigMap %s", c.Args[1], jobsConfigMap)
	}
}

func TestBatchJob(t *testing.T) {
	uid := imageUID(t)
	k := readKustomization(t, "batch")
	var job batchv1.Job
	decode(t, "batch/job.yaml", &job, batchv1.SchemeGroupVersion.WithKind("Job"))
	var pvc corev1.PersistentVolumeClaim
	decode(t, "batch/pvc.yaml", &pvc, corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"))
	if len(k.ConfigMapGenerator) != 1 || !slices.Contains(k.ConfigMapGenerator[0].Files, "jobs.jsonl") {
		t.Fatalf("batch/kustomization.yaml generates %+v, want one ConfigMap with jobs.jsonl", k.ConfigMapGenerator)
	}
	for _, p := range append(checkPod(job.Spec.Template.Spec, uid), checkJob(job, pvc, k.ConfigMapGenerator[0].Name)...) {
		t.Errorf("batch/job.yaml: %s", p)
	}
	if !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany) {
		t.Errorf("batch/pvc.yaml access modes %v, want ReadWriteMany: shards on several nodes share it", pvc.Spec.AccessModes)
	}
	checkImages(t, k, job.Spec.Template.Spec)

	// The sample jobs file is one spotter batch accepts in the image,
	// where the examples it names are (imageFile).
	b, err := os.ReadFile("batch/jobs.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(t.TempDir(), "jobs.jsonl")
	if err := os.WriteFile(local, inImage(t, b), 0o644); err != nil {
		t.Fatal(err)
	}
	jobs, err := batch.Load(local)
	if err != nil {
		t.Fatalf("batch/jobs.jsonl: %v", err)
	}
	if int32(len(jobs)) < *job.Spec.Completions {
		t.Errorf("batch/jobs.jsonl has %d jobs, fewer than the %d shards", len(jobs), *job.Spec.Completions)
	}
}

// TestServe checks what only the files say: the pod's hardening, the
// images, and that the database and the token come
// from the Secrets the examples show. Whether the binary keeps the
// manifest's args, env, ports and probes is TestServeBinary's (run_test.go),
// and whether the API server would take the manifests TestValidate's.
func TestServe(t *testing.T) {
	uid := imageUID(t)
	k := readKustomization(t, "serve")
	var dep appsv1.Deployment
	decode(t, "serve/deployment.yaml", &dep, appsv1.SchemeGroupVersion.WithKind("Deployment"))
	secrets := map[string]corev1.Secret{}
	for _, f := range []string{"serve/postgres-secret.example.yaml", "serve/token-secret.example.yaml"} {
		var s corev1.Secret
		decode(t, f, &s, corev1.SchemeGroupVersion.WithKind("Secret"))
		secrets[s.Name] = s
	}
	pod := dep.Spec.Template.Spec
	for _, p := range checkPod(pod, uid) {
		t.Errorf("serve/deployment.yaml: %s", p)
	}
	checkImages(t, k, pod)
	if g := pod.TerminationGracePeriodSeconds; g == nil || *g < 30 {
		t.Errorf("terminationGracePeriodSeconds = %v, want room for a drain", g)
	}
	c := pod.Containers[0]
	// The database and the token come from Secrets, never from the manifest.
	for _, name := range []string{"SPOTTER_DATABASE_URL", "SPOTTER_TOKEN"} {
		i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
		if i < 0 {
			t.Errorf("serve has no %s", name)
			continue
		}
		e := c.Env[i]
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			t.Errorf("%s is not from a Secret", name)
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		if _, ok := secrets[ref.Name].StringData[ref.Key]; !ok {
			t.Errorf("%s reads Secret %s key %q, which no example Secret has", name, ref.Name, ref.Key)
		}
		if ref.Optional != nil && *ref.Optional {
			t.Errorf("%s is optional; every replica needs it", name)
		}
	}
	for _, e := range c.Env {
		if e.Value != "" && strings.Contains(strings.ToLower(e.Name), "key") {
			t.Errorf("env %s holds a literal secret", e.Name)
		}
	}
}

// checkImages checks that every container's image is one the
// kustomization sets, so `kustomize edit set image` reaches all of them.
func checkImages(t *testing.T, k kustomization, pod corev1.PodSpec) {
	t.Helper()
	for _, c := range pod.Containers {
		found := false
		for _, img := range k.Images {
			found = found || img.Name == c.Image
		}
		if !found {
			t.Errorf("container %s image %q is not in the kustomization's images", c.Name, c.Image)
		}
	}
}

// TestChecksFail makes sure the checks above catch what they are for: each
// case breaks the real Job in one way.
func TestChecksFail(t *testing.T) {
	uid := imageUID(t)
	k := readKustomization(t, "batch")
	var good batchv1.Job
	decode(t, "batch/job.yaml", &good, batchv1.SchemeGroupVersion.WithKind("Job"))
	var pvc corev1.PersistentVolumeClaim
	decode(t, "batch/pvc.yaml", &pvc, corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"))
	cm := k.ConfigMapGenerator[0].Name
	if bad := append(checkPod(good.Spec.Template.Spec, uid), checkJob(good, pvc, cm)...); len(bad) > 0 {
		t.Fatalf("the real Job fails the checks: %v", bad)
	}
	yes, no := true, false
	tests := []struct {
		name   string
		mutate func(j *batchv1.Job)
		want   string
	}{
		{"privileged", func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].SecurityContext.Privileged = &yes }, "is privileged"},
		{"root", func(j *batchv1.Job) { j.Spec.Template.Spec.SecurityContext.RunAsNonRoot = &no }, "runAsNonRoot is not true"},
		{"no limits", func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Resources.Limits = nil }, "no cpu request and limit"},
		{"escalation", func(j *batchv1.Job) {
			j.Spec.Template.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil
		}, "privilege escalation"},
		{"caps", func(j *batchv1.Job) {
			j.Spec.Template.Spec.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
		}, "capabilities"},
		{"host path", func(j *batchv1.Job) {
			j.Spec.Template.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}
		}, "hostPath"},
		{"non-indexed", func(j *batchv1.Job) { m := batchv1.NonIndexedCompletion; j.Spec.CompletionMode = &m }, "not Indexed"},
		{"shard count", func(j *batchv1.Job) { n := int32(5); j.Spec.Completions = &n }, "completions is 5"},
		{"parallelism", func(j *batchv1.Job) { n := int32(9); j.Spec.Parallelism = &n }, "parallelism"},
		{"no shard", func(j *batchv1.Job) {
			c := &j.Spec.Template.Spec.Containers[0]
			i := slices.Index(c.Args, "--shard")
			c.Args = slices.Delete(c.Args, i, i+2)
		}, "no --shard"},
		{"out not on the claim", func(j *batchv1.Job) {
			c := &j.Spec.Template.Spec.Containers[0]
			c.Args[slices.Index(c.Args, "--out")+1] = "/tmp/results"
		}, "--out /tmp/results"},
		{"writable jobs", func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].VolumeMounts[0].ReadOnly = false }, "read-only mount"},
		{"undefined volume", func(j *batchv1.Job) {
			j.Spec.Template.Spec.Containers[0].VolumeMounts[0].Name = "nope"
		}, "undefined volume nope"},
		{"restart", func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure }, "restartPolicy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var j batchv1.Job
			good.DeepCopyInto(&j)
			tt.mutate(&j)
			bad := append(checkPod(j.Spec.Template.Spec, uid), checkJob(j, pvc, cm)...)
			if !slices.ContainsFunc(bad, func(s string) bool { return strings.Contains(s, tt.want) }) {
				t.Errorf("checks of a Job broken by %s = %q, want one containing %q", tt.name, bad, tt.want)
			}
		})
	}
}

// TestStrictDecoding checks that a misspelt field fails to decode, as a
// typo in a manifest would be dropped silently by kubectl apply.
func TestStrictDecoding(t *testing.T) {
	b, err := os.ReadFile("batch/job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	typo := strings.Replace(string(b), "completionMode:", "completionMod:", 1)
	var job batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(typo), &job); err == nil || !strings.Contains(err.Error(), "completionMod") {
		t.Errorf("UnmarshalStrict(job with completionMod) error = %v, want one naming the unknown field", err)
	}
}
