package cdp

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image"
	"image/color"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/internal/stats"
	"github.com/spotter-harness/spotter/screen"
)

var (
	stepRounds = flag.Int("step.rounds", 30, "BenchmarkStep: steps per configuration (at least b.N)")
	stepOut    = flag.String("step.out", "", "BenchmarkStep: also write its table, as Markdown, to this file")
)

// The swatch of testdata/toggle.html: a click on its button flips it.
var (
	swatchAt  = actions.Pt(750, 200) // CSS px, inside the swatch
	swatchOff = color.RGBA{220, 40, 40, 255}
	swatchOn  = color.RGBA{40, 160, 40, 255}
)

// toggleTab is a display showing testdata/toggle.html, and whether the
// swatch is on.
type toggleTab struct {
	d      *Display
	button actions.Point // CSS px
	on     bool
}

func openToggle(tb testing.TB, d *Display) *toggleTab {
	tb.Helper()
	load(tb, d, "toggle.html")
	c := eval[[]float64](tb, d, `(r => [r.x + r.width/2, r.y + r.height/2])(document.getElementById("b").getBoundingClientRect())`)
	return &toggleTab{d: d, button: actions.Pt(c[0], c[1])}
}

// click clicks the button.
func (tt *toggleTab) click(ctx context.Context) error {
	err := tt.d.Perform(ctx, screen.Mapped{Action: kind(actions.Click, at(tt.button.X, tt.button.Y))})
	if err == nil {
		tt.on = !tt.on
	}
	return err
}

// check checks that an image of the whole viewport shows the swatch in its
// current state.
func (tt *toggleTab) check(data []byte, format screen.Format) error {
	img, got, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if got != string(format) {
		return fmt.Errorf("format %s, want %s", got, format)
	}
	vp := tt.d.cfg.Viewport
	b := img.Bounds()
	x := b.Min.X + int(swatchAt.X*float64(b.Dx())/float64(vp.W))
	y := b.Min.Y + int(swatchAt.Y*float64(b.Dy())/float64(vp.H))
	want, stale := swatchOff, swatchOn
	if tt.on {
		want, stale = swatchOn, swatchOff
	}
	switch c := img.At(x, y); {
	case near(c, want, 40):
		return nil
	case near(c, stale, 40):
		return fmt.Errorf("STALE: the swatch at (%d,%d) of a %dx%d image is %s, want %v: the image is from before the click", x, y, b.Dx(), b.Dy(), rgb(c), want)
	default:
		return fmt.Errorf("the swatch at (%d,%d) of a %dx%d image is %s, want %v", x, y, b.Dx(), b.Dy(), rgb(c), want)
	}
}

// TestStepShowsClick checks that the capture after a click always shows
// the click's effect, never an older frame, at both pixel ratios, at the
// CSS size and a model's size, in PNG and JPEG.
func TestStepShowsClick(t *testing.T) {
	for _, dpr := range []float64{1, 2} {
		t.Run(fmt.Sprintf("dpr%g", dpr), func(t *testing.T) {
			tt := openToggle(t, newDisplay(t, DisplayConfig{DPR: dpr}))
			for _, o := range []screen.CaptureOptions{
				{Format: screen.PNG},
				{Size: screen.Size{W: 1024, H: 640}, Format: screen.PNG},
				{Size: screen.Size{W: 1024, H: 640}, Format: screen.JPEG},
				{Format: screen.JPEG},
			} {
				for i := range 3 {
					if err := tt.click(t.Context()); err != nil {
						t.Fatalf("Perform(click) = %v", err)
					}
					shot := capture(t, tt.d, o)
					if err := tt.check(shot.Data, o.Format); err != nil {
						t.Errorf("click %d, Capture(%v %s): %v", i, o.Size, o.Format, err)
					}
				}
			}
		})
	}
}

