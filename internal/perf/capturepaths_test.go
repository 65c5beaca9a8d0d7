package perf_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/headlessexperimental"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/disintegration/imaging"
	"golang.org/x/image/draw"

	"github.com/spotter-harness/spotter/internal/perf"
	"github.com/spotter-harness/spotter/screen"
)

var (
	rounds    = flag.Int("capture.rounds", 50, "samples per path and variant in BenchmarkCapturePaths")
	reportOut = flag.String("capture.out", "", "also write BenchmarkCapturePaths's tables, as Markdown, to this file")
)

// A variant is what a model wants: the page at a DPR, sent at a size and in a
// format.
type variant struct {
	DPR    float64
	Sent   screen.Size
	Format screen.Format
}

func (v variant) String() string {
	return fmt.Sprintf("dpr%g %dx%d %s", v.DPR, v.Sent.W, v.Sent.H, v.Format)
}

// clipScale is the scale of Page.captureScreenshot's clip that makes the
// whole viewport come back at v.Sent: sent / (css * dpr).
func (v variant) clipScale() float64 {
	return float64(v.Sent.W) / (float64(viewport.W) * v.DPR)
}

// variants are the combinations measured: DPR 1 and 2, a 1280x800 and a
// 1024x640 image, PNG and JPEG quality 80.
var variants = func() []variant {
	var vs []variant
	for _, dpr := range []float64{1, 2} {
		for _, sent := range []screen.Size{{W: 1280, H: 800}, {W: 1024, H: 640}} {
			for _, f := range []screen.Format{screen.PNG, screen.JPEG} {
				vs = append(vs, variant{DPR: dpr, Sent: sent, Format: f})
			}
		}
	}
	return vs
}()

// testVariants are the variants TestCapturePaths checks: each DPR, size and
// format twice, in half the time of all of them.
var testVariants = []variant{
	{DPR: 1, Sent: screen.Size{W: 1280, H: 800}, Format: screen.PNG},
	{DPR: 1, Sent: screen.Size{W: 1024, H: 640}, Format: screen.JPEG},
	{DPR: 2, Sent: screen.Size{W: 1280, H: 800}, Format: screen.JPEG},
	{DPR: 2, Sent: screen.Size{W: 1024, H: 640}, Format: screen.PNG},
}

// jpegQuality is the JPEG quality of every path.
const jpegQuality = 80

// A shotFunc captures t's current state as v.
type shotFunc func(ctx context.Context, t *tab, v variant) ([]byte, error)

// A stepFunc clicks and returns the image that shows the result. Only its
// run is timed: setup, such as starting a screencast, happens before, and
// done undoes it.
type stepFunc func(ctx context.Context, t *tab, v variant) (run func(context.Context) ([]byte, error), done func(), err error)

// A capturePath is one way to get a model-sized image.
type capturePath struct {
	name  string
	about string // one line for the report
	kind  kind
	role  string // tab role; paths with different roles never share a tab

	shot shotFunc // capture of the current state; nil for paths that only exist after input
	step stepFunc // nil means click, then shot

	mode string // the screen/cdp capture mode that takes its pictures this way; "" for a candidate Spotter does not use

	inCapture  bool // measured in the capture table
	inStep     bool // measured in the step table
	mayBeStale bool // its image can predate the click: count stale images instead of failing
}

// tabKey returns the key of p's tab for v. A frame-controlled tab's window is
// the sent size, unless the path captures with Page.captureScreenshot.
func (p *capturePath) tabKey(v variant) tabKey {
	k := tabKey{kind: p.kind, dpr: v.DPR, role: p.role}
	if p.kind == headlessShell {
		k.window = v.Sent
		if p.role == roleClip {
			k.window = viewport
		}
	}
	return k
}

// roleClip marks frame-controlled tabs captured with Page.captureScreenshot.
const roleClip = "clip"

// baseline is the path every ratio compares with.
const baseline = "naive x/image"

