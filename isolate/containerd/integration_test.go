package containerd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/internal/stats"
	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/isolate/egress"
	"github.com/spotter-harness/spotter/isolate/isolatetest"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
)

var _ isolate.Sandbox = (*Sandbox)(nil)

func TestConformance(t *testing.T) {
	isolatetest.Run(t, func(t *testing.T, cfg isolate.Config) isolate.Sandbox {
		return startSandbox(t, cfg)
	})
}

// probeReport is what "probe" finds inside a sandbox.
type probeReport struct {
	UID, GID      int
	CapEff        string   // effective capabilities, hex
	NoNewPrivs    string   // from /proc/self/status
	Interfaces    []string // network interfaces
	Routes        int      // IPv4 routes
	Processes     int      // processes visible in /proc
	Hostname      string
	RootWritable  bool // could create a file in /usr
	EtcShadow     bool // /etc/shadow exists
	HomeWritable  bool
	RawDial       string // dialing the host's test server directly
	ProxyStatus   int    // GET through the proxy bridge
	ProxyRefusal  string // the refusal's reason, if any
	MemoryLimitOK bool   // the cgroup's memory limit is visible and as asked
}

// probe runs inside a sandbox: probe TARGET PROXY prints a probeReport.
func probe(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: probe HOST:PORT PROXY")
		return 2
	}
	target, proxy := args[0], args[1]
	var r probeReport
	r.UID, r.GID = os.Getuid(), os.Getgid()
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			k, v, _ := strings.Cut(line, ":")
			switch k {
			case "CapEff":
				r.CapEff = strings.TrimSpace(v)
			case "NoNewPrivs":
				r.NoNewPrivs = strings.TrimSpace(v)
			}
		}
	}
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		r.Interfaces = append(r.Interfaces, i.Name)
	}
	if b, err := os.ReadFile("/proc/net/route"); err == nil {
		r.Routes = strings.Count(strings.TrimSpace(string(b)), "\n") // lines after the header
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if e.Name()[0] >= '0' && e.Name()[0] <= '9' {
			r.Processes++
		}
	}
	r.Hostname, _ = os.Hostname()
	if f, err := os.Create("/usr/spotter-probe"); err == nil {
		f.Close()
		r.RootWritable = true
	}
	_, err := os.Stat("/etc/shadow")
	r.EtcShadow = err == nil
	if err := os.WriteFile(filepath.Join(os.Getenv("HOME"), "probe"), []byte("x"), 0o600); err == nil {
		r.HomeWritable = true
	}
	if c, err := net.DialTimeout("tcp", target, 2*time.Second); err != nil {
		r.RawDial = "failed"
	} else {
		c.Close()
		r.RawDial = "connected"
	}
	pu, _ := url.Parse("http://" + proxy)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	if resp, err := client.Get("http://" + target + "/probe"); err == nil {
		r.ProxyStatus = resp.StatusCode
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if i := strings.Index(string(body), "spotter egress: "); i >= 0 {
			r.ProxyRefusal = strings.SplitN(string(body[i:]), "<", 2)[0]
		}
	}
	for _, f := range []string{"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory.max"} {
		if b, err := os.ReadFile(f); err == nil {
			r.MemoryLimitOK = strings.TrimSpace(string(b)) == fmt.Sprint(200<<20)
		}
	}
	json.NewEncoder(os.Stdout).Encode(r)
	return 0
}

