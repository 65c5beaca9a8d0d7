package cdp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/headlessexperimental"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// frameControl is the renderer of FrameControl mode. The tab of
// chromium-headless-shell draws a frame only when the display runs one
// with HeadlessExperimental.beginFrame, which answers whether the frame
// drew anything new (damage) and can return a screenshot of it.
//
// Settling runs frames until one has no damage while no navigation,
// network request or short timer set after input (timers.go) is pending;
// the capture is the screenshot of one more frame. After input, one round
// trip on the tab's session first lets the events that the input caused
// arrive. The screenshot is of the whole window, so the window is made the
// size of the image the model wants, and the page, still laid out at the
// viewport's CSS size and device pixel ratio, is drawn scaled into it
// (Emulation.setDeviceMetricsOverride with scale and dontSetVisibleSize).
// Input coordinates are then window pixels: CSS px times the scale, except
// for wheel events, before which the window goes back to the viewport's
// size.
// Captures of a region (zoom) use Page.captureScreenshot, which waits for
// frames, so frames run until it returns.
type frameControl struct {
	d      *Display
	window cdpbrowser.WindowID
	out    output // what the window shows now
}

// output is what a frame-controlled window shows: the whole viewport,
// scaled to the window.
type output struct {
	size  screen.Size // the window, px: the size of beginFrame's screenshots
	scale float64     // window px per viewport px (CSS px at page zoom 1)
	zoom  float64     // the page zoom drawn
}

const (
	// frameInterval is the pace of frames while the page is busy (network,
	// animations): 60 frames per second, like a display.
	frameInterval = time.Second / 60
	// burstFrames is how many frames with damage run back to back, without
	// pacing, before settling paces them: the redraw after input
	// usually takes one or two.
	burstFrames = 4
	// framedPoll is how long framed waits for its command after a frame
	// before it runs another: the command may have reached the renderer
	// just after the frame began.
	framedPoll = 4 * time.Millisecond
	// maxEmptyShots bounds the frames that grab runs for a screenshot. A
	// screenshot can come back empty while a new document or window size
	// has drawn nothing yet.
	maxEmptyShots = 10
)

func (f *frameControl) setup(ctx context.Context) error {
	d := f.d
	id := chromedp.FromContext(d.ctx).Target.TargetID
	w, err := browserCall(ctx, d, cdpbrowser.GetWindowForTarget, cdpbrowser.GetWindowForTargetParams{TargetID: id})
	if err != nil {
		return err
	}
	f.window = w.WindowID
	f.out = output{} // unknown: a window the page opened has a size of its own
	if b := w.Bounds; b != nil {
		f.out.size = screen.Size{W: int(b.Width), H: int(b.Height)}
	}
	return f.apply(ctx, output{size: d.cfg.Viewport, scale: 1, zoom: d.zoom()})
}

// zoomed draws the page at the tab's new page zoom.
func (f *frameControl) zoomed(ctx context.Context) error {
	o := f.out
	o.zoom = f.d.zoom()
	return f.apply(ctx, o)
}

// browserCall is call on the browser's own session.
func browserCall[P, R any](ctx context.Context, d *Display, c cdp.Command[P, R], p P) (R, error) {
	cctx, cancel := context.WithTimeout(ctx, d.cfg.CommandTimeout)
	defer cancel()
	r, err := cdp.Call(cctx, d.browser, c, p)
	if err != nil {
		return r, d.translate(ctx, c.Method, d.cfg.CommandTimeout, err)
	}
	return r, nil
}

// outputFor returns the output whose screenshot is r, or false if r is of
// a region.
func (f *frameControl) outputFor(r captureReq) (output, bool) {
	vp := f.d.cfg.Viewport
	if r.clip != (actions.Rect{Max: actions.Pt(float64(vp.W), float64(vp.H))}) {
		return output{}, false
	}
	return output{size: r.want, scale: r.scale * f.d.cfg.DPR, zoom: f.d.zoom()}, true
}

