package cdp

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/headlessexperimental"
	"github.com/chromedp/cdproto/page"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// The live view (Display.Watch) shows the page as it changes, for people
// watching a session, without costing the steps anything while nobody
// watches, and little while someone does. A watch starts with a frame of
// the page as it is, and then sends its changes.
//
// Between steps, while no capture or action holds the display, the view
// looks at the page once an interval: in FrameControl mode it runs a frame
// (the page is drawn only then), in Screencast mode it reads the count of
// frames the page drew. When the page drew something new, it captures it
// at the live size (Page.captureScreenshot of the viewport, scaled: at
// 800x500 about half the time of one at 1280x800, measured),
// under the display's lock. A page that does not change costs one frame
// per interval in FrameControl mode, nothing in Screencast mode, and sends
// nothing. Right after a capture, whose screenshot shows the page, the
// view waits two intervals: a session that steps back to back does not
// wait for it.
//
// During a capture's settle that runs longer than an interval (a page
// that loads or animates), in FrameControl mode the frame after one that
// drew something new takes a screenshot of the window (the model's size)
// when a live frame is due. In Screencast mode a capture shows only its
// own screenshot.

// liveEchoLooks is how many looks after its own capture the live view
// takes one more frame for that capture's (live.echo).
const liveEchoLooks = 3

// liveQuality is the JPEG quality of live frames by default.
const liveQuality = 60

// live is the state of a display's live view.
type live struct {
	mu      sync.Mutex
	each    func(screen.LiveFrame) // nil while nobody watches
	o       screen.LiveOptions
	last    time.Time // when the last frame was handed on
	seq     int       // the display's capture count at the last look; -1 before it
	settled time.Time // when the view saw that a capture had run
	drawn   int64     // Screencast: the page's frame count at the last look
	// echo counts, in Screencast mode, the looks that may still see the
	// one frame the view's own capture drew at its last look: that frame
	// can come late under load, after the next look, and taken for the
	// page's it made the view capture a static page every other look.
	echo int
	sent []byte // the last frame handed on
	// ticks counts the looks at the page the view has taken, and grabs
	// its captures (tests wait on them).
	ticks, grabs atomic.Int64
}

// errWatched refuses a second watcher of a display.
var errWatched = errors.New("the display is already watched")

// Watch shows the display live: see screen.Watcher. Frames are JPEG
// images that fit in o.Size; those taken during a capture's settle are of
// the capture's size.
func (d *Display) Watch(ctx context.Context, o screen.LiveOptions, each func(screen.LiveFrame)) error {
	o.Interval = cmp.Or(o.Interval, screen.DefaultLiveInterval)
	o.Quality = cmp.Or(o.Quality, liveQuality)
	if _, err := d.captureRequest(screen.CaptureOptions{Size: o.Size, Format: screen.JPEG, Quality: o.Quality}); err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	if err := d.live.start(o, each); err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer d.live.stop()
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	for {
		if cause := d.goneCause(); cause != "" {
			return fmt.Errorf("watch: %s: %w", cause, screen.ErrGone)
		}
		d.liveLook(ctx)
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-d.closed:
			return fmt.Errorf("watch: display closed: %w", screen.ErrGone)
		case <-tick.C:
		}
	}
}

func (l *live) start(o screen.LiveOptions, each func(screen.LiveFrame)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.each != nil {
		return errWatched
	}
	l.each, l.o, l.last, l.seq, l.settled, l.drawn, l.echo, l.sent = each, o, time.Time{}, -1, time.Time{}, -1, 0, nil
	return nil
}

func (l *live) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.each = nil
}

// due reports whether a live frame would be handed on at now.
func (l *live) due(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.each != nil && now.Sub(l.last) >= l.o.Interval
}

// offer hands f on, if someone watches and it is not the frame handed on
// last again (the same pixels encode to the same bytes).
func (l *live) offer(f screen.LiveFrame) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.each == nil || bytes.Equal(f.Data, l.sent) {
		return
	}
	l.last, l.sent = time.Now(), f.Data
	l.each(f)
}

func (l *live) options() screen.LiveOptions {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.o
}

// liveLook takes one look at the page for the live view, if a frame is
// due and nothing else holds the display, and captures it if it changed.
func (d *Display) liveLook(ctx context.Context) {
	now := time.Now()
	if !d.live.due(now) || !d.mu.TryLock() {
		return // a capture or an action runs
	}
	defer d.mu.Unlock()
	if d.check() != nil {
		return
	}
	if _, open, _ := d.state.currentDialog(); open || d.dialogElsewhere() != "" {
		return // no frame is drawn until the dialog closes
	}
	l := &d.live
	l.mu.Lock()
	first := l.last.IsZero()
	captured := l.seq >= 0 && l.seq != d.seq
	if captured {
		l.settled = now
	}
	l.seq = d.seq
	wait := !first && now.Sub(l.settled) < 2*l.o.Interval
	l.mu.Unlock()
	if wait {
		return // the capture's screenshot shows the page
	}
	d.live.ticks.Add(1)
	changed, err := d.liveChanged(ctx)
	if err != nil {
		d.log.DebugContext(ctx, "live view: look at the page", "err", err)
		return
	}
	if !changed && !first {
		return
	}
	f, err := d.liveGrab(ctx)
	if err != nil {
		d.log.DebugContext(ctx, "live view: capture", "err", err)
		return
	}
	d.live.offer(f)
}

