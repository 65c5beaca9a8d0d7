package deploy

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/internal/testca"
	"github.com/spotter-harness/spotter/store"
	"github.com/spotter-harness/spotter/store/pgtest"
)

// The manifests and the binary keep one contract: these tests start the
// built spotter with a container's own args and env, as the kubelet
// would (env from test Secrets and the downward API, $(VAR) references
// expanded, volumes as directories), and hold it to the manifest: the
// probe paths on the named ports, the drain within the grace period,
// the exit codes against the Job's podFailurePolicy. The only rewrite is
// where the container listens: the manifest's port on every interface
// becomes a free port on loopback.

func integration(t *testing.T) {
	t.Helper()
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("SPOTTER_INTEGRATION=1 starts the built binary (real Chromium, PostgreSQL)")
	}
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// spotterBin builds cmd/spotter once per test binary.
func spotterBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "spotter-deploy-"); buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "spotter")
		cmd := exec.Command("go", "build", "-o", binPath, "github.com/spotter-harness/spotter/cmd/spotter")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out.Bytes())
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// pod is what the kubelet would give a container: Secrets, downward API
// fields, and a directory for each volume.
type pod struct {
	secrets map[string]map[string]string // name -> key -> value
	fields  map[string]string            // fieldPath -> value
	mounts  map[string]string            // mountPath -> host directory
}

var varRef = regexp.MustCompile(`\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)`)