var paths = []*capturePath{
	{
		name: "clip", kind: chromium, shot: clipShot(false), inCapture: true,
		about: "Page.captureScreenshot{clip: viewport, scale: sent/(css*dpr)}",
	},
	{
		name: "clip fast", kind: chromium, shot: clipShot(true), inCapture: true, inStep: true, mode: "screencast",
		about: "clip with optimizeForSpeed: true",
	},
	{
		name: "clip nolimit", kind: chromiumNoLimit, shot: clipShot(false), inCapture: true,
		about: "clip, browser started with --disable-frame-rate-limit",
	},
	{
		name: "clip fast nolimit", kind: chromiumNoLimit, shot: clipShot(true), inCapture: true, inStep: true,
		about: "clip fast, browser started with --disable-frame-rate-limit",
	},
	{
		name: "clip fast nolimit rAF", kind: chromiumNoLimit, shot: clipShot(true), step: rafStep(clipShot(true)), inStep: true,
		about: "clip fast nolimit after a double requestAnimationFrame as settle signal",
	},
	{
		name: "screencast first", kind: chromiumNoLimit, step: screencastStep(false), inStep: true, mayBeStale: true,
		about: "Page.startScreencast{maxWidth/maxHeight: sent, everyNthFrame: 1} (nolimit): the first frame after the click",
	},
	{
		name: "screencast latest", kind: chromiumNoLimit, step: screencastStep(true), inStep: true, mayBeStale: true,
		about: "screencast first, but the latest frame received when the click returns",
	},
	{
		name: "frame", kind: headlessShell, shot: frameShot(false), step: frameStep(false, true), inCapture: true, inStep: true,
		about: "headless shell, HeadlessExperimental.beginFrame{screenshot}; step: frames until no damage, then the screenshot frame",
	},
	{
		name: "frame fast", kind: headlessShell, shot: frameShot(true), step: frameStep(true, true), inCapture: true, inStep: true, mode: "frame control",
		about: "frame with screenshot.optimizeForSpeed: true",
	},
	{
		name: "frame fast 1", kind: headlessShell, shot: frameShot(true), step: frameStep(true, false), inStep: true,
		about: "frame fast without the settle frames: click, then one beginFrame{screenshot}",
	},
	{
		name: "frame clip", kind: headlessShell, role: roleClip, shot: pumpedClipShot, inCapture: true, inStep: true, mode: "frame control, regions",
		about: "headless shell, Page.captureScreenshot (clip fast) while beginFrame runs frames until it returns",
	},
	{
		name: baseline, kind: chromium, shot: naiveShot(resizeXDraw), inCapture: true, inStep: true,
		about: "full-size Page.captureScreenshot (PNG, optimizeForSpeed), decode, x/image/draw ApproxBiLinear, encode",
	},
	{
		name: "naive imaging", kind: chromium, shot: naiveShot(resizeImaging), inCapture: true,
		about: "naive x/image with disintegration/imaging Linear instead",
	},
}

// clipShot captures the whole viewport with Page.captureScreenshot, scaled by
// the clip so that the browser produces the sent size.
func clipShot(fast bool) shotFunc {
	return func(ctx context.Context, t *tab, v variant) ([]byte, error) {
		p := page.CaptureScreenshotParams{
			Format: page.CaptureScreenshotFormat(v.Format),
			Clip: &page.Viewport{
				Width:  float64(viewport.W),
				Height: float64(viewport.H),
				Scale:  v.clipScale(),
			},
		}
		if v.Format == screen.JPEG {
			p.Quality = new(int64(jpegQuality))
		}
		if fast {
			p.OptimizeForSpeed = new(true)
		}
		res, err := chromedp.Call(ctx, page.CaptureScreenshot, p)
		if err != nil {
			return nil, fmt.Errorf("capture screenshot: %w", err)
		}
		return res.Data, nil
	}
}

// frameShot runs one frame of a frame-controlled tab and returns its
// screenshot, which has the size of the tab's window.
func frameShot(fast bool) shotFunc {
	return func(ctx context.Context, t *tab, v variant) ([]byte, error) {
		sp := &headlessexperimental.ScreenshotParams{
			Format:           headlessexperimental.ScreenshotParamsFormat(v.Format),
			OptimizeForSpeed: fast,
		}
		if v.Format == screen.JPEG {
			sp.Quality = new(int64(jpegQuality))
		}
		return frameScreenshot(ctx, t, sp)
	}
}

