package perf_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/headlessexperimental"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/spotter-harness/spotter/internal/perf"
	"github.com/spotter-harness/spotter/screen"
)

// The browsers under test.
const (
	chromiumPath = "/usr/bin/chromium"
	shellPath    = "/usr/bin/chromium-headless-shell"
)

// viewport is the CSS size of the test page's viewport.
var viewport = screen.Size{W: 1280, H: 800}

// opTimeout bounds one protocol exchange (a capture, a step, a tab's setup).
const opTimeout = 20 * time.Second

// A kind is a browser set up one way. A test binary starts at most one
// browser of each kind and shares it.
type kind int

const (
	chromium        kind = iota // /usr/bin/chromium with the usual flags
	chromiumNoLimit             // the same plus --disable-frame-rate-limit
	headlessShell               // chromium-headless-shell with begin-frame control
	numKinds
)

var kindNames = [numKinds]string{"chromium", "chromium --disable-frame-rate-limit", "chromium-headless-shell, frame control"}

func (k kind) String() string { return kindNames[k] }

// flags returns the allocator options of k: chromedp's defaults, the flags
// every Spotter browser gets, and k's own.
func (k kind) flags() []chromedp.ExecAllocatorOption {
	exe := chromiumPath
	if k == headlessShell {
		exe = shellPath
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(viewport.W, viewport.H),
	)
	switch k {
	case chromiumNoLimit:
		opts = append(opts, chromedp.Flag("disable-frame-rate-limit", true))
	case headlessShell:
		opts = append(opts,
			chromedp.Flag("enable-begin-frame-control", true),
			chromedp.Flag("run-all-compositor-stages-before-draw", true),
		)
	}
	return opts
}

var (
	pageURL  string // the test page, served by TestMain
	browsers [numKinds]sharedBrowser
)

// A sharedBrowser is started by the first test that needs it and stopped by
// TestMain.
type sharedBrowser struct {
	once   sync.Once
	ctx    context.Context // chromedp context that owns the browser
	cancel context.CancelFunc
	err    error
}

func TestMain(m *testing.M) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, testPage)
	}))
	pageURL = srv.URL
	code := m.Run()
	for i := range browsers {
		if b := &browsers[i]; b.cancel != nil {
			b.cancel()
		}
	}
	srv.Close()
	os.Exit(code)
}

// requireIntegration skips tb unless SPOTTER_INTEGRATION=1; then a missing
// browser fails tb. The tests check that the capture paths Spotter uses
// make the right pictures, and run in make test; see requirePerf for the
// rest.
func requireIntegration(tb testing.TB) {
	tb.Helper()
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		tb.Skip("set SPOTTER_INTEGRATION=1 to check capture paths on a real Chromium")
	}
	for _, exe := range []string{chromiumPath, shellPath} {
		if _, err := os.Stat(exe); err != nil {
			tb.Fatalf("SPOTTER_INTEGRATION=1 needs %s: %v", exe, err)
		}
	}
}

// perfEnabled reports whether SPOTTER_PERF=1: the timings, and the checks
// of the candidate paths Spotter rejected (for being stale, slow or
// unreliable), run only then, with make bench.
func perfEnabled() bool { return os.Getenv("SPOTTER_PERF") == "1" }

// requirePerf skips tb unless SPOTTER_INTEGRATION=1 and SPOTTER_PERF=1.
func requirePerf(tb testing.TB) {
	tb.Helper()
	if !perfEnabled() {
		tb.Skip("set SPOTTER_INTEGRATION=1 and SPOTTER_PERF=1 to measure capture paths on a real Chromium")
	}
	requireIntegration(tb)
}

// browserCtx returns the chromedp context of the shared browser of kind k,
// starting it on first use.
func browserCtx(tb testing.TB, k kind) context.Context {
	tb.Helper()
	b := &browsers[k]
	b.once.Do(func() {
		actx, acancel := chromedp.NewExecAllocator(context.Background(), k.flags()...)
		ctx, cancel := chromedp.NewContext(actx)
		b.ctx = ctx
		b.cancel = func() { cancel(); acancel() }
		// CallBrowser starts the browser without attaching to a tab; new
		// contexts made from ctx are new tabs of this browser.
		_, b.err = chromedp.CallBrowser(ctx, browser.GetVersion, cdp.Empty{})
	})
	if b.err != nil {
		tb.Fatalf("start %v: %v", k, b.err)
	}
	return b.ctx
}