func TestIsolation(t *testing.T) {
	hostSrv := isolatetest.NewPage(t, isolatetest.Blue)
	s := startSandbox(t, isolate.Config{Name: "isolation", MemoryMiB: 200})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out, code, err := s.exec(ctx, nil, sandboxAgent, "probe", hostSrv.HostPort(), proxyAddr)
	if err != nil || code != 0 {
		t.Fatalf("exec probe = %d, %v; output:\n%s", code, err, out)
	}
	var got probeReport
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &got); err != nil {
		t.Fatalf("probe output %q: %v", out, err)
	}
	want := probeReport{
		UID: DefaultUID, GID: DefaultGID,
		CapEff:       "0000000000000000",
		NoNewPrivs:   "1",
		Interfaces:   []string{"lo"},
		Routes:       0,
		Processes:    got.Processes, // checked below
		Hostname:     sandboxHost,
		HomeWritable: true,
		RawDial:      "failed",
		ProxyStatus:  http.StatusForbidden,
		ProxyRefusal: "spotter egress: " + hostSrv.HostPort() + " is not in this session&#39;s allowlist",
		// cgroup v1 without a cgroup namespace shows the host's root
		// cgroup, so the limit is checked from the host below.
		MemoryLimitOK: got.MemoryLimitOK,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("inside the sandbox (-want +got):\n%s", diff)
	}
	// The agent's init, the agent and the probe; no browser runs yet.
	if got.Processes > 4 || got.Processes < 3 {
		t.Errorf("processes visible in the sandbox = %d, want its own few", got.Processes)
	}
	if n := hostSrv.Hits.Load(); n != 0 {
		t.Errorf("host server hit %d times from the sandbox, want 0", n)
	}
	// The limits, as the host's cgroup files show them.
	for _, c := range []struct{ file, want string }{
		{"memory/" + s.r.cfg.Namespace + "/" + s.id + "/memory.limit_in_bytes", fmt.Sprint(200 << 20)},
		{"pids/" + s.r.cfg.Namespace + "/" + s.id + "/pids.max", fmt.Sprint(isolate.DefaultPids)},
		{"cpu/" + s.r.cfg.Namespace + "/" + s.id + "/cpu.cfs_quota_us", "100000"},
	} {
		b, err := os.ReadFile("/sys/fs/cgroup/" + c.file)
		if errors.Is(err, os.ErrNotExist) {
			t.Logf("cgroup file %s not found (cgroup v2?)", c.file)
			continue
		}
		if got := strings.TrimSpace(string(b)); got != c.want {
			t.Errorf("cgroup %s = %q, %v; want %q", c.file, got, err, c.want)
		}
	}
}