// frameStep clicks, optionally runs frames until one has no damage, and then
// runs the screenshot frame.
func frameStep(fast, settle bool) stepFunc {
	shot := frameShot(fast)
	return func(_ context.Context, t *tab, v variant) (func(context.Context) ([]byte, error), func(), error) {
		run := func(ctx context.Context) ([]byte, error) {
			if err := t.click(ctx); err != nil {
				return nil, err
			}
			if settle {
				if _, _, err := settleFrames(ctx, t); err != nil {
					return nil, err
				}
			}
			return shot(ctx, t, v)
		}
		return run, func() {}, nil
	}
}

// pumpedClipShot calls Page.captureScreenshot on a frame-controlled tab. The
// capture waits for a frame, so frames run until it returns.
func pumpedClipShot(ctx context.Context, t *tab, v variant) ([]byte, error) {
	var data []byte
	err := whileFrames(ctx, t, func(ctx context.Context) error {
		var err error
		data, err = clipShot(true)(ctx, t, v)
		return err
	})
	return data, err
}

// rafStep clicks, waits for two animation frames in the page, and captures.
func rafStep(shot shotFunc) stepFunc {
	return func(_ context.Context, t *tab, v variant) (func(context.Context) ([]byte, error), func(), error) {
		run := func(ctx context.Context) ([]byte, error) {
			if err := t.click(ctx); err != nil {
				return nil, err
			}
			if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](
				`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`,
				func(p *runtime.EvaluateParams) { p.AwaitPromise = new(true) },
			)); err != nil {
				return nil, fmt.Errorf("wait for animation frames: %w", err)
			}
			return shot(ctx, t, v)
		}
		return run, func() {}, nil
	}
}

// A resizer scales src to size.
type resizer func(src image.Image, size screen.Size) image.Image

func resizeXDraw(src image.Image, size screen.Size) image.Image {
	dst := image.NewRGBA(image.Rect(0, 0, size.W, size.H))
	draw.ApproxBiLinear.Scale(dst, dst.Bounds(), src, src.Bounds(), draw.Src, nil)
	return dst
}

func resizeImaging(src image.Image, size screen.Size) image.Image {
	return imaging.Resize(src, size.W, size.H, imaging.Linear)
}

// naiveShot captures the viewport at full device resolution, then resizes
// and encodes in Go.
func naiveShot(resize resizer) shotFunc {
	return func(ctx context.Context, t *tab, v variant) ([]byte, error) {
		res, err := chromedp.Call(ctx, page.CaptureScreenshot, page.CaptureScreenshotParams{
			Format:           page.CaptureScreenshotFormatPng,
			OptimizeForSpeed: new(true),
		})
		if err != nil {
			return nil, fmt.Errorf("capture screenshot: %w", err)
		}
		img, err := png.Decode(bytes.NewReader(res.Data))
		if err != nil {
			return nil, fmt.Errorf("decode screenshot: %w", err)
		}
		if got := img.Bounds().Size(); got.X != v.Sent.W || got.Y != v.Sent.H {
			img = resize(img, v.Sent)
		}
		var buf bytes.Buffer
		if v.Format == screen.JPEG {
			err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: jpegQuality})
		} else {
			err = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img)
		}
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", v.Format, err)
		}
		return buf.Bytes(), nil
	}
}

// screencastStep starts a screencast at the sent size (untimed), then clicks
// and returns the first frame that arrives after the click or, if latest,
// the latest frame received when the click returns.
func screencastStep(latest bool) stepFunc {
	return func(ctx context.Context, t *tab, v variant) (func(context.Context) ([]byte, error), func(), error) {
		c, err := startCast(ctx, t, v)
		if err != nil {
			return nil, nil, err
		}
		run := func(ctx context.Context) ([]byte, error) {
			c.drain()
			if err := t.click(ctx); err != nil {
				return nil, err
			}
			if latest {
				c.drain()
				return c.last, nil
			}
			return c.next(ctx)
		}
		return run, c.stop, nil
	}
}

// A cast is a running screencast. Its goroutine acknowledges each frame and
// hands it on; stop ends both.
type cast struct {
	t      *tab
	frames chan []byte
	last   []byte
	cancel context.CancelFunc
	done   chan struct{}
}