// A tab is a page of the test page in one browser. Its state is whether the
// toggle button is on: each click flips it.
type tab struct {
	ctx    context.Context // chromedp context of the tab
	kind   kind
	dpr    float64
	window screen.Size // frame-controlled tabs: the window, which is the size of beginFrame's screenshots
	on     bool

	emptyShots int // frame-controlled tabs: screenshot frames that came back without data
}

// A tabKey picks a tab of a tabPool.
type tabKey struct {
	kind   kind
	dpr    float64
	window screen.Size // frame-controlled tabs only
	role   string      // keeps paths that could disturb each other apart
}

// A tabPool opens each tab once per test or benchmark and closes them all
// when it ends.
type tabPool struct {
	tb   testing.TB
	tabs map[tabKey]*tab
}

func newTabPool(tb testing.TB) *tabPool {
	return &tabPool{tb: tb, tabs: make(map[tabKey]*tab)}
}

func (p *tabPool) get(tb testing.TB, key tabKey) *tab {
	tb.Helper()
	if t, ok := p.tabs[key]; ok {
		return t
	}
	var t *tab
	var err error
	if key.kind == headlessShell {
		t, err = openFrameTab(p.tb, browserCtx(tb, key.kind), key.dpr, key.window)
	} else {
		t, err = openTab(p.tb, browserCtx(tb, key.kind), key.kind, key.dpr)
	}
	if err != nil {
		tb.Fatalf("open tab %+v: %v", key, err)
	}
	p.tabs[key] = t
	return t
}

// openTab opens the test page in a new tab of a regular Chromium, with a
// 1280x800 viewport at dpr. The tab closes when tb ends.
func openTab(tb testing.TB, bctx context.Context, k kind, dpr float64) (*tab, error) {
	ctx, cancel := chromedp.NewContext(bctx)
	tb.Cleanup(cancel)
	t := &tab{ctx: ctx, kind: k, dpr: dpr}
	if err := attach(ctx); err != nil {
		return nil, err
	}
	octx, ocancel := context.WithTimeout(ctx, opTimeout)
	defer ocancel()
	if _, err := chromedp.Call(octx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width:             int64(viewport.W),
		Height:            int64(viewport.H),
		DeviceScaleFactor: dpr,
	}); err != nil {
		return nil, fmt.Errorf("emulate dpr %g: %w", dpr, err)
	}
	if err := chromedp.Do(octx, chromedp.Navigate(pageURL)); err != nil {
		return nil, fmt.Errorf("navigate: %w", err)
	}
	return t, nil
}

// openFrameTab opens the test page in a new frame-controlled tab of
// chromium-headless-shell: the page's viewport is 1280x800 CSS pixels at
// dpr, and beginFrame's screenshots are window-sized. The tab closes when tb
// ends.
//
// This is the recipe's setup:
//
//  1. Target.createTarget{url: "about:blank", width, height: the model
//     image's size, enableBeginFrameControl: true}, then attach to it
//     (chromedp.NewContext with chromedp.WithTargetID);
//  2. Emulation.setDeviceMetricsOverride{width: 1280, height: 800,
//     deviceScaleFactor: dpr, scale: window.W / 1280,
//     dontSetVisibleSize: true}: the page lays out at 1280x800 CSS pixels
//     and DPR dpr, and the compositor scales its output into the window;
//  3. navigate (no frames are needed for the load), run frames until one
//     reports no damage, and take a first screenshot, which may need
//     retries (see frameScreenshot).
func openFrameTab(tb testing.TB, bctx context.Context, dpr float64, window screen.Size) (*tab, error) {
	octx, ocancel := context.WithTimeout(bctx, opTimeout)
	defer ocancel()
	res, err := chromedp.CallBrowser(octx, target.CreateTarget, target.CreateTargetParams{
		URL:                     "about:blank",
		Width:                   int64(window.W),
		Height:                  int64(window.H),
		EnableBeginFrameControl: new(true),
	})
	if err != nil {
		return nil, fmt.Errorf("create frame-controlled target: %w", err)
	}
	ctx, cancel := chromedp.NewContext(bctx, chromedp.WithTargetID(res.TargetID))
	tb.Cleanup(cancel)
	t := &tab{ctx: ctx, kind: headlessShell, dpr: dpr, window: window}
	if err := attach(ctx); err != nil {
		return nil, err
	}
	octx, ocancel = context.WithTimeout(ctx, opTimeout)
	defer ocancel()
	if _, err := chromedp.Call(octx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width:              int64(viewport.W),
		Height:             int64(viewport.H),
		DeviceScaleFactor:  dpr,
		Scale:              float64(window.W) / float64(viewport.W),
		DontSetVisibleSize: new(true),
	}); err != nil {
		return nil, fmt.Errorf("emulate dpr %g into %v: %w", dpr, window, err)
	}
	if err := chromedp.Do(octx, chromedp.Navigate(pageURL)); err != nil {
		return nil, fmt.Errorf("navigate: %w", err)
	}
	if _, _, err := settleFrames(octx, t); err != nil {
		return nil, err
	}
	if _, err := frameScreenshot(octx, t, &headlessexperimental.ScreenshotParams{Format: headlessexperimental.ScreenshotParamsFormatPng}); err != nil {
		return nil, fmt.Errorf("first screenshot: %w", err)
	}
	return t, nil
}

