package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/internal/wiring"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
)

// startFloor names the starter that readies a browser of its own on a
// blank page before the round: what a warm start costs at least.
const startFloor = "a browser of its own, readied on a blank page"

// memorySessions is how many sessions of each set-up are held open at once
// to measure the memory of one: four, or the rounds (at least two) in a
// shorter run.
func (r *runner) memorySessions() int { return min(4, max(r.o.Rounds, 2)) }

// A starter opens one session of a set-up of the start section, at url.
type starter struct {
	name string
	// launch says which baseline it is compared with: Playwright
	// launching a browser, or a new context of a running one.
	launch bool
	open   func(ctx context.Context, url string) (display, error)
	// before, if set, runs before each round, untimed (the warm pool
	// refills, a browser is readied on a blank page). A starter with a
	// before is not opened again for the memory figures.
	before func(ctx context.Context) error
}

// blankTab is the warm start's floor: a browser of its own started before
// the round and left on a blank page that has drawn its first frame, as a
// warm sandbox's browser waits, with no sandbox around it. What it takes
// (the navigation, the site's new renderer and its first frame, the
// screenshot) a warm sandbox takes too.
type blankTab struct {
	browser string
	ready   display
}

// prepare starts the browser and draws its blank page's first frame.
func (b *blankTab) prepare(ctx context.Context) error {
	if b.ready != nil {
		return nil
	}
	d, err := wiring.OpenDisplay(ctx, wiring.DisplayRequest{Browser: b.browser})
	if err != nil {
		return err
	}
	if _, err := d.Capture(ctx, screen.CaptureOptions{Size: modelSize, Format: screen.PNG}); err != nil {
		d.Close(context.WithoutCancel(ctx))
		return err
	}
	b.ready = d
	return nil
}