func TestProxyAllowsNamedLoopbackService(t *testing.T) {
	hostSrv := isolatetest.NewPage(t, isolatetest.Blue)
	var dec isolatetest.Decisions
	s := startSandbox(t, isolate.Config{
		Name:       "loopback-app",
		Egress:     egress.Policy{Allow: []string{hostSrv.HostPort()}},
		OnDecision: dec.Record,
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out, code, err := s.exec(ctx, nil, sandboxAgent, "probe", hostSrv.HostPort(), proxyAddr)
	if err != nil || code != 0 {
		t.Fatalf("exec probe = %d, %v; output:\n%s", code, err, out)
	}
	var got probeReport
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &got); err != nil {
		t.Fatalf("probe output %q: %v", out, err)
	}
	if got.RawDial != "failed" || got.ProxyStatus != http.StatusOK {
		t.Errorf("allowed host from the sandbox: raw dial %s, through the proxy %d; want failed and 200", got.RawDial, got.ProxyStatus)
	}
	if ds := dec.For(hostSrv.HostPort()); len(ds) != 1 || !ds[0].Allowed {
		t.Errorf("decisions for %s = %+v, want one allowed", hostSrv.HostPort(), ds)
	}
}

// memoryHog allocates and touches memory until the page dies.
const memoryHog = `<!doctype html><body style="margin:0;background:#2040e0"><script>
window.hog = [];
setTimeout(() => { for (;;) { const a = new Uint8Array(256 << 20); a.fill(7); hog.push(a); } }, 0);
</script></body>`

func TestMemoryLimitKillsOnlyItsSandbox(t *testing.T) {
	hog := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, memoryHog) }))
	defer hog.Close()
	calm := isolatetest.NewPage(t, isolatetest.Blue)

	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	victim := startSandbox(t, isolate.Config{Name: "hog", MemoryMiB: 400, Egress: egress.Policy{Allow: []string{hog.Listener.Addr().String()}}})
	bystander := startSandbox(t, isolate.Config{Name: "bystander", MemoryMiB: 400, Egress: egress.Policy{Allow: []string{calm.HostPort()}}})
	dv, err := isolate.Open(ctx, victim, cdp.Config{Viewport: screen.Size{W: 640, H: 400}, CommandTimeout: 3 * time.Second, SettleTimeout: time.Second})
	if err != nil {
		t.Fatalf("Open(victim) = %v", err)
	}
	defer dv.Close(context.Background())
	db, err := isolate.Open(ctx, bystander, cdp.Config{Viewport: screen.Size{W: 640, H: 400}})
	if err != nil {
		t.Fatalf("Open(bystander) = %v", err)
	}
	defer db.Close(context.Background())

	// Load the hog and keep using the display until it fails. A page busy
	// allocating may not answer for a while before the kernel kills it.
	t0 := time.Now()
	_, err = isolatetest.Visit(ctx, dv, hog.URL, false)
	for i := 0; (err == nil || errors.Is(err, cdp.ErrUnresponsive)) && i < 60; i++ {
		_, err = dv.Capture(ctx, screen.CaptureOptions{Size: screen.Size{W: 64, H: 40}})
	}
	if !errors.Is(err, screen.ErrGone) || !errors.Is(err, isolate.ErrOOM) || !strings.Contains(err.Error(), "out of memory (limit 400 MiB)") {
		t.Errorf("display of a sandbox past its memory limit: error %v, want ErrGone and ErrOOM saying out of memory (limit 400 MiB)", err)
	}
	t.Logf("the display failed %v after loading the page", time.Since(t0).Round(time.Millisecond))
	if herr := victim.Health(ctx); !errors.Is(herr, isolate.ErrOOM) || !errors.Is(herr, isolate.ErrDead) {
		t.Errorf("Health() of the killed sandbox = %v, want ErrOOM and ErrDead", herr)
	}
	if _, berr := victim.Browser(ctx, cdp.Config{}); !errors.Is(berr, isolate.ErrOOM) {
		t.Errorf("Browser() of the killed sandbox = %v, want ErrOOM", berr)
	}

	// The other sandbox carries on.
	if err := bystander.Health(ctx); err != nil {
		t.Errorf("Health() of the other sandbox = %v, want nil", err)
	}
	if got, err := isolatetest.Visit(ctx, db, calm.URL, true); err != nil || !isolatetest.Near(got, isolatetest.Green) {
		t.Errorf("the other sandbox after the OOM: Visit = %v, %v; want green", got, err)
	}

	// The session restarts its sandbox.
	t0 = time.Now()
	defer func() { t.Logf("restart and visit took %v", time.Since(t0).Round(time.Millisecond)) }()
	again := startSandbox(t, isolate.Config{Name: "hog-restarted", MemoryMiB: 400, Egress: egress.Policy{Allow: []string{calm.HostPort()}}})
	da, err := isolate.Open(ctx, again, cdp.Config{Viewport: screen.Size{W: 640, H: 400}})
	if err != nil {
		t.Fatalf("Open(restarted) = %v", err)
	}
	defer da.Close(context.Background())
	t.Logf("restart: open took %v", time.Since(t0).Round(time.Millisecond))
	if got, err := isolatetest.Visit(ctx, da, calm.URL, true); err != nil || !isolatetest.Near(got, isolatetest.Green) {
		t.Errorf("restarted sandbox: Visit = %v, %v; want green", got, err)
	}
}

// Eight sandboxed sessions at once: internal/runner's TestEightSandboxedRuns
// runs eight tasks through the whole loop. Two such tests in packages that
// go test runs in parallel would start sixteen sandboxes on two cores.

// The regular headless Chromium (Screencast mode) works in a sandbox too.
func TestScreencastMode(t *testing.T) {
	page := isolatetest.NewPage(t, isolatetest.Blue)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := session(ctx, runtimeFor(t), "screencast", page, cdp.Screencast); err != nil {
		t.Error(err)
	}
}

// session starts a sandbox, navigates, clicks and captures, and closes it.
func session(ctx context.Context, r *Runtime, name string, page *isolatetest.Page, mode cdp.Mode) (err error) {
	s, err := r.Start(ctx, isolate.Config{Name: name, MemoryMiB: 768, Egress: egress.Policy{Allow: []string{page.HostPort()}}, Logger: testLogger()})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close(context.Background())) }()
	// Eight browsers on two cores answer slowly: allow for it.
	d, err := isolate.Open(ctx, s, cdp.Config{Mode: mode, Viewport: screen.Size{W: 640, H: 400}, CommandTimeout: time.Minute, Logger: testLogger()})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, d.Close(context.Background())) }()
	got, err := isolatetest.Visit(ctx, d, page.URL+"/"+name, true)
	if err != nil {
		return err
	}
	if !isolatetest.Near(got, isolatetest.Green) {
		return fmt.Errorf("after the click the middle pixel is %v, want green", got)
	}
	return nil
}

