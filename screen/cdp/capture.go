package cdp

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/jpeg"
	"image/png"
	"math"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// Capture waits until the page is quiet (bounded by the settle timeout),
// then returns a screenshot of o.Region (the viewport if empty) scaled by the
// browser to o.Size (the region's CSS size if zero). A page that never goes
// quiet is captured anyway, with Frame.Settle.TimedOut and Reason set. The
// image is never larger than o.Size; Frame.Sent is its decoded size.
func (d *Display) Capture(ctx context.Context, o screen.CaptureOptions) (screen.Shot, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	shot, err := d.capture(ctx, o)
	switch {
	case errors.Is(err, screen.ErrGone) && d.tabClosed():
		// The active tab closed while it was captured (a page's
		// window.close()): show the tab that takes its place.
		shot, err = d.capture(ctx, o)
	case errors.Is(err, errWedged):
		// The window stopped drawing: its page, in a new one.
		if rerr := d.reopen(ctx); rerr != nil {
			return shot, errors.Join(err, rerr)
		}
		shot, err = d.capture(ctx, o)
	}
	return shot, err
}

// tabClosed reports whether the active tab closed while the browser and
// the display live on.
func (d *Display) tabClosed() bool {
	return d.cur != nil && d.cur.detached() && !d.browserLost() && !d.isClosed()
}

func (d *Display) isClosed() bool {
	select {
	case <-d.closed:
		return true
	default:
		return false
	}
}

func (d *Display) capture(ctx context.Context, o screen.CaptureOptions) (screen.Shot, error) {
	if err := d.ready(ctx); err != nil {
		return screen.Shot{}, fmt.Errorf("capture: %w", err)
	}
	req, err := d.captureRequest(o)
	if err != nil {
		return screen.Shot{}, fmt.Errorf("capture: %w", err)
	}
	timeout := o.SettleTimeout
	if timeout == 0 {
		timeout = d.cfg.SettleTimeout
	}
	if _, open, _ := d.state.currentDialog(); open {
		return d.blockedShot(req)
	}
	settled, view, err := d.r.settle(ctx, req, timeout)
	if errors.Is(err, errBlocked) {
		if err := d.autoDismiss(ctx); err != nil {
			return screen.Shot{}, fmt.Errorf("capture: %w", err)
		}
		if _, open, _ := d.state.currentDialog(); open {
			return d.blockedShot(req)
		}
		settled, view, err = d.r.settle(ctx, req, timeout)
	}
	if err != nil {
		return screen.Shot{}, fmt.Errorf("capture: %w", err)
	}
	// A tab that opened while the page settled is the one to show.
	if n := len(d.all); d.syncTabs(ctx) == nil && len(d.all) != n {
		if err := d.check(); err != nil {
			return screen.Shot{}, fmt.Errorf("capture: %w", err)
		}
		if settled, view, err = d.r.settle(ctx, req, timeout); err != nil {
			return screen.Shot{}, fmt.Errorf("capture: %w", err)
		}
	}

	// The scroll offset is known before the image is drawn: the settle's
	// last answer told it (frame control, the whole viewport), or it is
	// asked now.
	scroll, pinch := view.scroll, view.pinch
	if !view.ok {
		metrics, err := call(ctx, d, page.GetLayoutMetrics, cdp.Empty{})
		if errors.Is(err, errBlocked) {
			return d.blockedShot(req)
		}
		if err != nil {
			return screen.Shot{}, fmt.Errorf("capture: %w", err)
		}
		scroll, pinch = actions.Point{}, 1.0
		if v := metrics.CSSVisualViewport; v != nil {
			scroll = actions.Pt(v.PageX, v.PageY)
			if v.Zoom > 0 {
				pinch = v.Zoom
			}
		}
	}
	taken := time.Now()
	data, err := d.r.grab(ctx, req, scroll)
	if errors.Is(err, errBlocked) {
		return d.blockedShot(req)
	}
	if err != nil {
		return screen.Shot{}, fmt.Errorf("capture: %w", err)
	}
	format, sent, err := imageSize(data)
	if err != nil {
		return screen.Shot{}, fmt.Errorf("capture: browser returned a bad image: %w", err)
	}
	if format != req.format || sent.W > req.size.W || sent.H > req.size.H ||
		abs(sent.W-req.want.W) > 1 || abs(sent.H-req.want.H) > 1 {
		return screen.Shot{}, fmt.Errorf("capture: asked the browser for a %dx%d %s, got a %dx%d %s",
			req.want.W, req.want.H, req.format, sent.W, sent.H, format)
	}
	d.log.DebugContext(ctx, "capture", logKeyFrame, d.seq+1, logKeySettle, settled.Waited, logKeyTimedOut, settled.TimedOut)
	shot := d.shot(req, data, sent, format, scroll, pinch*d.zoom(), settled, taken)
	d.last.req, d.last.data, d.last.frame = req, data, shot.Frame
	return shot, nil
}