// apply makes the window show o.
func (f *frameControl) apply(ctx context.Context, o output) error {
	if o == f.out {
		return nil
	}
	d := f.d
	if o.size != f.out.size {
		if _, err := browserCall(ctx, d, cdpbrowser.SetWindowBounds, cdpbrowser.SetWindowBoundsParams{
			WindowID: f.window,
			Bounds:   &cdpbrowser.Bounds{Width: int64(o.size.W), Height: int64(o.size.H)},
		}); err != nil {
			return err
		}
		f.out.size = o.size
	}
	vp := d.cfg.Viewport
	p := metricsFor(vp.W, vp.H, d.cfg.DPR, o.zoom, o.scale)
	if _, err := call(ctx, d, emulation.SetDeviceMetricsOverride, p); err != nil {
		return err
	}
	f.out = o
	return nil
}

// frame runs one frame, with a screenshot if shot is not nil.
func (f *frameControl) frame(ctx context.Context, shot *headlessexperimental.ScreenshotParams) (headlessexperimental.BeginFrameResult, error) {
	// Frames of two displays of one frame-controlled browser must not
	// overlap, or Chromium answers with frames of the wrong window and,
	// under load, exits: the browser's lock (Browser.frameMu) orders them.
	mu := f.d.frameMu
	if mu == nil {
		mu = new(sync.Mutex) // unit tests: no browser to share
	}
	mu.Lock()
	defer mu.Unlock()
	return call(ctx, f.d, headlessexperimental.BeginFrame, headlessexperimental.BeginFrameParams{Screenshot: shot})
}

// settle runs frames until one draws nothing new while the page loads
// nothing, or until timeout. The first frames after input run back to
// back; after burstFrames, and while the page waits for the network,
// frames run at frameInterval.
func (f *frameControl) settle(ctx context.Context, r captureReq, timeout time.Duration) (screen.Settle, error) {
	d := f.d
	start := time.Now()
	if o, ok := f.outputFor(r); ok {
		if err := f.apply(ctx, o); err != nil {
			return screen.Settle{}, fmt.Errorf("settle: %w", err)
		}
	}
	if timeout < 0 {
		return screen.Settle{}, nil
	}
	deadline := start.Add(timeout)
	if n := d.state.inputCount(); n != d.fenced {
		// The events that the input caused in the page (a request sent,
		// a timer set) come on the tab's session, and may come after
		// the first frames: one round trip on it lets them arrive first.
		if _, err := d.evalInt(ctx, "0"); fatal(ctx, err) {
			return screen.Settle{}, fmt.Errorf("settle: %w", err)
		}
		d.fenced = n
	}
	var frames, damaged, burst int
	for {
		begun := time.Now()
		res, err := f.frame(ctx, nil)
		if err != nil {
			return screen.Settle{}, fmt.Errorf("settle: %w", err)
		}
		frames++
		if res.HasDamage {
			damaged++
			burst++
		} else {
			burst = 0
		}
		now := time.Now()
		q := d.state.status(now, d.cfg.QuietWindow, timeout)
		if q.quiet && !res.HasDamage {
			return screen.Settle{Waited: now.Sub(start)}, nil
		}
		waited := now.Sub(start)
		if !now.Before(deadline) {
			reason := q.reason
			if q.quiet {
				reason = "the page kept drawing new frames (an animation?)"
			}
			if damaged > 0 {
				reason += fmt.Sprintf(" (%d new frames in %v)", damaged, waited.Round(time.Millisecond))
			}
			return screen.Settle{Waited: waited, TimedOut: true, Reason: reason}, nil
		}
		if res.HasDamage && burst < burstFrames {
			continue
		}
		wake := begun.Add(frameInterval)
		if !q.wake.IsZero() && q.wake.Before(wake) {
			wake = q.wake
		}
		if deadline.Before(wake) {
			wake = deadline
		}
		if err := f.wait(ctx, wake); err != nil {
			return screen.Settle{}, fmt.Errorf("settle: %w", err)
		}
	}
}

// wait waits until t, ctx's end or the display's close.
func (f *frameControl) wait(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-f.d.closed:
		return fmt.Errorf("display closed: %w", screen.ErrGone)
	case <-timer.C:
		return nil
	}
}