// expand expands $(VAR) references as Kubernetes does in args and env
// values: a defined variable is replaced, $$ is a $, and anything else is
// left as it is.
func expand(s string, vars map[string]string) string {
	return varRef.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		if v, ok := vars[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

// env resolves a container's env in order, as the kubelet does: a
// missing optional Secret key leaves the variable out, a missing required
// one fails.
func (p pod) env(c corev1.Container) (map[string]string, []string, error) {
	vars := map[string]string{}
	var list []string
	for _, e := range c.Env {
		v := expand(e.Value, vars)
		if src := e.ValueFrom; src != nil {
			switch {
			case src.SecretKeyRef != nil:
				ref := src.SecretKeyRef
				val, ok := p.secrets[ref.Name][ref.Key]
				if !ok {
					if ref.Optional != nil && *ref.Optional {
						continue
					}
					return nil, nil, fmt.Errorf("env %s: Secret %s has no key %s, and it is not optional: the pod would not start", e.Name, ref.Name, ref.Key)
				}
				v = val
			case src.FieldRef != nil:
				val, ok := p.fields[src.FieldRef.FieldPath]
				if !ok {
					return nil, nil, fmt.Errorf("env %s: the test gives no value for field %s", e.Name, src.FieldRef.FieldPath)
				}
				v = val
			default:
				return nil, nil, fmt.Errorf("env %s: the test cannot resolve this source", e.Name)
			}
		}
		vars[e.Name] = v
		list = append(list, e.Name+"="+v)
	}
	return vars, list, nil
}

// localPath maps a path in the container to its volume's directory.
func (p pod) localPath(path string) (string, bool) {
	best := ""
	for m := range p.mounts {
		if (path == m || strings.HasPrefix(path, strings.TrimSuffix(m, "/")+"/")) && len(m) > len(best) {
			best = m
		}
	}
	if best == "" {
		return "", false
	}
	return filepath.Join(p.mounts[best], strings.TrimPrefix(path, best)), true
}

// command is the container's command line and environment on this
// machine: args expanded, paths on volumes mapped to their directories,
// and HOME, TMPDIR and PATH as the image has them.
func (p pod) command(t *testing.T, c corev1.Container) ([]string, []string) {
	t.Helper()
	vars, env, err := p.env(c)
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, a := range c.Args {
		a = expand(a, vars)
		if strings.HasPrefix(a, "/") {
			if l, ok := p.localPath(a); ok {
				a = l
			}
		}
		args = append(args, a)
	}
	home, _ := p.localPath("/home/spotter")
	tmp, _ := p.localPath("/tmp")
	env = append(env, "PATH="+os.Getenv("PATH"), "HOME="+home, "TMPDIR="+tmp)
	return args, env
}

// volumes gives each of a container's mounts a directory.
func volumes(t *testing.T, c corev1.Container) map[string]string {
	m := map[string]string{}
	for _, vm := range c.VolumeMounts {
		m[vm.MountPath] = t.TempDir()
	}
	return m
}

// serveContainer reads the Deployment's container and its probes.
func serveContainer(t *testing.T) (appsv1.Deployment, corev1.Container) {
	var dep appsv1.Deployment
	decode(t, "serve/deployment.yaml", &dep, appsv1.SchemeGroupVersion.WithKind("Deployment"))
	if len(dep.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("serve/deployment.yaml has %d containers, want 1", len(dep.Spec.Template.Spec.Containers))
	}
	return dep, dep.Spec.Template.Spec.Containers[0]
}

// toLoopback rewrites the listen addresses: "--addr HOST:PORT" with PORT
// the container's port becomes 127.0.0.1:0, and ":PORT" in an advertised
// URL ":0" (serve puts its listener's port there); "--metrics-addr
// HOST:PORT", when there, must be on the container's port named metrics
// (where the ServiceMonitor scrapes) and becomes 127.0.0.1:0 too. A listen
// address on another port, or on loopback, fails: the probes, the other
// replicas or Prometheus would not reach it.
func toLoopback(t *testing.T, args []string, c corev1.Container, port int32) []string {
	t.Helper()
	out := slices.Clone(args)
	listen := func(flag string, port int32) bool {
		i := slices.Index(out, flag)
		if i < 0 || i+1 >= len(out) {
			return false
		}
		host, p, err := net.SplitHostPort(out[i+1])
		if err != nil || p != strconv.Itoa(int(port)) || (host != "0.0.0.0" && host != "" && host != "::") {
			t.Fatalf("serve %s %q: want every interface on the container port %d", flag, out[i+1], port)
		}
		out[i+1] = "127.0.0.1:0"
		return true
	}
	if !listen("--addr", port) {
		t.Fatalf("serve args %v have no --addr: serve would listen on loopback only, out of the probes' reach", args)
	}
	if slices.Contains(out, "--metrics-addr") {
		i := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" })
		if i < 0 {
			t.Fatalf("serve has --metrics-addr but the container no port named metrics (%+v)", c.Ports)
		}
		listen("--metrics-addr", c.Ports[i].ContainerPort)
	}
	if j := slices.Index(out, "--advertise"); j >= 0 && j+1 < len(out) {
		suffix := ":" + strconv.Itoa(int(port))
		if !strings.HasSuffix(out[j+1], suffix) {
			t.Fatalf("serve --advertise %q: want the container port %d, where the other replicas forward", out[j+1], port)
		}
		out[j+1] = strings.TrimSuffix(out[j+1], suffix) + ":0"
	}
	return out
}

// proc is a started spotter.
type proc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	lines  chan string // stdout
	done   chan struct{}
	err    error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func start(t *testing.T, bin string, args, env []string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	p := &proc{cmd: cmd, stderr: &syncBuffer{}, lines: make(chan string, 1024), done: make(chan struct{})}
	cmd.Stderr = p.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", args, err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		close(p.lines)
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

// line waits for a stdout line with prefix and returns the rest.
func (p *proc) line(t *testing.T, prefix string, within time.Duration) string {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				<-p.done
				t.Fatalf("spotter exited (%v) before printing %q:\n%s", p.err, prefix, p.stderr)
			}
			if rest, ok := strings.CutPrefix(l, prefix); ok {
				return rest
			}
		case <-timeout:
			t.Fatalf("spotter printed no %q within %v:\n%s", prefix, within, p.stderr)
		}
	}
}

// exitCode waits for the process and returns its exit code.
func (p *proc) exitCode(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(within):
		t.Fatalf("spotter did not exit within %v:\n%s", within, p.stderr)
	}
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		return 0
	case errors.As(p.err, &ee):
		return ee.ExitCode()
	}
	t.Fatalf("spotter: %v", p.err)
	return -1
}

// kubelet probes as the kubelet does: HTTPS without checking the
// certificate, no credentials.
var kubelet = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}