// open navigates the readied browser to url.
func (b *blankTab) open(ctx context.Context, url string) (display, error) {
	d := b.ready
	if d == nil {
		return nil, errors.New("no browser readied for this round")
	}
	b.ready = nil
	if err := d.Perform(ctx, screen.Mapped{Action: actions.Action{Kind: actions.Navigate, URL: url}}); err != nil {
		d.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return d, nil
}

func (b *blankTab) close(ctx context.Context) {
	if b.ready != nil {
		b.ready.Close(ctx)
	}
}

// start measures create to first screenshot: the time from asking for a
// session at a URL to holding its first screenshot, as a client's first
// call gets it, for a browser context of a shared browser, a browser of its
// own, one readied on a blank page (blankTab: the warm start's floor), a
// containerd sandbox started on demand and one taken from a warm pool,
// beside Playwright (launch, or new context; new page, goto,
// screenshot) in the same rounds. Then the memory of one session of each.
func (r *runner) start(ctx context.Context) error {
	base, err := startBaseline(ctx, r.o.DriverDir, r.o.Node, r.o.Chromium)
	if err != nil {
		return err
	}
	defer base.Close()
	shared, err := cdp.LaunchPool(ctx, cdp.Config{Exec: r.o.Headless}, 1)
	if err != nil {
		return err
	}
	defer shared.Close(context.WithoutCancel(ctx))
	blank := &blankTab{browser: r.o.Headless}
	defer blank.close(context.WithoutCancel(ctx))
	starters := []starter{
		{name: "shared browser, a new context", open: func(ctx context.Context, url string) (display, error) {
			return wiring.OpenDisplay(ctx, wiring.DisplayRequest{Shared: shared, StartURL: url, Browser: r.o.Headless})
		}},
		{name: "a browser of its own", launch: true, open: func(ctx context.Context, url string) (display, error) {
			return wiring.OpenDisplay(ctx, wiring.DisplayRequest{StartURL: url, Browser: r.o.Headless})
		}},
		{name: startFloor, open: blank.open, before: blank.prepare},
	}
	var cold, warm *sandboxes
	if cold, err = r.sandboxes(ctx, 0); err != nil {
		r.report(Figure{Section: "start", Name: "sandboxed starts", Note: "not measured: " + err.Error()})
	} else {
		defer cold.Close()
		starters = append(starters, starter{name: "containerd sandbox, cold", launch: true,
			open: func(ctx context.Context, url string) (display, error) { return cold.open(ctx, r.site, url) }})
		if warm, err = r.sandboxes(ctx, 1); err != nil {
			return err
		}
		defer warm.Close()
		starters = append(starters, starter{name: "containerd sandbox, warm pool", launch: true,
			open:   func(ctx context.Context, url string) (display, error) { return warm.open(ctx, r.site, url) },
			before: warm.full})
	}

	url := r.site.url(pageStatic)
	rounds := max(r.o.Rounds/3, 1) // each round starts every set-up, sandboxes among them
	took := make([][]time.Duration, len(starters))
	var pwLaunch, pwContext []time.Duration
	var launchShots, contextShots []shotCheck
	wrong := make([]int, len(starters))
	o := screen.CaptureOptions{Size: modelSize, Format: screen.PNG}
	for range rounds {
		// Nothing refills while anything is timed.
		for _, s := range starters {
			if s.before != nil {
				if err := s.before(ctx); err != nil {
					return err
				}
			}
		}
		for _, launch := range []bool{true, false} {
			ns, shot, err := base.start(ctx, launch, url)
			if err != nil {
				return err
			}
			if launch {
				pwLaunch, launchShots = append(pwLaunch, ns), append(launchShots, shot)
			} else {
				pwContext, contextShots = append(pwContext, ns), append(contextShots, shot)
			}
		}
		// The warm pool's start comes last: its refill runs after it.
		for i, s := range starters {
			t0 := time.Now()
			d, err := s.open(ctx, url)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			shot, err := d.Capture(ctx, o)
			took[i] = append(took[i], time.Since(t0))
			d.Close(context.WithoutCancel(ctx))
			if err != nil {
				return fmt.Errorf("%s: first screenshot: %w", s.name, err)
			}
			if !(shotCheck{png: shot.Data}).right() {
				wrong[i]++
			}
		}
	}
	load := loadNote()
	bl := latency("start", "baseline playwright: launch, new page, goto, screenshot", pwLaunch)
	bc := latency("start", "baseline playwright: new context, new page, goto, screenshot", pwContext)
	bl.Wrong, bc.Wrong = countWrong(launchShots), countWrong(contextShots)
	bl.Note, bc.Note = load, load
	figs := make([]Figure, len(starters))
	var floor float64
	for i, s := range starters {
		f := latency("start", s.name+": create to first screenshot", took[i])
		f.Wrong = wrong[i]
		if s.launch {
			f.against(bl)
		} else {
			f.against(bc)
		}
		f.Note = load
		if s.name == startFloor {
			floor = f.P50
			f.Note = "the floor of a warm start, untimed: the browser's start and its blank page's first frame; " + load
		}
		figs[i] = f
	}
	for i, s := range starters {
		f := figs[i]
		switch s.name {
		case "containerd sandbox, warm pool":
			f.target("p50 <= 150 ms", f.P50 <= 150)
			if floor > 0 {
				f.Note = fmt.Sprintf("%.2fx the floor (%s, %.0f ms); %s", f.P50/floor, startFloor, floor, f.Note)
			}
		case "containerd sandbox, cold":
			f.target("p50 <= 800 ms", f.P50 <= 800)
		}
		r.report(f)
	}
	r.report(bl)
	r.report(bc)
	return r.startMemory(ctx, starters, cold, warm, base.cmd.Process.Pid)
}

// full waits until the warm pool has all its sandboxes ready.
func (s *sandboxes) full(ctx context.Context) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if n, size := s.sbx.Warm(); n >= size {
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-tick.C:
		}
	}
}