func TestCleanupRemovesLeftovers(t *testing.T) {
	r := runtimeFor(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// A sandbox whose owner is gone (a pid that cannot run), one of this
	// process, both without a task; one of a dead owner made unnamed by an
	// earlier version (containerd dropped its empty name label); and a
	// state directory alone.
	dead, live, unnamed := idPrefix+"deadbeefdeadbeef", idPrefix+"a1a1a1a1a1a1a1a1", idPrefix+"0badbadbadbadbad"
	for _, c := range []struct{ id, owner, name string }{{dead, "999999999:1", "leftover"}, {live, r.owner, "leftover"},
		{unnamed, "999999999:1", ""}} {
		if err := os.MkdirAll(filepath.Join(r.cfg.StateDir, c.id, rootfsDirName), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(r.cfg.StateDir, c.id, ownerFileName), []byte(c.owner), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := r.c.NewContainer(withNS(ctx, r), c.id,
			newSpec(filepath.Join(r.cfg.StateDir, c.id)),
			labelsOpt(map[string]string{labelSandbox: c.name, labelOwner: c.owner}),
		)
		if err != nil {
			t.Fatalf("create container %s: %v", c.id, err)
		}
	}
	orphanDir := filepath.Join(r.cfg.StateDir, idPrefix+"0000000000000000")
	if err := os.MkdirAll(orphanDir, 0o700); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if c, err := r.c.LoadContainer(withNS(context.Background(), r), live); err == nil {
			deleteContainer(withNS(context.Background(), r), c)
		}
		os.RemoveAll(filepath.Join(r.cfg.StateDir, live))
	}()

	if err := r.cleanup(withNS(ctx, r)); err != nil {
		t.Fatalf("cleanup() = %v", err)
	}
	cs, err := r.c.Containers(withNS(ctx, r))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID())
	}
	if slices.Contains(ids, dead) || slices.Contains(ids, unnamed) || !slices.Contains(ids, live) {
		t.Errorf("containers after cleanup = %v, want %s and %s gone and %s kept", ids, dead, unnamed, live)
	}
	for _, c := range []struct {
		dir  string
		want bool
	}{{filepath.Join(r.cfg.StateDir, dead), false}, {filepath.Join(r.cfg.StateDir, unnamed), false},
		{filepath.Join(r.cfg.StateDir, live), true}, {orphanDir, false}} {
		if _, err := os.Stat(c.dir); (err == nil) != c.want {
			t.Errorf("state directory %s exists = %v after cleanup, want %v", c.dir, err == nil, c.want)
		}
	}
}

// A Spotter process killed with its sandbox running leaves a container, a
// task, a state directory and cgroups behind; the next runtime removes them.
func TestCleanupAfterCrash(t *testing.T) {
	r := runtimeFor(t)
	cmd := exec.Command(os.Args[0], "orphan")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	id, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("orphan process: %v", err)
	}
	id = strings.TrimSpace(id)
	cmd.Process.Kill()
	cmd.Wait()

	ctx, cancel := context.WithTimeout(withNS(t.Context(), r), 30*time.Second)
	defer cancel()
	c, err := r.c.LoadContainer(ctx, id)
	if err != nil {
		t.Fatalf("the crashed process's container %s: %v", id, err)
	}
	if task, err := c.Task(ctx, nil); err != nil {
		t.Fatalf("the crashed process's task: %v", err)
	} else if st, _ := task.Status(ctx); st.Status != client.Running {
		t.Fatalf("the crashed process's task is %s, want running", st.Status)
	}
	cgroup := "/sys/fs/cgroup/memory/" + r.cfg.Namespace + "/" + id
	_, cgErr := os.Stat(cgroup)

	if err := r.cleanup(ctx); err != nil {
		t.Fatalf("cleanup() = %v", err)
	}
	if _, err := r.c.LoadContainer(ctx, id); !errdefs.IsNotFound(err) {
		t.Errorf("container %s after cleanup: %v, want not found", id, err)
	}
	if _, err := os.Stat(filepath.Join(r.cfg.StateDir, id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state directory of %s after cleanup: %v, want it gone", id, err)
	}
	if cgErr == nil {
		if _, err := os.Stat(cgroup); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s after cleanup: %v, want it gone", cgroup, err)
		}
	}
}