// A stepConfig is one configuration that BenchmarkStep measures.
type stepConfig struct {
	mode     Mode
	dpr      float64
	size     screen.Size // zero: the viewport's CSS size
	format   screen.Format
	baseline bool // a click, then an unclipped Page.captureScreenshot: what Playwright's mouse.click and page.screenshot do

	tab     *toggleTab
	pid     int // the browser's process
	steps   []time.Duration
	settles []time.Duration
	cpu     []time.Duration // CPU time of the browser's processes and this one
}

func (c *stepConfig) String() string {
	if c.baseline {
		return fmt.Sprintf("baseline dpr%g", c.dpr)
	}
	size := "css"
	if !c.size.Empty() {
		size = fmt.Sprintf("%dx%d", c.size.W, c.size.H)
	}
	return fmt.Sprintf("%v dpr%g %s %s", c.mode, c.dpr, size, c.format)
}

// step clicks and captures; only that is timed. The image is checked.
func (c *stepConfig) step(ctx context.Context) error {
	cpu0 := treeCPU(c.pid) + selfCPU()
	start := time.Now()
	if err := c.tab.click(ctx); err != nil {
		return fmt.Errorf("Perform(click) = %w", err)
	}
	var data []byte
	if c.baseline {
		d := c.tab.d
		res, err := call(ctx, d, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng})
		if err != nil {
			return fmt.Errorf("Page.captureScreenshot = %w", err)
		}
		data = res.Data
		c.settles = append(c.settles, 0)
	} else {
		shot, err := c.tab.d.Capture(ctx, screen.CaptureOptions{Size: c.size, Format: c.format})
		if err != nil {
			return fmt.Errorf("Capture() = %w", err)
		}
		data = shot.Data
		c.settles = append(c.settles, shot.Frame.Settle.Waited)
	}
	c.steps = append(c.steps, time.Since(start))
	c.cpu = append(c.cpu, treeCPU(c.pid)+selfCPU()-cpu0)
	format := c.format
	if c.baseline {
		format = screen.PNG
	}
	return c.tab.check(data, format)
}

// BenchmarkStep measures one step of the loop on a static page: a click,
// the settle, and a screenshot of the 1280x800 viewport, in each mode, at
// DPR 1 and 2, at the CSS size and at a model's 1024x640, in PNG and
// JPEG; and, as the baseline, a Playwright-style step: a click and a
// full-resolution PNG of Page.captureScreenshot, without settling. The
// configurations run interleaved: each round runs every one once, in a new
// random order, so that load from elsewhere on the machine spreads over
// all. Every image is checked to show the click's effect. It logs a table
// of p50 and p95 per configuration with the ratio of p50s to the
// baseline's, and reports a few p50s as metrics:
//
//	SPOTTER_INTEGRATION=1 go test ./screen/cdp/ -run '^$' -bench Step -benchtime 1x -step.rounds 30
func BenchmarkStep(b *testing.B) {
	integration(b)
	browsers := map[Mode]*Browser{}
	for _, m := range []Mode{FrameControl, Screencast} {
		ctx, cancel := context.WithTimeout(b.Context(), 60*time.Second)
		br, err := Launch(ctx, Config{Mode: m, Logger: testLogger()})
		cancel()
		if err != nil {
			b.Fatalf("Launch(%v) = %v", m, err)
		}
		b.Cleanup(func() { br.Close(context.Background()) })
		browsers[m] = br
	}
	var configs []*stepConfig
	for _, dpr := range []float64{1, 2} {
		for _, m := range []Mode{FrameControl, Screencast} {
			for _, size := range []screen.Size{{}, {W: 1024, H: 640}} {
				for _, f := range []screen.Format{screen.PNG, screen.JPEG} {
					configs = append(configs, &stepConfig{mode: m, dpr: dpr, size: size, format: f})
				}
			}
		}
		configs = append(configs, &stepConfig{mode: Screencast, dpr: dpr, baseline: true})
	}
	for _, c := range configs {
		d, err := browsers[c.mode].NewDisplay(b.Context(), DisplayConfig{Viewport: screen.Size{W: 1280, H: 800}, DPR: c.dpr})
		if err != nil {
			b.Fatalf("NewDisplay(%v) = %v", c, err)
		}
		b.Cleanup(func() { d.Close(context.Background()) })
		c.tab = openToggle(b, d)
		c.pid = chromedp.FromContext(browsers[c.mode].ctx).Browser.Process().Pid
		if err := c.step(b.Context()); err != nil { // warm up
			b.Fatalf("%v: %v", c, err)
		}
		c.steps, c.settles, c.cpu = nil, nil, nil
	}
	load := loadAverage()
	rounds := max(b.N, *stepRounds)
	b.ResetTimer()
	for range rounds {
		for _, i := range rand.Perm(len(configs)) {
			c := configs[i]
			if err := c.step(b.Context()); err != nil {
				b.Fatalf("%v: %v", c, err)
			}
		}
	}
	b.StopTimer()
	table := stepTable(configs, rounds, load)
	b.Log("\n" + table)
	if *stepOut != "" {
		if err := os.WriteFile(*stepOut, []byte(table), 0o644); err != nil {
			b.Errorf("write %s: %v", *stepOut, err)
		}
	}
	for _, c := range configs {
		if c.baseline || (c.size == screen.Size{W: 1024, H: 640} && c.format == screen.PNG) {
			name := strings.NewReplacer(" ", "-", "frame-control", "fc").Replace(c.String())
			b.ReportMetric(percentile(c.steps, 50), name+"-p50-ms")
		}
	}
}