func startCast(ctx context.Context, t *tab, v variant) (*cast, error) {
	lctx, cancel := context.WithCancel(t.ctx)
	events := chromedp.Events(lctx, page.ScreencastFrame)
	c := &cast{t: t, frames: make(chan []byte, 16), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for ev, err := range events {
			if err != nil {
				return
			}
			// Chromium sends no more frames until it has an
			// acknowledgement. An error means the cast is stopping.
			_, _ = chromedp.Call(lctx, page.ScreencastFrameAck, page.ScreencastFrameAckParams{SessionID: ev.SessionID})
			select {
			case c.frames <- ev.Data:
			case <-lctx.Done():
				return
			}
		}
	}()
	p := page.StartScreencastParams{
		Format:        page.StartScreencastFormat(v.Format),
		MaxWidth:      int64(v.Sent.W),
		MaxHeight:     int64(v.Sent.H),
		EveryNthFrame: 1,
	}
	if v.Format == screen.JPEG {
		p.Quality = new(int64(jpegQuality))
	}
	if _, err := chromedp.Call(ctx, page.StartScreencast, p); err != nil {
		c.stop()
		return nil, fmt.Errorf("start screencast: %w", err)
	}
	if _, err := c.next(ctx); err != nil {
		c.stop()
		return nil, fmt.Errorf("first screencast frame: %w", err)
	}
	return c, nil
}

// next waits for the next frame.
func (c *cast) next(ctx context.Context) ([]byte, error) {
	select {
	case f := <-c.frames:
		c.last = f
		return f, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for a screencast frame: %w", ctx.Err())
	}
}

// drain takes the frames that have arrived, keeping the latest.
func (c *cast) drain() {
	for {
		select {
		case f := <-c.frames:
			c.last = f
		default:
			return
		}
	}
}

func (c *cast) stop() {
	ctx, cancel := context.WithTimeout(c.t.ctx, opTimeout)
	defer cancel()
	_, _ = chromedp.Call(ctx, page.StopScreencast, cdp.Empty{}) // best effort: the tab may be closing
	c.cancel()
	<-c.done
}

// stepRunner returns p's step for v on t.
func (p *capturePath) stepRunner(ctx context.Context, t *tab, v variant) (func(context.Context) ([]byte, error), func(), error) {
	if p.step != nil {
		return p.step(ctx, t, v)
	}
	run := func(ctx context.Context) ([]byte, error) {
		if err := t.click(ctx); err != nil {
			return nil, err
		}
		return p.shot(ctx, t, v)
	}
	return run, func() {}, nil
}

// errStale marks an image that shows the page as it was before the click.
var errStale = errors.New("image shows the page before the click")

// A landmark is a CSS point of the test page and its colour.
type landmark struct {
	name string
	x, y float64
	c    color.RGBA
}

var (
	colorOff = color.RGBA{220, 40, 40, 255}
	colorOn  = color.RGBA{40, 160, 40, 255}

	// button is probed away from its label and from clickAt.
	button    = landmark{name: "toggle button", x: 130, y: 115}
	landmarks = []landmark{
		{"blue block", 475, 175, color.RGBA{30, 144, 255, 255}},
		{"yellow block", 675, 175, color.RGBA{255, 215, 0, 255}},
		{"purple block", 875, 375, color.RGBA{138, 43, 226, 255}},
		{"background", 1150, 700, color.RGBA{255, 255, 255, 255}},
	}
)

// tolerance is the largest per-channel difference that still matches a
// colour; JPEG quality 80 stays well within it on flat blocks.
const tolerance = 40

// checkImage checks that data is a v.Format image of size v.Sent showing the
// whole test page with the toggle button on or off. It returns an error that
// wraps errStale if the button shows the other state.
func checkImage(data []byte, v variant, on bool) error {
	img, format, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("decode %d bytes: %w", len(data), err)
	}
	if format != string(v.Format) {
		return fmt.Errorf("format %s, want %s", format, v.Format)
	}
	if got := img.Bounds().Size(); got.X != v.Sent.W || got.Y != v.Sent.H {
		return fmt.Errorf("size %dx%d, want %dx%d", got.X, got.Y, v.Sent.W, v.Sent.H)
	}
	at := func(l landmark) color.RGBA {
		x := int(l.x * float64(v.Sent.W) / float64(viewport.W))
		y := int(l.y * float64(v.Sent.H) / float64(viewport.H))
		r, g, b, a := img.At(img.Bounds().Min.X+x, img.Bounds().Min.Y+y).RGBA()
		return color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), uint8(a >> 8)}
	}
	for _, l := range landmarks {
		if got := at(l); !near(got, l.c) {
			return fmt.Errorf("%s at css (%g, %g) is %v, want %v", l.name, l.x, l.y, got, l.c)
		}
	}
	want, other := colorOff, colorOn
	if on {
		want, other = colorOn, colorOff
	}
	switch got := at(button); {
	case near(got, want):
		return nil
	case near(got, other):
		return fmt.Errorf("%s is %v, want %v: %w", button.name, got, want, errStale)
	default:
		return fmt.Errorf("%s is %v, want %v", button.name, got, want)
	}
}

