package runner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/internal/stats"
	"github.com/spotter-harness/spotter/internal/wiring"
	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/isolate/containerd"
	"github.com/spotter-harness/spotter/isolate/egress"
	"github.com/spotter-harness/spotter/isolate/isolatetest"
	"github.com/spotter-harness/spotter/screen"
)

// notes returns the texts of the trace's note events.
func notes(t *testing.T, dir string) []string {
	t.Helper()
	evs, err := trace.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		if e.Type == trace.TypeNote {
			out = append(out, e.Text)
		}
	}
	return out
}

func hasNote(ns []string, sub string) bool {
	return slices.ContainsFunc(ns, func(n string) bool { return strings.Contains(n, sub) })
}

// TestSandboxedDemoTask runs the scripted demo task in a sandbox of each
// backend: the demo app runs on the host, and the sandboxed browser reaches
// it only because the egress allowlist names its address.
func TestSandboxedDemoTask(t *testing.T) {
	for _, backend := range []isolate.Backend{isolate.Containerd, isolate.Local} {
		t.Run(string(backend), func(t *testing.T) {
			sbx := sandboxesFor(t, backend)
			task, err := Load("../../examples/demo.yaml")
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "run")
			res, err := Run(t.Context(), task, Options{Out: out, Sandboxes: sbx, Logger: isolatetest.Logger()})
			if err != nil {
				t.Fatalf("Run() = %v", err)
			}
			if !res.OK || res.Demo == nil || len(res.Demo.Missing) != 0 {
				t.Errorf("outcome = %+v, demo %+v; want every stage done", res.Outcome, res.Demo)
			}
			s := res.Sandbox
			if s == nil || s.Backend != backend || s.Allowed == 0 || s.Refused != 0 || len(s.Egress.Allow) != 1 {
				t.Fatalf("sandbox state = %+v, want %s with allowed requests, none refused, an allowlist of the demo app once (the policy's host is the start URL's)", s, backend)
			}
			if !strings.HasPrefix(s.Egress.Allow[0], "127.0.0.1:") {
				t.Errorf("egress allowlist = %v, want the demo app's loopback address", s.Egress.Allow)
			}
			if ns := notes(t, out); !hasNote(ns, "egress allowed: GET 127.0.0.1:") {
				t.Errorf("trace notes = %q, want the egress decisions", ns)
			}
			t.Logf("sandbox start to first screenshot: %v", s.FirstShot.Round(time.Millisecond))
		})
	}
}

// TestSandboxedEgressRefusal: a task whose policy says "*" may navigate
// anywhere, but the egress proxy lets "*" reach no internal address; so a
// second server on the host's loopback, not named, gets no request, and
// the refusal is in the trace and the result.
func TestSandboxedEgressRefusal(t *testing.T) {
	sbx := sandboxesFor(t, isolate.Containerd)
	start := isolatetest.NewPage(t, isolatetest.Blue)
	other := isolatetest.NewPage(t, isolatetest.Red)
	task := visitOther(t, "refused", "", start.URL, other.URL)
	out := filepath.Join(t.TempDir(), "run")
	res, err := Run(t.Context(), task, Options{Out: out, Sandboxes: sbx, Logger: isolatetest.Logger()})
	if err != nil {
		t.Fatalf("Run() = %v", err)
	}
	if n := other.Hits.Load(); n != 0 {
		t.Errorf("the server not allowed got %d requests", n)
	}
	if start.Hits.Load() == 0 {
		t.Errorf("the start page, allowed as the start URL's host, got no request")
	}
	if res.Sandbox == nil || res.Sandbox.Refused == 0 {
		t.Errorf("sandbox state = %+v, want refused requests", res.Sandbox)
	}
	if ns := notes(t, out); !hasNote(ns, "egress refused: GET "+other.HostPort()) || !hasNote(ns, "internal address") {
		t.Errorf("trace notes = %q, want the refusal of %s and why", ns, other.HostPort())
	}
}

// memoryHog allocates and touches memory until the page dies.
const memoryHog = `<!doctype html><body style="margin:0;background:#e02020"><script>
window.hog = [];
setTimeout(() => { for (;;) { const a = new Uint8Array(64 << 20); a.fill(7); hog.push(a); } }, 200);
</script></body>`