// stepTable formats BenchmarkStep's results as Markdown.
func stepTable(configs []*stepConfig, rounds int, load string) string {
	var w strings.Builder
	fmt.Fprintf(&w, "Step (click + settle + capture) in ms, %d steps each, interleaved; %s; load average %s before.\n\n",
		rounds, time.Now().Format("2006-01-02"), load)
	fmt.Fprintf(&w, "| configuration | p50 | p95 | settle p50 | p50 / baseline | CPU p50 | CPU / baseline |\n|---|---|---|---|---|---|---|\n")
	base := map[float64][2]float64{}
	for _, c := range configs {
		if c.baseline {
			base[c.dpr] = [2]float64{percentile(c.steps, 50), percentile(c.cpu, 50)}
		}
	}
	for _, c := range configs {
		p50, cpu := percentile(c.steps, 50), percentile(c.cpu, 50)
		fmt.Fprintf(&w, "| %v | %.1f | %.1f | %.1f | %.2f | %.0f | %.2f |\n", c, p50, percentile(c.steps, 95),
			percentile(c.settles, 50), p50/base[c.dpr][0], cpu, cpu/base[c.dpr][1])
	}
	return w.String()
}

// clockTick is the unit of CPU times in /proc (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// treeCPU returns the CPU time (user and system) that the process pid and
// its descendants have used, from /proc; 0 if it cannot tell.
func treeCPU(pid int) time.Duration {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	type proc struct {
		ppid int
		cpu  time.Duration
	}
	procs := map[int]proc{}
	for _, e := range entries {
		var p int
		if _, err := fmt.Sscan(e.Name(), &p); err != nil {
			continue
		}
		ppid, cpu, ok := procStat(fmt.Sprintf("/proc/%d/stat", p))
		if ok {
			procs[p] = proc{ppid, cpu}
		}
	}
	var total time.Duration
	for p, pr := range procs {
		for q := p; q > 1; q = procs[q].ppid {
			if q == pid {
				total += pr.cpu
				break
			}
			if _, ok := procs[q]; !ok {
				break
			}
		}
	}
	return total
}

// selfCPU returns the CPU time this process has used.
func selfCPU() time.Duration {
	_, cpu, _ := procStat("/proc/self/stat")
	return cpu
}

// procStat reads the parent and the CPU time (utime + stime) from a
// /proc/PID/stat file.
func procStat(path string) (ppid int, cpu time.Duration, ok bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	// The command name, in parentheses, may hold spaces.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(data[i+1:]))
	// Fields after the name: state(0) ppid(1) ... utime(11) stime(12).
	if len(f) < 13 {
		return 0, 0, false
	}
	var ut, st int64
	if _, err := fmt.Sscan(f[1], &ppid); err != nil {
		return 0, 0, false
	}
	fmt.Sscan(f[11], &ut)
	fmt.Sscan(f[12], &st)
	return ppid, time.Duration(ut+st) * clockTick, true
}