func near(a, b color.RGBA) bool {
	d := func(x, y uint8) int { return max(int(x), int(y)) - min(int(x), int(y)) }
	return d(a.R, b.R) <= tolerance && d(a.G, b.G) <= tolerance && d(a.B, b.B) <= tolerance
}

// TestCapturePaths checks the images of the paths Spotter's capture modes
// use and, with SPOTTER_PERF=1, of every candidate path: the requested
// size and format, the whole page, and after a click the page's new state.
// Paths that may return a frame from before the click only log it.
func TestCapturePaths(t *testing.T) {
	requireIntegration(t)
	checked := paths
	if !perfEnabled() {
		checked = slices.DeleteFunc(slices.Clone(paths), func(p *capturePath) bool { return p.mode == "" })
		t.Logf("checking the %d paths Spotter uses; SPOTTER_PERF=1 checks the %d candidates too", len(checked), len(paths)-len(checked))
	}
	if len(checked) == 0 {
		t.Fatal("no capture path is marked with the mode that uses it")
	}
	pool := newTabPool(t)
	for _, p := range checked {
		t.Run(p.name, func(t *testing.T) {
			for _, v := range testVariants {
				pg := pool.get(t, p.tabKey(v))
				if p.shot != nil {
					data, err := withTimeout(pg, func(ctx context.Context) ([]byte, error) { return p.shot(ctx, pg, v) })
					if err != nil {
						t.Fatalf("%s shot %v: %v", p.name, v, err)
					}
					if err := checkImage(data, v, pg.on); err != nil {
						t.Errorf("%s shot %v: %v", p.name, v, err)
					}
				}
				for i := range 2 {
					data, _, err := runStep(p, pg, v)
					if err != nil {
						t.Fatalf("%s step %d %v: %v", p.name, i, v, err)
					}
					err = checkImage(data, v, pg.on)
					if errors.Is(err, errStale) && p.mayBeStale {
						t.Logf("%s step %d %v: %v (allowed: this path may be stale)", p.name, i, v, err)
					} else if err != nil {
						t.Errorf("%s step %d %v: %v", p.name, i, v, err)
					}
				}
			}
		})
	}
}

// TestFrameMatchesClip checks that frame control draws the very image that
// Page.captureScreenshot with a scaled clip encodes: the same bytes, so one
// set of goldens serves both paths.
func TestFrameMatchesClip(t *testing.T) {
	requireIntegration(t)
	pool := newTabPool(t)
	clip := &capturePath{name: "clip", kind: chromium, shot: clipShot(false)}
	frame := &capturePath{name: "frame", kind: headlessShell, shot: frameShot(false)}
	for _, v := range testVariants {
		var got [2][]byte
		for i, p := range []*capturePath{clip, frame} {
			pg := pool.get(t, p.tabKey(v))
			data, err := withTimeout(pg, func(ctx context.Context) ([]byte, error) { return p.shot(ctx, pg, v) })
			if err != nil {
				t.Fatalf("%s %v: %v", p.name, v, err)
			}
			got[i] = data
		}
		if !bytes.Equal(got[0], got[1]) {
			t.Errorf("%v: frame screenshot (%d bytes) differs from clip capture (%d bytes)", v, len(got[1]), len(got[0]))
		}
	}
}