// attach makes the first call on a new tab's context, which attaches to the
// tab. chromedp runs the tab's event loop for as long as the context of that
// first call lives, so it must be the tab's own context, without a timeout: a
// first call under context.WithTimeout leaves a tab whose every later call
// hangs once the timeout's cancel runs. A watchdog still bounds the wait.
func attach(ctx context.Context) error {
	done := make(chan error, 1)
	go func() {
		_, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("true"))
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("attach to tab: %w", err)
		}
		return nil
	case <-time.After(opTimeout):
		_ = chromedp.Cancel(ctx) // closes the tab, which ends the call; its error adds nothing
		<-done
		return fmt.Errorf("attach to tab: no answer in %v", opTimeout)
	}
}

// maxSettleFrames bounds the frames a settle runs before it gives up waiting
// for a frame without damage.
const maxSettleFrames = 30

// settleFrames runs frames without screenshots until one has no damage, at
// most maxSettleFrames. It returns how many frames ran and whether the last
// one had no damage.
func settleFrames(ctx context.Context, t *tab) (frames int, quiet bool, err error) {
	for frames < maxSettleFrames {
		res, err := chromedp.Call(ctx, headlessexperimental.BeginFrame, headlessexperimental.BeginFrameParams{})
		if err != nil {
			return frames, false, fmt.Errorf("begin frame %d: %w", frames, err)
		}
		frames++
		if !res.HasDamage {
			return frames, true, nil
		}
	}
	return frames, false, nil
}

// maxEmptyShots bounds the screenshot frames frameScreenshot tries.
const maxEmptyShots = 10