// BenchmarkStart measures a sandbox's start, from create to the first
// screenshot, and reports the median (p50-ms) and its parts: the container
// up to its agent answering (container-p50-ms), the browser's start and
// first tab (browser-p50-ms) and the first screenshot (shot-p50-ms).
func BenchmarkStart(b *testing.B) {
	page := isolatetest.NewPage(b, isolatetest.Blue)
	r := runtimeFor(b)
	var total, ctr, brw, shot []time.Duration
	for b.Loop() {
		t0 := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		s, err := r.Start(ctx, isolate.Config{Name: "bench", Egress: egress.Policy{Allow: []string{page.HostPort()}}, Logger: testLogger()})
		if err != nil {
			cancel()
			b.Fatalf("Start() = %v", err)
		}
		t1 := time.Now()
		d, err := isolate.Open(ctx, s, cdp.Config{Viewport: screen.Size{W: 1280, H: 800}, Logger: testLogger()})
		t2 := time.Now()
		if err == nil {
			_, err = d.Capture(ctx, screen.CaptureOptions{})
		}
		t3 := time.Now()
		total, ctr, brw, shot = append(total, t3.Sub(t0)), append(ctr, t1.Sub(t0)), append(brw, t2.Sub(t1)), append(shot, t3.Sub(t2))
		if d != nil {
			d.Close(context.Background())
		}
		s.Close(context.Background())
		cancel()
		if err != nil {
			b.Fatalf("first screenshot: %v", err)
		}
	}
	p50 := func(ds []time.Duration) float64 { return stats.Millis(stats.Percentile(ds, 50)) }
	b.ReportMetric(p50(total), "p50-ms")
	b.ReportMetric(p50(ctr), "container-p50-ms")
	b.ReportMetric(p50(brw), "browser-p50-ms")
	b.ReportMetric(p50(shot), "shot-p50-ms")
	b.ReportMetric(0, "ns/op")
}

func withNS(ctx context.Context, r *Runtime) context.Context {
	return namespaces.WithNamespace(ctx, r.cfg.Namespace)
}

// newSpec is a container spec that needs no image, for containers that
// never run.
func newSpec(dir string) client.NewContainerOpts {
	return client.WithNewSpec(oci.WithRootFSPath(filepath.Join(dir, rootfsDirName)), oci.WithProcessArgs("/bin/true"))
}

var labelsOpt = client.WithContainerLabels

// A browser that exits at once: Browser says the connection closed, and the
// sandbox itself stays healthy.
func TestBrowserThatExits(t *testing.T) {
	s := startSandbox(t, isolate.Config{Name: "version", Flags: []string{"--version"}})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	b, err := s.Browser(ctx, cdp.Config{})
	if err == nil {
		b.Close(ctx)
	}
	if want := "the connection closed before the browser answered"; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "Chromium 1") {
		t.Errorf("Browser() with a browser that exits = %v, want an error containing %q and the agent's log", err, want)
	}
	if err := s.Health(ctx); err != nil {
		t.Errorf("Health() after a browser exited = %v, want nil", err)
	}
}

// A sandbox that swaps its agent's socket for a link to a host socket (here
// containerd's own) gets nothing: the host checks who serves the socket
// before it says a word.
func TestSwappedSocketIsRefused(t *testing.T) {
	r := runtimeFor(t)
	s := startSandbox(t, isolate.Config{Name: "swap"})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	sock := sandboxRun + "/" + agentSocket
	out, code, err := s.exec(ctx, nil, "/bin/sh", "-c", "rm "+sock+" && ln -s "+r.cfg.Socket+" "+sock)
	if err != nil || code != 0 {
		t.Fatalf("swap the socket: %d, %v: %s", code, err, out)
	}
	want := "socket is not served by the sandbox's agent (it runs as uid 0, not 10001)"
	if err := s.Health(ctx); !errors.Is(err, isolate.ErrDead) || !strings.Contains(err.Error(), want) {
		t.Errorf("Health() with a swapped socket = %v, want ErrDead containing %q", err, want)
	}
	if b, err := s.Browser(ctx, cdp.Config{}); err == nil || !strings.Contains(err.Error(), want) {
		if b != nil {
			b.Close(ctx)
		}
		t.Errorf("Browser() with a swapped socket = %v, want an error containing %q", err, want)
	}
}