// TestFrameControlInput pins how input coordinates work in a
// frame-controlled tab whose emulation scales the 1280x800 page into a
// 1024x640 window: Input.dispatchMouseEvent takes window pixels, which are
// CSS pixels times the scale (0.8), and so also the sent image's pixels.
func TestFrameControlInput(t *testing.T) {
	requireIntegration(t)
	pool := newTabPool(t)
	const scale = 0.8
	tests := []struct {
		name   string
		x, y   float64 // dispatched
		toggle bool
	}{
		// css (95, 95) is just outside the button at (100, 100)-(300, 200).
		{"css (95, 95) scaled misses", 95 * scale, 95 * scale, false},
		{"css (290, 190) scaled hits", 290 * scale, 190 * scale, true},
		// Unscaled, (95, 95) is css (118.75, 118.75): inside.
		{"css (95, 95) unscaled hits", 95, 95, true},
		// Unscaled, (290, 190) is css (362.5, 237.5): outside.
		{"css (290, 190) unscaled misses", 290, 190, false},
	}
	for _, dpr := range []float64{1, 2} {
		v := variant{DPR: dpr, Sent: screen.Size{W: 1024, H: 640}, Format: screen.PNG}
		pg := pool.get(t, tabKey{kind: headlessShell, dpr: dpr, window: v.Sent})
		for _, tt := range tests {
			ctx, cancel := context.WithTimeout(pg.ctx, opTimeout)
			if err := dispatchClick(ctx, tt.x, tt.y); err != nil {
				cancel()
				t.Fatal(err)
			}
			if tt.toggle {
				pg.on = !pg.on
			}
			if _, _, err := settleFrames(ctx, pg); err != nil {
				cancel()
				t.Fatal(err)
			}
			data, err := frameShot(false)(ctx, pg, v)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			if err := checkImage(data, v, pg.on); err != nil {
				t.Errorf("%s: dispatchMouseEvent at (%g, %g) in %v: %v", tt.name, tt.x, tt.y, v, err)
			}
		}
	}
}

// TestFrameControlNeedsFrames pins which commands wait for a frame under
// begin-frame control, and so never return unless beginFrame runs while they
// wait, and which do not.
func TestFrameControlNeedsFrames(t *testing.T) {
	requireIntegration(t)
	pool := newTabPool(t)
	v := variant{DPR: 1, Sent: viewport, Format: screen.PNG}
	mouse := func(typ input.DispatchMouseEventType, x, y float64) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := chromedp.Call(ctx, input.DispatchMouseEvent, input.DispatchMouseEventParams{
				Type: typ, X: x, Y: y, Button: input.MouseButtonLeft, ClickCount: 1,
			})
			return err
		}
	}
	tests := []struct {
		name       string
		call       func(context.Context, *tab) error
		needsFrame bool
	}{
		{"Page.captureScreenshot", func(ctx context.Context, pg *tab) error {
			_, err := clipShot(true)(ctx, pg, v)
			return err
		}, true},
		{"Input.dispatchMouseEvent mouseMoved", func(ctx context.Context, _ *tab) error {
			return mouse(input.DispatchMouseEventTypeMouseMoved, 700, 600)(ctx)
		}, true},
		{"Input.dispatchMouseEvent mousePressed", func(ctx context.Context, _ *tab) error {
			return mouse(input.DispatchMouseEventTypeMousePressed, 700, 600)(ctx)
		}, false},
		{"Input.dispatchMouseEvent mouseReleased", func(ctx context.Context, _ *tab) error {
			return mouse(input.DispatchMouseEventTypeMouseReleased, 700, 600)(ctx)
		}, false},
		{"Input.insertText", func(ctx context.Context, _ *tab) error {
			_, err := chromedp.Call(ctx, input.InsertText, input.InsertTextParams{Text: "x"})
			return err
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A command abandoned without frames can leave the tab changed
			// (an abandoned capture keeps its own emulation), so each case
			// gets a tab of its own.
			pg := pool.get(t, tabKey{kind: headlessShell, dpr: 1, window: viewport, role: "needs frames: " + tt.name})
			ctx, cancel := context.WithTimeout(pg.ctx, 500*time.Millisecond)
			err := tt.call(ctx, pg)
			cancel()
			if gotHang := errors.Is(err, context.DeadlineExceeded); gotHang != tt.needsFrame || (err != nil && !gotHang) {
				t.Errorf("%s without frames: err = %v, want a hang: %v", tt.name, err, tt.needsFrame)
			}
			if !tt.needsFrame {
				return
			}
			pg = pool.get(t, tabKey{kind: headlessShell, dpr: 1, window: viewport, role: "with frames: " + tt.name})
			ctx, cancel = context.WithTimeout(pg.ctx, opTimeout)
			defer cancel()
			if err := whileFrames(ctx, pg, func(ctx context.Context) error { return tt.call(ctx, pg) }); err != nil {
				t.Errorf("%s while frames run: %v", tt.name, err)
			}
		})
	}
}