// shot numbers a capture and gathers the notes for the model.
func (d *Display) shot(req captureReq, data []byte, sent screen.Size, format screen.Format, scroll actions.Point, zoom float64,
	settled screen.Settle, taken time.Time) screen.Shot {
	d.seq++
	url := d.state.currentURL()
	events := append(d.notes.take(), d.state.takeEvents()...)
	if d.seq > 1 && url != d.lastURL {
		events = append(events, "the page is now at "+url)
	}
	if dl, open, _ := d.state.currentDialog(); open {
		events = append(events, dl.Note())
	}
	d.lastURL = url
	dpr := d.cfg.DPR
	return screen.Shot{
		Frame: screen.Frame{
			ID:       fmt.Sprintf("f%04d", d.seq),
			Time:     taken,
			URL:      url,
			Viewport: d.cfg.Viewport,
			DPR:      dpr,
			Clip:     req.clip,
			Capture:  screen.Size{W: round(req.clip.Dx() * dpr), H: round(req.clip.Dy() * dpr)},
			Sent:     sent,
			Scroll:   scroll,
			Zoom:     zoom,
			Format:   format,
			Settle:   settled,
		},
		Data:   data,
		Events: events,
		Log:    d.plog.take(),
	}
}

// blockedShot is the capture while a JavaScript dialog blocks the page,
// when the browser draws nothing new: the previous image of the same
// request again, or a blank one, with the dialog in the notes.
func (d *Display) blockedShot(req captureReq) (screen.Shot, error) {
	data, scroll, zoom := d.last.data, d.last.frame.Scroll, d.last.frame.Zoom
	if data == nil || d.last.req != req {
		var err error
		if data, err = screen.BlankImage(req.want, req.format, req.quality); err != nil {
			return screen.Shot{}, fmt.Errorf("capture: %w", err)
		}
		scroll, zoom = actions.Point{}, d.zoom()
	}
	_, sent, err := imageSize(data)
	if err != nil {
		return screen.Shot{}, fmt.Errorf("capture: %w", err)
	}
	shot := d.shot(req, data, sent, req.format, scroll, zoom,
		screen.Settle{Reason: "a JavaScript dialog blocks the page; the screenshot shows the page as it was drawn last"}, time.Now())
	return shot, nil
}

// ready runs before every Capture and Perform, under mu: it fails if the
// display is gone, follows tabs that opened or closed, and dismisses a
// dialog if the display is configured to.
func (d *Display) ready(ctx context.Context) error {
	if err := d.check(); err != nil && !d.tabClosed() {
		return err
	}
	if err := d.syncTabs(ctx); err != nil {
		return err
	}
	if err := d.check(); err != nil {
		return err
	}
	return d.autoDismiss(ctx)
}

// captureReq is a validated capture request.
type captureReq struct {
	clip    actions.Rect // CSS px of the viewport
	size    screen.Size  // the largest image allowed
	want    screen.Size  // the image the browser should return
	scale   float64      // output px per device px
	format  screen.Format
	quality int
}