// A runtime closed while a sandbox starts (a server shutting down as a
// session opens) leaves nothing behind, whatever the start had made: the
// close cancels the start, waits for it, and removes its container, task
// and state directory. Each case closes at a later stage of the start.
func TestCloseWhileStarting(t *testing.T) {
	isolatetest.Integration(t)
	stages := []struct {
		name    string
		reached func(ctx context.Context, r *Runtime) bool
	}{
		{"registered", func(ctx context.Context, r *Runtime) bool { return true }},
		{"container", func(ctx context.Context, r *Runtime) bool {
			cs, err := r.c.Containers(ctx)
			return err == nil && len(cs) > 0
		}},
		{"task", func(ctx context.Context, r *Runtime) bool {
			cs, err := r.c.Containers(ctx)
			if err != nil || len(cs) == 0 {
				return false
			}
			_, err = cs[0].Task(ctx, nil)
			return err == nil
		}},
	}
	for _, st := range stages {
		t.Run(st.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			ns := "spotter-close-test"
			dir, err := os.MkdirTemp("", "sbx") // short: unix socket paths live under it
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			r, err := New(ctx, Config{Socket: isolatetest.Socket(t), Namespace: ns, StateDir: dir,
				Agent: os.Args[0], AgentArgs: []string{"agent"}, Logger: testLogger()})
			if err != nil {
				t.Fatalf("New() = %v", err)
			}
			started := make(chan error, 1)
			go func() {
				s, err := r.Start(ctx, isolate.Config{Name: "closing", Logger: testLogger()})
				if err == nil {
					err = s.Close(ctx) // it started before the close
				}
				started <- err
			}()
			nctx := withNS(ctx, r)
			for {
				r.mu.Lock()
				n := len(r.sandboxes)
				r.mu.Unlock()
				if n > 0 && st.reached(nctx, r) {
					break
				}
				select {
				case err := <-started:
					t.Fatalf("Start ended (%v) before the stage was seen", err)
				case <-ctx.Done():
					t.Fatal("the start never reached the stage")
				case <-time.After(2 * time.Millisecond): // poll the daemon
				}
			}
			if err := r.Close(ctx); err != nil {
				t.Errorf("Close() = %v", err)
			}
			t.Logf("Start after Close: %v", <-started)
			c, err := client.New(isolatetest.Socket(t), client.WithDefaultNamespace(ns))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			cs, err := c.Containers(namespaces.WithNamespace(ctx, ns))
			if err != nil {
				t.Fatal(err)
			}
			for _, left := range cs {
				t.Errorf("container %s left behind", left.ID())
				deleteContainer(namespaces.WithNamespace(context.Background(), ns), left)
			}
			if dirs, _ := os.ReadDir(r.cfg.StateDir); len(dirs) > 0 {
				t.Errorf("state directories left behind: %v", dirs)
			}
		})
	}
}

// An unnamed sandbox is named by its id, in its labels too: containerd
// drops a label with an empty value, and cleanup must find every sandbox.
func TestUnnamedSandboxIsNamed(t *testing.T) {
	s := startSandbox(t, isolate.Config{})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := s.r.c.LoadContainer(withNS(ctx, s.r), s.id)
	if err != nil {
		t.Fatal(err)
	}
	labels, err := c.Labels(withNS(ctx, s.r))
	if err != nil {
		t.Fatal(err)
	}
	if labels[labelSandbox] != s.id || labels[labelOwner] != s.r.owner {
		t.Errorf("labels of an unnamed sandbox = %v, want %s=%s and %s=%s", labels, labelSandbox, s.id, labelOwner, s.r.owner)
	}
}