// withTimeout runs f with a context bounded by opTimeout.
func withTimeout(t *tab, f func(context.Context) ([]byte, error)) ([]byte, error) {
	ctx, cancel := context.WithTimeout(t.ctx, opTimeout)
	defer cancel()
	return f(ctx)
}

// runStep runs one step of p and returns its image and the time the step's
// run took.
func runStep(p *capturePath, t *tab, v variant) ([]byte, time.Duration, error) {
	ctx, cancel := context.WithTimeout(t.ctx, opTimeout)
	defer cancel()
	run, done, err := p.stepRunner(ctx, t, v)
	if err != nil {
		return nil, 0, err
	}
	defer done()
	start := time.Now()
	data, err := run(ctx)
	return data, time.Since(start), err
}

// A config is a path at a variant, with its samples.
type config struct {
	path    *capturePath
	v       variant
	t       *tab
	samples []time.Duration // wall time
	cpu     []time.Duration // CPU time of the browser and this process
	stale   int
	empty   int // screenshot frames that came back without data and were retried
	errs    int // samples that failed
}

// BenchmarkCapturePaths measures every path at every variant, interleaved: in
// each round every configuration runs once, in a new random order, so that
// load from elsewhere on the machine spreads over all of them. Each image is
// checked like in TestCapturePaths, and the wall and CPU time of each sample
// recorded. It logs two tables per sub-benchmark (capture, step) and writes
// them to -capture.out; see docs/PERFORMANCE.md. Each sub-benchmark takes
// about 20 minutes at 50 rounds:
//
//	SPOTTER_INTEGRATION=1 go test ./internal/perf/ -run '^$' -bench CapturePaths/capture -benchtime 1x -timeout 120m -v -capture.out /tmp/capture.md
func BenchmarkCapturePaths(b *testing.B) {
	requirePerf(b)
	pool := newTabPool(b)
	var out strings.Builder
	b.Run("capture", func(b *testing.B) {
		for range b.N {
			configs := makeConfigs(b, pool, func(p *capturePath) bool { return p.inCapture })
			load := loadAverage()
			measure(b, configs, false)
			table := report("Capture only: the page's current state as a model-sized image", configs, load)
			b.Logf("\n%s", table)
			out.WriteString(table)
		}
	})
	b.Run("step", func(b *testing.B) {
		for range b.N {
			configs := makeConfigs(b, pool, func(p *capturePath) bool { return p.inStep })
			load := loadAverage()
			measure(b, configs, true)
			table := report("Step: click + settle + model-sized image of the new state", configs, load)
			b.Logf("\n%s", table)
			out.WriteString(table)
		}
	})
	if *reportOut != "" {
		if err := os.WriteFile(*reportOut, []byte(out.String()), 0o644); err != nil {
			b.Errorf("write report: %v", err)
		}
	}
}

func makeConfigs(b *testing.B, pool *tabPool, use func(*capturePath) bool) []*config {
	var configs []*config
	for _, p := range paths {
		if !use(p) {
			continue
		}
		for _, v := range variants {
			configs = append(configs, &config{path: p, v: v, t: pool.get(b, p.tabKey(v))})
		}
	}
	return configs
}

// measure runs *rounds rounds of configs, each round in a new random order.
// A wrong image fails b; a stale one fails it unless the path may be stale.
func measure(b *testing.B, configs []*config, step bool) {
	order := make([]int, len(configs))
	for i := range order {
		order[i] = i
	}
	for round := range *rounds {
		rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, i := range order {
			c := configs[i]
			data, d, cpu, err := sample(c, step)
			if err != nil {
				// Keep measuring: one timeout on a loaded machine should not
				// lose the run. The error fails b and shows in the table.
				c.errs++
				b.Errorf("round %d %s %v: %v", round, c.path.name, c.v, err)
				continue
			}
			c.samples = append(c.samples, d)
			c.cpu = append(c.cpu, cpu)
			err = checkImage(data, c.v, c.t.on)
			switch {
			case errors.Is(err, errStale) && c.path.mayBeStale:
				c.stale++
			case err != nil:
				b.Errorf("round %d %s %v: %v", round, c.path.name, c.v, err)
			}
		}
	}
}