// startMemory holds r.memorySessions() sessions of each set-up open at the
// benchmark's page and reports the memory of one, and where it goes. A
// host set-up's is the growth of the PSS of this process's descendants
// (the baseline's processes, which stay as they are, aside); a sandbox's is
// its cgroup's charge, which counts its tmpfs and page cache too.
func (r *runner) startMemory(ctx context.Context, starters []starter, cold, warm *sandboxes, baselinePid int) error {
	url := r.site.url(pageStatic)
	n := r.memorySessions()
	ours := func() ([]int, error) {
		ps, err := descendants(os.Getpid())
		if err != nil {
			return nil, err
		}
		skip, _ := descendants(baselinePid)
		return slices.DeleteFunc(ps, func(p int) bool { return p == baselinePid || slices.Contains(skip, p) }), nil
	}
	for _, s := range starters {
		if s.before != nil {
			continue // a warm sandbox is a cold one, once taken; a readied browser is a browser of its own
		}
		before, err := ours()
		if err != nil {
			return err
		}
		var ds []display
		for range n {
			d, err := s.open(ctx, url)
			if err == nil {
				_, err = d.Capture(ctx, screen.CaptureOptions{Size: modelSize, Format: screen.PNG})
				ds = append(ds, d)
			}
			if err != nil {
				closeAll(ctx, ds)
				return fmt.Errorf("%s: %w", s.name, err)
			}
		}
		f := Figure{Section: "start", Name: s.name + ": memory per session", Unit: "MB"}
		if s.name == "containerd sandbox, cold" {
			total, err := cold.memory()
			if err != nil {
				closeAll(ctx, ds)
				return err
			}
			f.Value = float64(total) / float64(n) / 1e6
			f.target("<= 70 MB", f.Value <= 70)
			f.Note = fmt.Sprintf("its cgroup's memory.current; one sandbox: %s", sandboxBreakdown(cold.ids()))
		} else {
			after, err := ours()
			if err != nil {
				closeAll(ctx, ds)
				return err
			}
			added := slices.DeleteFunc(slices.Clone(after), func(p int) bool { return slices.Contains(before, p) })
			f.Value = float64(sumPSS(after)-sumPSS(before)) / float64(n) / 1e6
			if s.name == "shared browser, a new context" {
				f.target("<= 20 MB", f.Value <= 20)
			}
			f.Note = fmt.Sprintf("PSS growth over %d sessions; new processes: %s", n, byType(added))
		}
		r.report(f)
		closeAll(ctx, ds)
	}
	if warm == nil {
		return nil
	}
	if err := warm.full(ctx); err != nil {
		return err
	}
	total, err := warm.memory()
	if err != nil {
		return err
	}
	_, size := warm.sbx.Warm()
	r.report(Figure{Section: "start", Name: "containerd sandbox, warm pool: memory of a waiting sandbox", Unit: "MB",
		Value: float64(total) / float64(size) / 1e6, Note: "a browser on a blank page, no session: " + sandboxBreakdown(warm.ids())})
	return nil
}

func closeAll(ctx context.Context, ds []display) {
	for _, d := range ds {
		d.Close(context.WithoutCancel(ctx))
	}
}

func sumPSS(ps []int) int64 {
	var n int64
	for _, p := range ps {
		n += pss(p)
	}
	return n
}

// byType sums the PSS of processes by what they are: Chromium's --type
// (renderer, gpu-process, zygote, utility), "browser" for Chromium's main
// process, else the program's name.
func byType(ps []int) string {
	sums := map[string]int64{}
	for _, p := range ps {
		sums[procType(p)] += pss(p)
	}
	keys := make([]string, 0, len(sums))
	for k := range sums {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(sums[b], sums[a]) })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.1f MB", k, float64(sums[k])/1e6))
	}
	return strings.Join(parts, ", ")
}

// procType names what process p is.
func procType(p int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
	if err != nil || len(b) == 0 {
		return "gone"
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	if len(args) == 1 {
		// Chromium's zygote children rewrite their command line as one
		// string.
		args = strings.Fields(args[0])
	}
	for _, a := range args[1:] {
		if t, ok := strings.CutPrefix(a, "--type="); ok {
			return t
		}
	}
	name := args[0][strings.LastIndexByte(args[0], '/')+1:]
	if strings.Contains(name, "chrom") || strings.Contains(name, "headless_shell") {
		return "browser"
	}
	if len(args) > 1 && args[1] == "agent" {
		return "agent"
	}
	return name
}

// sandboxBreakdown says where the memory of the first sandbox of ids goes:
// its processes' PSS by type, and its cgroup's anonymous memory, file
// cache and shared memory (its tmpfs).
func sandboxBreakdown(ids []string) string {
	if len(ids) == 0 {
		return "no sandbox"
	}
	id := ids[0]
	b, err := os.ReadFile(cgroupFile(id, "cgroup.procs", "cgroup.procs"))
	if err != nil {
		return "unknown: " + err.Error()
	}
	var ps []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			ps = append(ps, p)
		}
	}
	stat, _ := os.ReadFile(cgroupFile(id, "memory.stat", "memory.stat"))
	var cg []string
	for _, line := range strings.Split(string(stat), "\n") {
		k, v, _ := strings.Cut(line, " ")
		// cgroup v2's names, and v1's.
		if slices.Contains([]string{"anon", "file", "shmem", "kernel", "rss", "cache", "mapped_file"}, k) {
			n, _ := strconv.ParseInt(v, 10, 64)
			cg = append(cg, fmt.Sprintf("%s %.1f MB", k, float64(n)/1e6))
		}
	}
	return fmt.Sprintf("processes %s; cgroup %s", byType(ps), strings.Join(cg, ", "))
}

// loadNote gives the machine's load average, which every timing of a
// shared machine should carry.
func loadNote() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return "load average " + strings.Join(f[:3], " ")
}