// grab returns the screenshot of one more frame, or for a region the
// capture of Page.captureScreenshot.
func (f *frameControl) grab(ctx context.Context, r captureReq, scroll actions.Point) ([]byte, error) {
	d := f.d
	o, ok := f.outputFor(r)
	if !ok {
		var data []byte
		err := f.pump(ctx, func(ctx context.Context) error {
			res, err := call(ctx, d, page.CaptureScreenshot, clipParams(r, scroll, d.zoom()))
			data = res.Data
			return err
		})
		return data, err
	}
	if err := f.apply(ctx, o); err != nil {
		return nil, err
	}
	sp := &headlessexperimental.ScreenshotParams{
		Format:           headlessexperimental.ScreenshotParamsFormatPng,
		OptimizeForSpeed: true,
	}
	if r.format == screen.JPEG {
		sp.Format = headlessexperimental.ScreenshotParamsFormatJpeg
		sp.Quality = new(int64(r.quality))
	}
	return f.shot(ctx, o, sp)
}

// shot runs frames with a screenshot until one comes back of o's size, at
// most maxEmptyShots.
func (f *frameControl) shot(ctx context.Context, o output, sp *headlessexperimental.ScreenshotParams) ([]byte, error) {
	for range maxEmptyShots {
		res, err := f.frame(ctx, sp)
		if err != nil {
			return nil, err
		}
		if len(res.ScreenshotData) == 0 {
			continue
		}
		// A frame drawn before the window took its new size is of the old
		// size: run another.
		if _, size, err := imageSize(res.ScreenshotData); err == nil && size != o.size {
			continue
		}
		return res.ScreenshotData, nil
	}
	return nil, fmt.Errorf("%s: no screenshot of the %dx%d window in %d frames",
		headlessexperimental.CommandBeginFrame, o.size.W, o.size.H, maxEmptyShots)
}

// framed runs fn on a goroutine of its own and runs frames until it
// returns, and then one more: Chromium answers some input (a wheel turn)
// before the page has seen it, which happens in the page's next frame. A
// frame that fails (the page hangs, a dialog opens) ends fn's wait too.
func (f *frameControl) framed(ctx context.Context, fn func(context.Context) error) error {
	if err := f.pump(ctx, fn); err != nil {
		return err
	}
	_, err := f.frame(ctx, nil)
	return err
}

// pump runs fn on a goroutine of its own and runs frames until it returns.
func (f *frameControl) pump(ctx context.Context, fn func(context.Context) error) error {
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- fn(fctx) }()
	for {
		if _, err := f.frame(fctx, nil); err != nil {
			cancel()
			if ferr := <-done; ferr != nil && !errors.Is(ferr, context.Canceled) {
				return ferr
			}
			return err
		}
		t := time.NewTimer(framedPoll)
		select {
		case err := <-done:
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// pointer returns the window's scale. A wheel event first makes the
// window show the viewport unscaled: Chromium scrolls by the event's
// deltas in window pixels but reports them to the page unscaled, so in a
// scaled window a page would scroll by other amounts than its wheel
// events say.
func (f *frameControl) pointer(ctx context.Context, wheel bool) (float64, error) {
	if wheel && f.out.scale != 1 {
		if err := f.apply(ctx, output{size: f.d.cfg.Viewport, scale: 1, zoom: f.out.zoom}); err != nil {
			return 0, err
		}
		// Input is routed with the window's geometry as of the last
		// frame: draw the new one before the event.
		if err := f.quietFrames(ctx); err != nil {
			return 0, err
		}
	}
	return f.out.scale, nil
}

// maxQuietFrames bounds the frames quietFrames runs.
const maxQuietFrames = 10

// quietFrames runs frames until one has no damage, at most maxQuietFrames.
func (f *frameControl) quietFrames(ctx context.Context) error {
	for range maxQuietFrames {
		res, err := f.frame(ctx, nil)
		if err != nil || !res.HasDamage {
			return err
		}
	}
	return nil
}