// sample runs c once and returns the image, the time it took and the CPU
// time the browser and this process used meanwhile.
func sample(c *config, step bool) (data []byte, wall, cpu time.Duration, err error) {
	empty := c.t.emptyShots
	defer func() { c.empty += c.t.emptyShots - empty }()
	ctx, cancel := context.WithTimeout(c.t.ctx, opTimeout)
	defer cancel()
	run := func(ctx context.Context) ([]byte, error) { return c.path.shot(ctx, c.t, c.v) }
	if step {
		var done func()
		run, done, err = c.path.stepRunner(ctx, c.t, c.v)
		if err != nil {
			return nil, 0, 0, err
		}
		defer done()
	}
	cpu0, err := cpuUsed(c.t.kind)
	if err != nil {
		return nil, 0, 0, err
	}
	start := time.Now()
	data, err = run(ctx)
	wall = time.Since(start)
	cpu1, cerr := cpuUsed(c.t.kind)
	return data, wall, cpu1 - cpu0, errors.Join(err, cerr)
}

// report formats configs as two Markdown tables, wall time and CPU time: a
// row per path, a column per variant, and in each cell percentiles and the
// median's ratio to the baseline's in the same column.
func report(title string, configs []*config, loadBefore string) string {
	var names []string
	cells := make(map[string]map[variant]*config)
	for _, c := range configs {
		if cells[c.path.name] == nil {
			cells[c.path.name] = make(map[variant]*config)
			names = append(names, c.path.name)
		}
		cells[c.path.name][c.v] = c
	}
	var w strings.Builder
	fmt.Fprintf(&w, "### %s\n\n", title)
	fmt.Fprintf(&w, "%d samples per cell; %s; load average %s before, %s after.\n\n",
		*rounds, time.Now().Format(time.DateOnly), loadBefore, loadAverage())
	fmt.Fprintf(&w, "Wall time, ms: p50 / p95 (p50 ratio to %q).\n\n", baseline)
	writeTable(&w, names, cells, func(c, base *config) string {
		s := perf.Summarize(c.samples)
		cell := fmt.Sprintf("%.0f / %.0f", msf(s.P50), msf(s.P95))
		if base != nil {
			cell += fmt.Sprintf(" (%.2f)", s.Ratio(perf.Summarize(base.samples)))
		}
		if c.stale > 0 {
			cell += fmt.Sprintf(" **stale %d/%d**", c.stale, len(c.samples))
		}
		if c.empty > 0 {
			cell += fmt.Sprintf(" empty %d", c.empty)
		}
		if c.errs > 0 {
			cell += fmt.Sprintf(" **errors %d**", c.errs)
		}
		return cell
	})
	fmt.Fprintf(&w, "CPU time of the browser and the Go process, ms: p50 / p95 (p50 ratio to %q).\n\n", baseline)
	writeTable(&w, names, cells, func(c, base *config) string {
		s := perf.Summarize(c.cpu)
		cell := fmt.Sprintf("%.0f / %.0f", msf(s.P50), msf(s.P95))
		if base != nil {
			cell += fmt.Sprintf(" (%.2f)", s.Ratio(perf.Summarize(base.cpu)))
		}
		return cell
	})
	for _, name := range names {
		for _, p := range paths {
			if p.name == name {
				fmt.Fprintf(&w, "- %s: %s\n", p.name, p.about)
			}
		}
	}
	fmt.Fprintln(&w)
	return w.String()
}

// writeTable writes a row per name and a column per variant; cell formats a
// configuration given the baseline's in the same column, which may be nil.
func writeTable(w *strings.Builder, names []string, cells map[string]map[variant]*config, cell func(c, base *config) string) {
	fmt.Fprintf(w, "| path |")
	for _, v := range variants {
		fmt.Fprintf(w, " %s |", v)
	}
	fmt.Fprintf(w, "\n|---|")
	for range variants {
		fmt.Fprintf(w, "---|")
	}
	fmt.Fprintln(w)
	for _, name := range names {
		fmt.Fprintf(w, "| %s |", name)
		for _, v := range variants {
			if c := cells[name][v]; c != nil {
				fmt.Fprintf(w, " %s |", cell(c, cells[baseline][v]))
			} else {
				fmt.Fprintf(w, " |")
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}

// loadAverage returns the machine's 1-minute load average, or "?".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
