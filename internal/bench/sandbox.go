package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spotter-harness/spotter/internal/wiring"
	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/isolate/containerd"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
)

// sandboxes opens sandboxed displays through containerd, as every entry
// point does (wiring.OpenDisplay). Their state directories are the
// benchmark's own, so that their memory is told apart from other
// processes' sandboxes in the same containerd namespace.
type sandboxes struct {
	sbx *wiring.Sandboxes
	dir string
}

// benchStateDir holds the state directories of this process's sandboxes
// of one kind (cold, warm).
func benchStateDir(kind string) string {
	return filepath.Join(filepath.Dir(containerd.DefaultStateDir), "bench", strconv.Itoa(os.Getpid()), kind)
}

// sandboxes connects to containerd, with a warm pool of warm sandboxes.
func (r *runner) sandboxes(ctx context.Context, warm int) (*sandboxes, error) {
	if r.o.Containerd == "" {
		return nil, errors.New("no containerd socket given (--containerd)")
	}
	if _, err := os.Stat(r.o.Containerd); err != nil {
		return nil, fmt.Errorf("containerd: %w", err)
	}
	dir := benchStateDir("cold")
	if warm > 0 {
		dir = benchStateDir("warm")
	}
	sbx, err := wiring.NewSandboxes(ctx, wiring.SandboxConfig{Backend: isolate.Containerd, Warm: warm, Logger: r.o.Logger,
		Containerd: containerd.Config{Socket: r.o.Containerd, Agent: r.o.Agent, StateDir: dir}})
	if err != nil {
		return nil, err
	}
	return &sandboxes{sbx: sbx, dir: dir}, nil
}

// open opens a display in a sandbox (a warm one if the pool has one) that
// may reach the benchmark's site, at url ("" for a blank page).
func (s *sandboxes) open(ctx context.Context, st *site, url string) (display, error) {
	// Named, so that a sandbox the bench leaves behind says whose it is.
	return wiring.OpenDisplay(ctx, wiring.DisplayRequest{Sandboxes: s.sbx, StartURL: url,
		Egress: wiring.EgressFor(nil, st.url(pageStatic)), Sandbox: isolate.Config{Name: "bench"}})
}

// ids returns the containers of these sandboxes now.
func (s *sandboxes) ids() []string {
	entries, _ := os.ReadDir(s.dir)
	var ids []string
	for _, e := range entries {
		if e.IsDir() {
			ids = append(ids, e.Name())
		}
	}
	return ids
}

// memory returns the memory charged to these sandboxes: the sum of their
// cgroups' memory.current (cgroup v2) or memory.usage_in_bytes (v1), which
// counts their tmpfs files and page cache too.
func (s *sandboxes) memory() (int64, error) {
	var total int64
	for _, id := range s.ids() {
		v, err := cgroupValue(id, "memory.current", "memory.usage_in_bytes")
		if err != nil {
			continue // a sandbox that just ended
		}
		total += v
	}
	return total, nil
}

// cgroupFile returns the path of a file of sandbox id's cgroup: v2's name,
// else v1's.
func cgroupFile(id, v2, v1 string) string {
	p := filepath.Join("/sys/fs/cgroup", containerd.DefaultNamespace, id, v2)
	if _, err := os.Stat(p); err == nil || v1 == "" {
		return p
	}
	return filepath.Join("/sys/fs/cgroup/memory", containerd.DefaultNamespace, id, v1)
}

func cgroupValue(id, v2, v1 string) (int64, error) {
	b, err := os.ReadFile(cgroupFile(id, v2, v1))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

func (s *sandboxes) Close() {
	s.sbx.Close(context.Background())
	os.Remove(s.dir)
	os.Remove(filepath.Dir(s.dir)) // once the other kind's is gone too
}

// sandbox measures sandbox create to first screenshot, against launching a
// browser on the host to first screenshot.
func (r *runner) sandbox(ctx context.Context) error {
	sb, err := r.sandboxes(ctx, 0)
	if err != nil {
		r.report(Figure{Section: "sandbox", Name: "sandbox start", Note: "not measured: " + err.Error()})
		return nil
	}
	defer sb.Close()
	rounds := max(r.o.Rounds/3, 3)
	var inSandbox, onHost []time.Duration
	o := screen.CaptureOptions{Size: modelSize, Format: screen.PNG}
	for range rounds {
		start := time.Now()
		d, err := sb.open(ctx, r.site, "")
		if err != nil {
			return err
		}
		_, err = d.Capture(ctx, o)
		inSandbox = append(inSandbox, time.Since(start))
		d.Close(context.WithoutCancel(ctx))
		if err != nil {
			return err
		}
		start = time.Now()
		hd, err := cdp.Open(ctx, cdp.Config{Exec: r.o.Headless, Viewport: modelSize})
		if err != nil {
			return err
		}
		_, err = hd.Capture(ctx, o)
		onHost = append(onHost, time.Since(start))
		hd.Close(context.WithoutCancel(ctx))
		if err != nil {
			return err
		}
	}
	host := latency("sandbox", "browser on the host: launch to first screenshot", onHost)
	f := latency("sandbox", "containerd sandbox: create to first screenshot", inSandbox)
	f.target("p50 < 3 s", f.P50 < 3000)
	f.Note = "ratio < 1: the sandbox costs more than a bare launch"
	f.against(host)
	r.report(f)
	r.report(host)
	return nil
}