// liveChanged reports whether the page drew anything new since the view's
// last look. In FrameControl mode it runs a frame; the frame right after a
// screenshot always reports damage (see keptShot), so there a second one
// tells.
func (d *Display) liveChanged(ctx context.Context) (bool, error) {
	f, ok := d.r.(*frameControl)
	if !ok {
		n := d.state.frameCount()
		l := &d.live
		l.mu.Lock()
		defer l.mu.Unlock()
		drew := n - l.drawn
		changed := drew != 0
		switch {
		case l.echo > 0 && drew == 1: // the view's own capture's frame
			changed, l.echo = false, 0
		case drew != 0:
			l.echo = 0
		case l.echo > 0:
			l.echo--
		}
		l.drawn = n
		return changed, nil
	}
	after := f.afterShot
	for {
		res, err := f.frame(ctx, nil)
		if err != nil || !res.HasDamage {
			return false, err
		}
		if !after {
			return true, nil
		}
		after = false
	}
}

// liveGrab captures the page at the live size: Page.captureScreenshot of
// the viewport, scaled by the browser (in FrameControl mode, with frames
// run until it returns). The capture's own redraw is not the page's.
func (d *Display) liveGrab(ctx context.Context) (screen.LiveFrame, error) {
	o := d.live.options()
	req, err := d.captureRequest(screen.CaptureOptions{Size: o.Size, Format: screen.JPEG, Quality: o.Quality})
	if err != nil {
		return screen.LiveFrame{}, err
	}
	metrics, err := call(ctx, d, page.GetLayoutMetrics, cdp.Empty{})
	if err != nil {
		return screen.LiveFrame{}, err
	}
	var scroll actions.Point
	if v := metrics.CSSVisualViewport; v != nil {
		scroll = actions.Pt(v.PageX, v.PageY)
	}
	taken := time.Now()
	d.live.grabs.Add(1)
	var data []byte
	if f, ok := d.r.(*frameControl); ok {
		err = f.pump(ctx, func(ctx context.Context) error {
			res, err := call(ctx, d, page.CaptureScreenshot, clipParams(req, scroll, d.zoom()))
			data = res.Data
			return err
		})
	} else {
		data, err = d.r.grab(ctx, req, scroll) // Screencast's grab brackets its own redraw
		d.live.mu.Lock()
		d.live.drawn, d.live.echo = d.state.frameCount(), liveEchoLooks
		d.live.mu.Unlock()
	}
	if err != nil {
		return screen.LiveFrame{}, err
	}
	format, size, err := imageSize(data)
	if err != nil {
		return screen.LiveFrame{}, fmt.Errorf("the browser returned a bad image: %w", err)
	}
	return screen.LiveFrame{Data: data, Format: format, Size: size, Time: taken}, nil
}

// liveShot returns the screenshot parameters for the next frame of a
// FrameControl settle that started at start, if it should be a live frame:
// someone watches, the settle has run longer than an interval (a short one
// ends in the capture's own screenshot), the frame before drew something
// new, and a frame is due. The settle hands the screenshot on with
// liveShown.
func (f *frameControl) liveShot(damaged bool, start time.Time) *headlessexperimental.ScreenshotParams {
	now := time.Now()
	if !damaged || !f.d.live.due(now) || f.out.size.Empty() {
		return nil
	}
	o := f.d.live.options()
	if now.Sub(start) < o.Interval {
		return nil
	}
	return &headlessexperimental.ScreenshotParams{Format: headlessexperimental.ScreenshotParamsFormatJpeg,
		Quality: new(int64(o.Quality)), OptimizeForSpeed: true}
}

// liveShown hands on the screenshot of a frame that liveShot asked for,
// if it is a JPEG of the window's size (a frame drawn before the window
// took its size is not).
func (f *frameControl) liveShown(sp *headlessexperimental.ScreenshotParams, res headlessexperimental.BeginFrameResult) {
	data := res.ScreenshotData
	if sp == nil || len(data) == 0 || !bytes.HasPrefix(data, []byte{0xff, 0xd8}) {
		return
	}
	if _, size, err := imageSize(data); err == nil && size == f.out.size {
		f.d.live.offer(screen.LiveFrame{Data: data, Format: screen.JPEG, Size: size, Time: time.Now()})
	}
}

// onTabEvent is the listener of every tab of the display beside its
// pageState: the page log takes its events.
func (d *Display) onTabEvent(ev any) {
	d.plog.onEvent(ev)
}