// captureRequest validates o against the display's viewport.
func (d *Display) captureRequest(o screen.CaptureOptions) (captureReq, error) {
	vp := d.cfg.Viewport
	r := captureReq{format: cmp.Or(o.Format, screen.PNG), quality: cmp.Or(o.Quality, 80)}
	if r.format != screen.PNG && r.format != screen.JPEG {
		return r, fmt.Errorf("%w: image format %q (want png or jpeg)", actions.ErrInvalid, o.Format)
	}
	if r.quality < 1 || r.quality > 100 {
		return r, fmt.Errorf("%w: JPEG quality %d (want 1..100)", actions.ErrInvalid, o.Quality)
	}
	clip, err := screen.ClampRegion(o.Region, vp)
	if err != nil {
		return r, err
	}
	r.clip = clip
	r.size = o.Size
	if r.size == (screen.Size{}) {
		r.size = screen.Size{W: round(r.clip.Dx()), H: round(r.clip.Dy())}
	}
	if r.size.Empty() || r.size.W > 16384 || r.size.H > 16384 {
		return r, fmt.Errorf("%w: image size %dx%d", actions.ErrInvalid, o.Size.W, o.Size.H)
	}
	dpr := d.cfg.DPR
	r.scale = min(float64(r.size.W)/(r.clip.Dx()*dpr), float64(r.size.H)/(r.clip.Dy()*dpr))
	r.want = screen.Size{
		W: min(r.size.W, round(r.clip.Dx()*dpr*r.scale)),
		H: min(r.size.H, round(r.clip.Dy()*dpr*r.scale)),
	}
	return r, nil
}

// imageSize reads the format and size of a PNG or JPEG from its header.
func imageSize(data []byte) (screen.Format, screen.Size, error) {
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		c, err := png.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			return "", screen.Size{}, err
		}
		return screen.PNG, screen.Size{W: c.Width, H: c.Height}, nil
	case bytes.HasPrefix(data, []byte{0xff, 0xd8}):
		c, err := jpeg.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			return "", screen.Size{}, err
		}
		return screen.JPEG, screen.Size{W: c.Width, H: c.Height}, nil
	}
	return "", screen.Size{}, errors.New("neither PNG nor JPEG")
}

// settle is the settle of Screencast mode: it waits until the page is quiet
// or timeout has passed; a negative timeout does not wait. It fails only if
// ctx ends. Once the other signals are quiet it asks the page what still
// animates (animationsJS), unless no input came and no frame was drawn
// since the page last answered that nothing did: a page at rest costs no
// round trip.
func (d *Display) settle(ctx context.Context, timeout time.Duration) (screen.Settle, error) {
	if timeout < 0 {
		return screen.Settle{}, nil
	}
	start := time.Now()
	deadline := start.Add(timeout)
	frames := d.state.frameCount()
	if n := d.state.inputCount(); n != d.fenced {
		// Let the input's effects reach the page first: scrolls applied,
		// transitions started, requests sent.
		if err := d.frameFence(ctx, deadline); fatal(ctx, err) {
			return screen.Settle{}, fmt.Errorf("settle: %w", err)
		}
		d.state.markFenced(time.Now())
		d.fenced = n
	}
	probeErrs := 0
	for {
		now := time.Now()
		q := d.state.status(now, d.cfg.QuietWindow, timeout)
		if q.quiet && d.idleSinceProbe() {
			return screen.Settle{Waited: now.Sub(start)}, nil
		}
		if q.quiet {
			probeFrames, probeInputs := d.state.frameCount(), d.state.inputCount()
			a, err := d.animations(ctx)
			if fatal(ctx, err) {
				return screen.Settle{}, fmt.Errorf("settle: %w", err)
			}
			now = time.Now()
			switch {
			case err != nil && probeErrs < maxProbeErrs:
				// The document went away under the question (a
				// navigation): ask again when the events tell more.
				probeErrs++
				q = quietness{wake: now.Add(animationPoll), reason: "the page is changing documents"}
			case err != nil:
				// A page that cannot answer, quiet otherwise.
				return screen.Settle{Waited: now.Sub(start)}, nil
			case a.running() || a.endless > 0:
				a.css += a.endless
				q = quietness{wake: now.Add(animationPoll), reason: a.String()}
			case d.state.status(now, d.cfg.QuietWindow, timeout).quiet:
				d.probedIdle(probeFrames, probeInputs)
				return screen.Settle{Waited: now.Sub(start)}, nil
			default:
				continue // something happened while we asked
			}
		}
		waited := now.Sub(start)
		if !now.Before(deadline) {
			reason := q.reason
			if n := d.state.frameCount() - frames; n > 0 {
				reason += fmt.Sprintf(" (%d new frames in %v)", n, waited.Round(time.Millisecond))
			}
			return screen.Settle{Waited: waited, TimedOut: true, Reason: reason}, nil
		}
		wake := deadline
		if !q.wake.IsZero() && q.wake.Before(wake) {
			wake = q.wake
		}
		t := time.NewTimer(wake.Sub(now))
		select {
		case <-ctx.Done():
			t.Stop()
			return screen.Settle{}, fmt.Errorf("settle: %w", context.Cause(ctx))
		case <-d.closed:
			t.Stop()
			return screen.Settle{}, fmt.Errorf("settle: display closed: %w", screen.ErrGone)
		case <-d.state.changed:
		case <-t.C:
		}
		t.Stop()
	}
}