// loadAverage returns the 1-minute load average, or "?".
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// percentile returns the p-th percentile of ds in milliseconds (nearest
// rank, see internal/stats).
func percentile(ds []time.Duration, p int) float64 {
	return stats.Millis(stats.Percentile(ds, float64(p)))
}

// BenchmarkStepPhases splits a FrameControl step at the model's size into
// its protocol phases, to show where the time goes: Perform (the click),
// settle (frames until one draws nothing new), Page.getLayoutMetrics, and
// grab (the screenshot frame). It logs p50 and p95 of each.
//
//	SPOTTER_INTEGRATION=1 go test ./screen/cdp/ -run '^$' -bench StepPhases -benchtime 1x
func BenchmarkStepPhases(b *testing.B) {
	integration(b)
	ctx, cancel := context.WithTimeout(b.Context(), 60*time.Second)
	br, err := Launch(ctx, Config{Mode: FrameControl, Logger: testLogger()})
	cancel()
	if err != nil {
		b.Fatalf("Launch() = %v", err)
	}
	b.Cleanup(func() { br.Close(context.Background()) })
	rounds := max(b.N, *stepRounds)
	for _, dpr := range []float64{1, 2} {
		for _, f := range []screen.Format{screen.PNG, screen.JPEG} {
			d, err := br.NewDisplay(b.Context(), DisplayConfig{DPR: dpr})
			if err != nil {
				b.Fatalf("NewDisplay() = %v", err)
			}
			tt := openToggle(b, d)
			fc := d.r.(*frameControl)
			req, err := d.captureRequest(screen.CaptureOptions{Size: screen.Size{W: 1024, H: 640}, Format: f})
			if err != nil {
				b.Fatal(err)
			}
			var perform, settle, metrics, grab, frames []time.Duration
			for range rounds {
				t0 := time.Now()
				if err := tt.click(b.Context()); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				tab := d.t
				n := 0
				d.t = countingSession{Session: tab, n: &n}
				if _, _, err := fc.settle(b.Context(), req, time.Second); err != nil {
					b.Fatal(err)
				}
				d.t = tab
				t2 := time.Now()
				if _, err := call(b.Context(), d, page.GetLayoutMetrics, cdpEmpty); err != nil {
					b.Fatal(err)
				}
				t3 := time.Now()
				data, err := fc.grab(b.Context(), req, actions.Point{})
				if err != nil {
					b.Fatal(err)
				}
				t4 := time.Now()
				if err := tt.check(data, f); err != nil {
					b.Fatal(err)
				}
				perform = append(perform, t1.Sub(t0))
				settle = append(settle, t2.Sub(t1))
				metrics = append(metrics, t3.Sub(t2))
				grab = append(grab, t4.Sub(t3))
				frames = append(frames, time.Duration(n)*time.Millisecond) // a count, in "ms" for percentile
			}
			d.Close(context.Background())
			b.Logf("dpr%g 1024x640 %s: perform p50 %.1f p95 %.1f | settle p50 %.1f p95 %.1f (frames p50 %.0f, max %.0f) | metrics p50 %.1f | grab p50 %.1f p95 %.1f ms",
				dpr, f, percentile(perform, 50), percentile(perform, 95), percentile(settle, 50), percentile(settle, 95),
				percentile(frames, 50), percentile(frames, 100), percentile(metrics, 50), percentile(grab, 50), percentile(grab, 95))
		}
	}
}

var cdpEmpty = cdpproto.Empty{}

// countingSession counts the commands sent through it.
type countingSession struct {
	cdpproto.Session
	n *int
}

func (s countingSession) Call(ctx context.Context, method string, params, res any) error {
	*s.n++
	return s.Session.Call(ctx, method, params, res)
}