// TestSandboxRestartAfterOOM: a page that allocates past the memory limit
// kills its own sandbox, not another session's; the session reports it to
// the model and in the trace, starts a fresh sandbox, and the run goes on.
func TestSandboxRestartAfterOOM(t *testing.T) {
	sbx := sandboxesFor(t, isolate.Containerd)
	calm := isolatetest.NewPage(t, isolatetest.Blue)
	hog := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, memoryHog) }))
	defer hog.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	bystander, err := wiring.OpenDisplay(ctx, wiring.DisplayRequest{Display: wiring.DisplaySpec{Width: 320, Height: 200}, StartURL: calm.URL,
		Sandboxes: sbx, Egress: egress.Policy{Allow: []string{calm.HostPort()}}, MaxRestarts: -1, Logger: isolatetest.Logger()})
	if err != nil {
		t.Fatalf("OpenDisplay(bystander) = %v", err)
	}
	defer bystander.Close(context.Background())

	task, err := Parse(fmt.Appendf(nil, `
name: hog
task: Open the page that eats memory.
start_url: %s/
display: {width: 640, height: 400}
policy: {allow: [navigate, wait], hosts: ["%s"]}
max_steps: 8
model:
  provider: script
  strict: false
  turns:
    - actions: [{type: navigate, url: "%s/"}]
    - actions: [{type: wait, duration_ms: 1500}]
    - actions: [{type: wait, duration_ms: 1500}]
    - actions: [{type: wait, duration_ms: 1500}]
    - say: Done.
`, calm.URL, hog.Listener.Addr(), hog.URL))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "run")
	res, err := Run(ctx, task, Options{Out: out, Sandboxes: sbx, MemoryMiB: 400, Logger: isolatetest.Logger()})
	if err != nil {
		t.Fatalf("Run() = %v", err)
	}
	if res.Sandbox == nil || len(res.Sandbox.Restarts) == 0 || !strings.Contains(res.Sandbox.Restarts[0], "out of memory (limit 400 MiB)") {
		t.Fatalf("sandbox state = %+v, want a restart after running out of memory (limit 400 MiB)", res.Sandbox)
	}
	t.Logf("outcome %s after %d calls; restarts: %q", res.Outcome.Stop, res.Outcome.Calls, res.Sandbox.Restarts)
	// The model was told: in a result's error or notes.
	evs, err := trace.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	told := false
	for _, e := range evs {
		if e.Type == trace.TypeResult && (strings.Contains(e.Error, "out of memory") || hasNote(e.Notes, "out of memory")) {
			told = true
		}
	}
	if !told {
		t.Errorf("no result told the model that its sandbox ran out of memory")
	}
	if ns := notes(t, out); !hasNote(ns, "started anew") {
		t.Errorf("trace notes = %q, want the restart", ns)
	}
	// The other session's sandbox carries on.
	if _, err := bystander.Capture(ctx, screen.CaptureOptions{}); err != nil {
		t.Errorf("the other session after the OOM: Capture = %v", err)
	}
	if r := bystander.Restarts(); len(r) != 0 {
		t.Errorf("the other session restarted: %q", r)
	}
}

// TestEightSandboxedRuns runs eight short tasks at once, each in a
// containerd sandbox of its own, on this machine's two cores.
func TestEightSandboxedRuns(t *testing.T) {
	const n = 8
	sbx := sandboxesFor(t, isolate.Containerd)
	page := isolatetest.NewPage(t, isolatetest.Blue)
	task, err := Parse(fmt.Appendf(nil, `
task: Click the box.
start_url: %s/
display: {width: 640, height: 400}
policy: {allow: [click]}
max_steps: 3
model:
  provider: script
  turns:
    - actions: [{type: click, x: 320, y: 200}]
    - say: Done.
`, page.URL))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	t0 := time.Now()
	var wg sync.WaitGroup
	results := make([]Result, n)
	errs := make([]error, n)
	took := make([]time.Duration, n)
	for i := range n {
		wg.Go(func() {
			task := task
			task.Name = fmt.Sprintf("eight-%d", i)
			start := time.Now()
			results[i], errs[i] = Run(ctx, task, Options{Out: filepath.Join(t.TempDir(), task.Name), Sandboxes: sbx, Logger: isolatetest.Logger()})
			took[i] = time.Since(start)
		})
	}
	wg.Wait()
	var firsts []time.Duration
	for i, r := range results {
		switch {
		case errs[i] != nil:
			t.Errorf("run %d: %v", i, errs[i])
		case !r.OK || r.Outcome.Failed != 0:
			t.Errorf("run %d: outcome %+v", i, r.Outcome)
		default:
			firsts = append(firsts, r.Sandbox.FirstShot)
		}
	}
	if page.Hits.Load() < n {
		t.Errorf("the page was loaded %d times, want at least %d", page.Hits.Load(), n)
	}
	slices.Sort(took)
	slices.Sort(firsts)
	if len(firsts) > 0 {
		t.Logf("%d sandboxed runs at once: %v in all; each %v to %v; sandbox start to first screenshot p50 %v (max %v)",
			n, time.Since(t0).Round(time.Millisecond), took[0].Round(time.Millisecond), took[n-1].Round(time.Millisecond),
			stats.Percentile(firsts, 50).Round(time.Millisecond), firsts[len(firsts)-1].Round(time.Millisecond))
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("eight sandboxed runs took longer than 90 s")
	}
}