// fatal reports whether an error of a settle probe ends the capture: the
// display is gone, the page does not answer, or ctx ended. Other errors
// (a document replaced during the question) only make settle ask again.
func fatal(ctx context.Context, err error) bool {
	return err != nil && (ctx.Err() != nil || errors.Is(err, screen.ErrGone) || errors.Is(err, ErrUnresponsive))
}

// frameFence waits until the page has begun a new animation frame, so
// that the effects of input delivered before it are visible to the other
// signals: the main thread has the compositor's scroll offset, style
// changes have started their transitions, and navigations and requests
// that the input started have been reported. A page that begins no frame
// before deadline (or within maxFence) is left to the settle loop.
func (d *Display) frameFence(ctx context.Context, deadline time.Time) error {
	if limit := time.Now().Add(maxFence); limit.Before(deadline) {
		deadline = limit
	}
	fctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	_, err := d.evalInt(fctx, frameFenceJS)
	if err != nil && ctx.Err() == nil && fctx.Err() != nil {
		return nil
	}
	return err
}

// frameFenceJS resolves at the page's next animation frame, by the timer
// script's function (see timerScript) where the document has it: a page's
// own requestAnimationFrame may be wrapped, or replaced, by its scripts.
var frameFenceJS = `(() => {
	return typeof ` + frameProbeName + ` === "function" ? ` + frameProbeName + `() : new Promise(r => requestAnimationFrame(() => r(0)));
})()`

const (
	// animationPoll is how often settle asks the page about its
	// animations while they run.
	animationPoll = 50 * time.Millisecond
	// maxProbeErrs is how many failed questions to a page that is quiet
	// otherwise settle tolerates before it stops asking.
	maxProbeErrs = 3
	// maxFence bounds the wait for a frame after input: a page that draws
	// none in this time is left to the other signals.
	maxFence = time.Second
)

// evalInt evaluates a settle probe that yields a count. A page whose
// scripts broke the probe (an exception, no number) counts as 0, so that
// settle relies on the other signals.
func (d *Display) evalInt(ctx context.Context, expr string) (int, error) {
	res, err := call(ctx, d, runtime.Evaluate, runtime.EvaluateParams{
		Expression:    expr,
		ReturnByValue: new(true),
		AwaitPromise:  new(true),
		Silent:        new(true),
	})
	if err != nil {
		return 0, err
	}
	if res.ExceptionDetails != nil || res.Result == nil {
		return 0, nil
	}
	var n int
	if err := json.Unmarshal(res.Result.Value, &n); err != nil {
		return 0, nil
	}
	return n, nil
}

func round(f float64) int { return int(math.Round(f)) }

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}

func finite(fs ...float64) bool {
	for _, f := range fs {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return false
		}
	}
	return true
}

// idleSinceProbe reports whether, in Screencast mode, the page has drawn
// no frame and had no input since it last answered that nothing animates.
func (d *Display) idleSinceProbe() bool {
	p := d.idle
	return p.st == d.state && p.frames == d.state.frameCount() && p.inputs == d.state.inputCount()
}

// probedIdle records that the page answered that nothing animates, when it
// had drawn frames frames and had inputs inputs.
func (d *Display) probedIdle(frames, inputs int64) {
	d.idle.st, d.idle.frames, d.idle.inputs = d.state, frames, inputs
}