// probe GETs a probe path as the kubelet does.
func probe(t *testing.T, base string, get *corev1.HTTPGetAction) (int, string) {
	t.Helper()
	resp, err := kubelet.Get(base + get.Path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// until polls a probe until it answers code, for at most within.
func until(t *testing.T, base string, get *corev1.HTTPGetAction, code int, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got, body := probe(t, base, get)
		if got == code {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s = %d %s, want %d within %v", get.Path, got, body, code, within)
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// heldModel is a fake Anthropic endpoint whose first answer waits for
// release.
type heldModel struct {
	*httptest.Server
	asked   chan struct{}
	release chan struct{}
}

func newHeldModel(t *testing.T) *heldModel {
	m := &heldModel{asked: make(chan struct{}, 8), release: make(chan struct{})}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.asked <- struct{}{}
		select {
		case <-m.release:
		case <-r.Context().Done():
			return
		}
		anthropictest.New(t, anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Done.")}}).ServeHTTP(w, r)
	}))
	t.Cleanup(m.Close)
	return m
}

// TestServeBinary starts spotter serve as deploy/serve's Deployment runs
// it, with PostgreSQL from store/pgtest behind the manifest's Secret:
// the probes answer on the named port (readiness once the database and a
// browser answer), the replica registers at its advertised address, and
// SIGTERM drains it: unready, new sessions refused with Retry-After, the
// running turn finished, exit 0 within the grace period, its sessions
// released to the other replicas.
func TestServeBinary(t *testing.T) {
	integration(t)
	bin := spotterBin(t)
	dsn := pgtest.NewDB(t, pgtest.Start(t))
	dep, c := serveContainer(t)
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	ready, live := c.ReadinessProbe, c.LivenessProbe
	if ready == nil || ready.HTTPGet == nil || live == nil || live.HTTPGet == nil {
		t.Fatal("serve/deployment.yaml: want HTTP readiness and liveness probes")
	}
	port, ok := ports[ready.HTTPGet.Port.String()]
	if !ok || ports[live.HTTPGet.Port.String()] != port {
		t.Fatalf("the probes' ports %s and %s are not one named container port (%v)", ready.HTTPGet.Port.String(), live.HTTPGet.Port.String(), ports)
	}
	const token = "deploy-test-token-0123456789abcdef"
	p := pod{
		secrets: map[string]map[string]string{
			"spotter-postgres": {"dsn": dsn},
			"spotter-token":    {"token": token},
		},
		fields: map[string]string{"status.podIP": "127.0.0.1", "metadata.name": "spotter-test-0"},
		mounts: volumes(t, c),
	}
	args, env := p.command(t, c)
	args = toLoopback(t, args, c, port)
	t0 := time.Now()
	sp := start(t, bin, args, env)
	base := strings.TrimSpace(sp.line(t, "spotter: listening on ", 60*time.Second))
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("serve listens on %s, want loopback", base)
	}
	until(t, base, live.HTTPGet, http.StatusOK, 10*time.Second)
	body := until(t, base, ready.HTTPGet, http.StatusOK, 60*time.Second)
	t.Logf("ready after %v: %s", time.Since(t0).Round(time.Millisecond), body)

	st, err := store.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reps, err := st.Replicas(t.Context())
	if err != nil || len(reps) != 1 || reps[0].ID != "spotter-test-0" || reps[0].Addr != base {
		t.Fatalf("replicas = %+v, %v, want spotter-test-0 (the pod's name) at %s (the pod's IP and port)", reps, err, base)
	}

	// A session in a turn, its model's answer held back.
	model := newHeldModel(t)
	put := func() (*http.Response, error) {
		b, _ := json.Marshal(map[string]any{
			"messages": []map[string]any{{"role": "user", "content": "Say done."}},
			"model":    map[string]any{"provider": "anthropic", "name": "claude-sonnet-4-5", "base_url": model.URL},
			"display":  map[string]any{"width": 800, "height": 600},
		})
		req, _ := http.NewRequestWithContext(t.Context(), "PUT", base+"/session", bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Spotter-Provider-Key", "sk-test-own-key")
		return http.DefaultClient.Do(req)
	}
	resp, err := put()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT /session = %v, %v, want 200", resp, err)
	}
	id := resp.Header.Get("X-Session-Id")
	streamed := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		streamed <- string(b)
	}()
	select {
	case <-model.asked:
	case <-time.After(60 * time.Second):
		t.Fatalf("the session's model was not asked within 60s:\n%s", sp.stderr)
	}

	grace := time.Duration(*dep.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
	term := time.Now()
	if err := sp.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	body = until(t, base, ready.HTTPGet, http.StatusServiceUnavailable, 10*time.Second)
	if !strings.Contains(body, `"draining":true`) {
		t.Errorf("readiness while draining = %s, want draining named", body)
	}
	if code, _ := probe(t, base, live.HTTPGet); code != http.StatusOK {
		t.Errorf("liveness while draining = %d, want 200: a draining server is alive", code)
	}
	resp, err = put()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("PUT /session while draining = %d (Retry-After %q) %s, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	close(model.release)
	if got := <-streamed; !strings.Contains(got, `"stopReason":"end_turn"`) {
		t.Errorf("the running session's stream = %s, want its turn to end while draining", got)
	}
	if code := sp.exitCode(t, grace); code != 0 {
		t.Errorf("spotter serve exited %d after SIGTERM, want 0:\n%s", code, sp.stderr)
	}
	t.Logf("drained and exited %v after SIGTERM (grace period %v)", time.Since(term).Round(time.Millisecond), grace)
	if reps, err := st.Replicas(t.Context()); err != nil || len(reps) != 0 {
		t.Errorf("replicas after exit = %+v, %v, want none", reps, err)
	}
	if o, err := st.Owner(t.Context(), id); err != nil || o.Replica != "" {
		t.Errorf("owner of the session after exit = %+v, %v, want released to the other replicas", o, err)
	}
}

// policyAction is what Kubernetes does with a pod of job that ended with
// exit code, under conditions: the action of the first podFailurePolicy
// rule that matches, Count when none does; "" when the pod succeeded.
func policyAction(job batchv1.Job, container string, code int32, conditions ...corev1.PodConditionType) batchv1.PodFailurePolicyAction {
	if code == 0 {
		return ""
	}
	for _, r := range job.Spec.PodFailurePolicy.Rules {
		if ec := r.OnExitCodes; ec != nil {
			if ec.ContainerName != nil && *ec.ContainerName != container {
				continue
			}
			in := slices.Contains(ec.Values, code)
			if ec.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && in || ec.Operator == batchv1.PodFailurePolicyOnExitCodesOpNotIn && !in {
				return r.Action
			}
			continue
		}
		for _, pc := range r.OnPodConditions {
			if slices.Contains(conditions, pc.Type) {
				return r.Action
			}
		}
	}
	return batchv1.PodFailurePolicyActionCount
}

// The Job's podFailurePolicy, read as Kubernetes reads it (the first
// rule that matches), does what its comments say with spotter batch's
// exit codes.
func TestPodFailurePolicy(t *testing.T) {
	var job batchv1.Job
	decode(t, "batch/job.yaml", &job, batchv1.SchemeGroupVersion.WithKind("Job"))
	c := job.Spec.Template.Spec.Containers[0].Name
	disrupted := corev1.DisruptionTarget
	for _, tt := range []struct {
		name       string
		code       int32
		conditions []corev1.PodConditionType
		want       batchv1.PodFailurePolicyAction
	}{
		{"every job passed", 0, nil, ""},
		{"a job failed: a retry would not change it", 1, nil, batchv1.PodFailurePolicyActionFailIndex},
		{"a bad jobs file", 2, nil, batchv1.PodFailurePolicyActionFailIndex},
		{"interrupted", 3, nil, batchv1.PodFailurePolicyActionCount},
		{"drained node: SIGTERM", 3, []corev1.PodConditionType{disrupted}, batchv1.PodFailurePolicyActionIgnore},
		{"drained node: killed after the grace period", 137, []corev1.PodConditionType{disrupted}, batchv1.PodFailurePolicyActionIgnore},
		{"drained node while a failed job was being written", 1, []corev1.PodConditionType{disrupted}, batchv1.PodFailurePolicyActionIgnore},
		{"out of memory", 137, nil, batchv1.PodFailurePolicyActionCount},
	} {
		if got := policyAction(job, c, tt.code, tt.conditions...); got != tt.want {
			t.Errorf("%s: exit %d with conditions %v: podFailurePolicy action %q, want %q", tt.name, tt.code, tt.conditions, got, tt.want)
		}
	}
}

// TestBatchBinary runs spotter batch as deploy/batch's Job runs it (its
// args, its env with the completion index from the downward API, the
// jobs ConfigMap and the results claim as directories), and checks each
// exit code against the Job's podFailurePolicy.
func TestBatchBinary(t *testing.T) {
	integration(t)
	bin := spotterBin(t)
	k := readKustomization(t, "batch")
	var job batchv1.Job
	decode(t, "batch/job.yaml", &job, batchv1.SchemeGroupVersion.WithKind("Job"))
	c := job.Spec.Template.Spec.Containers[0]
	jobsFile, err := os.ReadFile(filepath.Join("batch", k.ConfigMapGenerator[0].Files[0]))
	if err != nil {
		t.Fatal(err)
	}
	jobsFile = inImage(t, jobsFile) // the cassettes the image ships
	const annotation = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
	// run runs shard index with the ConfigMap holding jobs; stop, when
	// set, gets the process once its first job has a result in its trace.
	run := func(t *testing.T, index int, jobs []byte, stop func(*proc)) (int32, pod) {
		t.Helper()
		p := pod{fields: map[string]string{annotation: strconv.Itoa(index)}, mounts: volumes(t, c)}
		var cm string
		for _, m := range c.VolumeMounts {
			if m.Name == "jobs" {
				cm = p.mounts[m.MountPath]
			}
		}
		if err := os.WriteFile(filepath.Join(cm, k.ConfigMapGenerator[0].Files[0]), jobs, 0o644); err != nil {
			t.Fatal(err)
		}
		args, env := p.command(t, c)
		if !slices.Contains(args, fmt.Sprintf("%d/%d", index, *job.Spec.Completions)) {
			t.Fatalf("args %v do not run shard %d of %d", args, index, *job.Spec.Completions)
		}
		bp := start(t, bin, args, env)
		if stop != nil {
			bp.line(t, `{"event":"start"`, 60*time.Second)
			results, _ := p.localPath("/results")
			trace := filepath.Join(results, "long-0", "events.jsonl")
			deadline := time.Now().Add(60 * time.Second)
			for {
				if b, _ := os.ReadFile(trace); bytes.Contains(b, []byte(`"type":"result"`)) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the first job wrote no result to %s within 60s:\n%s", trace, bp.stderr)
				}
				select {
				case <-bp.done:
					t.Fatalf("spotter batch exited before its first job had a result:\n%s", bp.stderr)
				case <-time.After(50 * time.Millisecond):
				}
			}
			stop(bp)
		}
		grace := time.Duration(*job.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
		return int32(bp.exitCode(t, 2*time.Minute+grace)), p
	}

	t.Run("passes", func(t *testing.T) {
		code, p := run(t, 1, jobsFile, nil)
		if action := policyAction(job, c.Name, code); code != 0 {
			t.Fatalf("shard 1 of the sample jobs: exit %d (podFailurePolicy: %s), want 0", code, action)
		}
		results, _ := p.localPath("/results")
		for _, f := range []string{"wait-1/result.json", "wait-5/result.json", "summary.1-of-4.json", "junit.1-of-4.xml"} {
			if _, err := os.Stat(filepath.Join(results, f)); err != nil {
				t.Errorf("shard 1 wrote no %s on the results claim: %v", f, err)
			}
		}
	})
	t.Run("bad jobs file", func(t *testing.T) {
		code, _ := run(t, 0, []byte("{not json\n"), nil)
		if got := policyAction(job, c.Name, code); code != 2 || got != batchv1.PodFailurePolicyActionFailIndex {
			t.Errorf("a bad jobs file: exit %d, podFailurePolicy %s; want 2, FailIndex (a retry would not fix it)", code, got)
		}
	})
	t.Run("a job fails", func(t *testing.T) {
		jobs := `{"id":"never-done","task":"Wait forever.","start_url":"about:blank","policy":{"allow":["wait"]},"max_steps":1,` +
			`"model":{"provider":"script","turns":[{"actions":[{"type":"wait","duration_ms":100}]},{"actions":[{"type":"wait","duration_ms":100}]}]}}` + "\n"
		code, _ := run(t, 0, []byte(jobs), nil)
		if got := policyAction(job, c.Name, code); code != 1 || got != batchv1.PodFailurePolicyActionFailIndex {
			t.Errorf("a failing job: exit %d, podFailurePolicy %s; want 1, FailIndex", code, got)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		var b strings.Builder
		for i := range 3 {
			var turns strings.Builder
			for j := range 30 { // different waits: the same call five times in a row would stop the run
				fmt.Fprintf(&turns, `{"actions":[{"type":"wait","duration_ms":%d}]},`, 1000+j)
			}
			fmt.Fprintf(&b, `{"id":"long-%d","task":"Wait.","start_url":"about:blank","policy":{"allow":["wait"]},"max_steps":40,`+
				`"model":{"provider":"script","turns":[%s{"say":"Done."}]}}`+"\n", i*4, turns.String())
		}
		code, p := run(t, 0, []byte(b.String()), func(bp *proc) { _ = bp.cmd.Process.Signal(syscall.SIGTERM) })
		if got := policyAction(job, c.Name, code); code != 3 || got != batchv1.PodFailurePolicyActionCount {
			t.Errorf("SIGTERM: exit %d, podFailurePolicy %s; want 3, Count (retried within backoffLimitPerIndex)", code, got)
		}
		if got := policyAction(job, c.Name, code, corev1.DisruptionTarget); got != batchv1.PodFailurePolicyActionIgnore {
			t.Errorf("SIGTERM on a drained node: exit %d, podFailurePolicy %s; want Ignore (retried, not counted)", code, got)
		}
		results, _ := p.localPath("/results")
		if _, err := os.Stat(filepath.Join(results, "summary.0-of-4.json")); err != nil {
			t.Errorf("the interrupted shard wrote no summary: %v", err)
		}
	})
}

// TestOverlayBinary starts spotter serve as each production overlay's
// rendered Deployment runs it, as TestServeBinary does the base: the
// database from the overlay's Secret (CloudNativePG's app URI, or the
// external DSN), the peer certificate cert-manager would mount (here from
// a throwaway CA, for the name spotter-peer), HTTPS probes on the named
// port; the replica becomes ready, registers at its https address, and
// drains on SIGTERM to exit 0 within the grace period.
func TestOverlayBinary(t *testing.T) {
	integration(t)
	bin := spotterBin(t)
	pg := pgtest.Start(t)
	for _, dir := range []string{"overlays/cnpg", "overlays/external"} {
		t.Run(strings.ReplaceAll(dir, "/", "_"), func(t *testing.T) {
			dsn := pgtest.NewDB(t, pg)
			objs, _ := render(t, dir)
			dep := find[appsv1.Deployment](t, objs, "Deployment", "spotter")
			c := dep.Spec.Template.Spec.Containers[0]
			const token = "deploy-test-token-0123456789abcdef"
			p := pod{
				secrets: map[string]map[string]string{
					"spotter-postgres": {"dsn": dsn},
					// CloudNativePG's app Secret holds a postgresql:// URI.
					"spotter-pg-app": {"uri": "postgresql://" + strings.TrimPrefix(dsn, "postgres://")},
					"spotter-token":  {"token": token},
				},
				fields: map[string]string{"status.podIP": "127.0.0.1", "metadata.name": "spotter-overlay-0"},
				mounts: volumes(t, c),
			}
			tlsDir, ok := p.localPath("/tls")
			if !ok {
				t.Fatalf("%s: no volume at /tls for the peer certificate", dir)
			}
			testca.New(t).WriteFiles(t, tlsDir, "spotter-peer")
			port := c.Ports[0].ContainerPort
			args, env := p.command(t, c)
			args = toLoopback(t, args, c, port)
			sp := start(t, bin, args, env)
			metrics := strings.TrimSpace(sp.line(t, "spotter: metrics at ", 60*time.Second))
			base := strings.TrimSpace(sp.line(t, "spotter: listening on ", 60*time.Second))
			if !strings.HasPrefix(base, "https://127.0.0.1:") {
				t.Fatalf("serve listens on %s, want https on loopback", base)
			}
			until(t, base, c.LivenessProbe.HTTPGet, http.StatusOK, 10*time.Second)
			body := until(t, base, c.ReadinessProbe.HTTPGet, http.StatusOK, 60*time.Second)
			t.Logf("ready: %s", body)
			if got := scrapeReady(t, metrics); got != 1 {
				t.Errorf("%s: spotter_ready = %v once /readyz answered 200, want 1", metrics, got)
			}
			st, err := store.Open(t.Context(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if reps, err := st.Replicas(t.Context()); err != nil || len(reps) != 1 || reps[0].Addr != base {
				t.Fatalf("replicas = %+v, %v, want spotter-overlay-0 at %s", reps, err, base)
			}
			grace := time.Duration(*dep.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
			if err := sp.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := sp.exitCode(t, grace); code != 0 {
				t.Errorf("exited %d after SIGTERM, want 0:\n%s", code, sp.stderr)
			}
		})
	}
}

// scrapeReady reads spotter_ready from a replica's /metrics, as
// Prometheus would (its text format, parsed).
func scrapeReady(t *testing.T, url string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	f, ok := fams["spotter_ready"]
	if !ok || len(f.GetMetric()) != 1 {
		t.Fatalf("%s: no spotter_ready", url)
	}
	return f.GetMetric()[0].GetGauge().GetValue()
}