// TestPlaywrightUnderAutoIsolation: a launched Playwright browser cannot
// run in a containerd sandbox. When --isolate auto chose containerd, it
// runs on the host behind an egress proxy with the task's allowlist, and
// the trace says so; the proxy still keeps it from a server it does not
// name. When containerd was asked for by name, the task is refused, in
// words.
func TestPlaywrightUnderAutoIsolation(t *testing.T) {
	isolatetest.Integration(t)
	start := isolatetest.NewPage(t, isolatetest.Blue)
	other := isolatetest.NewPage(t, isolatetest.Red)
	task := visitOther(t, "playwright-auto", "backend: playwright, ", start.URL, other.URL)

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	auto, err := wiring.NewSandboxes(ctx, wiring.SandboxConfig{Backend: isolate.Containerd, Auto: true, Logger: isolatetest.Logger(),
		Containerd: containerd.Config{Socket: isolatetest.Socket(t), Agent: os.Args[0], AgentArgs: []string{"agent"}}})
	cancel()
	if err != nil {
		t.Fatalf("NewSandboxes(containerd, auto) = %v", err)
	}
	defer auto.Close(context.Background())
	out := filepath.Join(t.TempDir(), "run")
	res, err := Run(t.Context(), task, Options{Out: out, Sandboxes: auto, Logger: isolatetest.Logger()})
	if err != nil {
		t.Fatalf("Run(playwright, auto isolation) = %v", err)
	}
	if res.Sandbox == nil || res.Sandbox.Backend != isolate.Local || res.Sandbox.Refused == 0 {
		t.Errorf("sandbox state = %+v, want the host's proxy (local) with the refused request", res.Sandbox)
	}
	if start.Hits.Load() == 0 || other.Hits.Load() != 0 {
		t.Errorf("the start page got %d requests and the server not allowed %d; want some and none", start.Hits.Load(), other.Hits.Load())
	}
	if ns := notes(t, out); !hasNote(ns, "launches its browser on this host, behind an egress proxy") {
		t.Errorf("trace notes = %q, want the note that the browser runs on the host", ns)
	}

	_, err = Run(t.Context(), task, Options{Out: filepath.Join(t.TempDir(), "named"), Sandboxes: sandboxesFor(t, isolate.Containerd), Logger: isolatetest.Logger()})
	if !errors.Is(err, wiring.ErrSpec) || !strings.Contains(err.Error(), "not in a containerd sandbox") {
		t.Errorf("Run(playwright, --isolate containerd) = %v, want it refused in words", err)
	}
}

// visitOther is a task named name that starts at start and navigates to
// other, on a 640x400 display with more display settings (a YAML flow
// map's members, each followed by ", ").
func visitOther(t *testing.T, name, display, start, other string) Task {
	t.Helper()
	task, err := Parse(fmt.Appendf(nil, `
name: %s
task: Visit the other server.
start_url: %s/
display: {%swidth: 640, height: 400}
policy: {allow: [navigate, wait], hosts: ["*"]}
model:
  provider: script
  strict: false
  turns:
    - actions: [{type: navigate, url: "%s/"}]
    - say: Done.
`, name, start, display, other))
	if err != nil {
		t.Fatal(err)
	}
	return task
}