// frameScreenshot runs a frame with a screenshot. Such a frame can come back
// without data, mostly the first one on a new tab or after an emulation
// change while the renderer is slow: the display has no frame of the page's
// new surface yet. frameScreenshot then runs frames until one has no damage
// and tries again, at most maxEmptyShots times.
func frameScreenshot(ctx context.Context, t *tab, sp *headlessexperimental.ScreenshotParams) ([]byte, error) {
	for range maxEmptyShots {
		res, err := chromedp.Call(ctx, headlessexperimental.BeginFrame, headlessexperimental.BeginFrameParams{Screenshot: sp})
		if err != nil {
			return nil, fmt.Errorf("begin frame with screenshot: %w", err)
		}
		if len(res.ScreenshotData) > 0 {
			return res.ScreenshotData, nil
		}
		t.emptyShots++
		if _, _, err := settleFrames(ctx, t); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("begin frame with screenshot: no data in %d tries", maxEmptyShots)
}

// whileFrames runs f on its own goroutine and runs frames, without
// screenshots, until f returns. Under begin-frame control some commands wait
// for a frame: Page.captureScreenshot, and input that Blink aligns with
// animation frames (mouseMoved, mouseWheel).
func whileFrames(ctx context.Context, t *tab, f func(context.Context) error) error {
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	for {
		select {
		case err := <-done:
			return err
		default:
		}
		if _, err := chromedp.Call(ctx, headlessexperimental.BeginFrame, headlessexperimental.BeginFrameParams{}); err != nil {
			// f waits for a frame that will not come; ctx ends it.
			return errors.Join(fmt.Errorf("begin frame: %w", err), <-done)
		}
	}
}

// clickAt is where steps click, in CSS pixels: inside the toggle button near
// its lower right corner, so that a click in the wrong coordinate space (off
// by the emulation's scale or the DPR) misses it.
var clickAt = struct{ X, Y float64 }{290, 190}

// click presses and releases the left button at clickAt, as trusted input
// events, and flips t's expected state.
func (t *tab) click(ctx context.Context) error {
	if err := dispatchClick(ctx, clickAt.X*t.inputScale(), clickAt.Y*t.inputScale()); err != nil {
		return err
	}
	t.on = !t.on
	return nil
}

// inputScale converts CSS pixels to the coordinates of
// Input.dispatchMouseEvent. In a frame-controlled tab whose emulation scales
// the page into a smaller window, input coordinates are window pixels: CSS
// pixels times the scale.
func (t *tab) inputScale() float64 {
	if t.kind != headlessShell {
		return 1
	}
	return float64(t.window.W) / float64(viewport.W)
}

// dispatchClick presses and releases the left button at (x, y).
func dispatchClick(ctx context.Context, x, y float64) error {
	for _, typ := range []input.DispatchMouseEventType{
		input.DispatchMouseEventTypeMousePressed,
		input.DispatchMouseEventTypeMouseReleased,
	} {
		if _, err := chromedp.Call(ctx, input.DispatchMouseEvent, input.DispatchMouseEventParams{
			Type:       typ,
			X:          x,
			Y:          y,
			Button:     input.MouseButtonLeft,
			ClickCount: 1,
		}); err != nil {
			return fmt.Errorf("dispatch %s at (%g, %g): %w", typ, x, y, err)
		}
	}
	return nil
}

// testPage is a static page: text, buttons and coloured blocks. Clicking the
// toggle button #b switches its background between red and green.
const testPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>Spotter capture test</title><style>
body { margin: 0; font: 16px sans-serif; background: #fff; color: #222 }
h1 { margin: 20px; font-size: 28px }
button { outline: none }
#b { position: absolute; left: 100px; top: 100px; width: 200px; height: 100px; border: 0;
     background: rgb(220, 40, 40); color: #fff; font-size: 20px }
#other { position: absolute; left: 100px; top: 260px; width: 160px; height: 40px }
.blk { position: absolute; width: 150px; height: 150px }
p { position: absolute; left: 100px; width: 600px }
</style></head><body>
<h1>Spotter capture test</h1>
<button id="b">Toggle</button>
<button id="other">Does nothing</button>
<div class="blk" style="left: 400px; top: 100px; background: rgb(30, 144, 255)"></div>
<div class="blk" style="left: 600px; top: 100px; background: rgb(255, 215, 0)"></div>
<div class="blk" style="left: 800px; top: 300px; background: rgb(138, 43, 226)"></div>
<p style="top: 340px">Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod
tempor incididunt ut labore et dolore magna aliqua.</p>
<p style="top: 420px">Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut
aliquip ex ea commodo consequat. 0123456789</p>
<script>
let on = false;
document.getElementById("b").addEventListener("click", e => {
  on = !on;
  e.target.style.background = on ? "rgb(40, 160, 40)" : "rgb(220, 40, 40)";
});
</script>
</body></html>`

// BenchmarkBrowserStart measures how long a browser of each kind takes from
// launch to its first answer over chromedp's pipe, interleaved, and logs p50
// and p95.
func BenchmarkBrowserStart(b *testing.B) {
	requirePerf(b)
	const starts = 15
	var samples [numKinds][]time.Duration
	for range b.N {
		for range starts {
			for _, k := range []kind{chromium, headlessShell} {
				actx, acancel := chromedp.NewExecAllocator(context.Background(), k.flags()...)
				ctx, cancel := chromedp.NewContext(actx)
				start := time.Now()
				_, err := chromedp.CallBrowser(ctx, browser.GetVersion, cdp.Empty{})
				d := time.Since(start)
				cancel()
				acancel()
				if err != nil {
					b.Fatalf("start %v: %v", k, err)
				}
				samples[k] = append(samples[k], d)
			}
		}
	}
	for _, k := range []kind{chromium, headlessShell} {
		b.Logf("%v: start %v", k, perf.Summarize(samples[k]))
	}
}
