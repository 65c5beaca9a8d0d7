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
	"github.com/chromedp/cdproto/runtime"
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
	// kept is the last screenshot a frame took (see keptShot); clean
	// says that the last frame ended a settle without damage.
	kept  *keptShot
	clean bool
	// afterShot says that the last frame took a screenshot: the frame
	// after one always reports damage, whether the page changed or not.
	afterShot bool
	// changes is the page's count of changes at its last answer to
	// animationsJS, if probed.
	changes int64
	probed  bool
	// held says that this display holds the browser's frame lock across
	// frames (hold), so that frame does not take it again.
	held bool
	mu   *sync.Mutex // the browser's frame lock, or one of its own in unit tests
	// pending is the tab's frame that the display stopped waiting for
	// before Chromium answered it, if any.
	pending *unanswered
}

// keptShot is the last screenshot a frame took, and what it is of. It
// shows the page as it is while no later frame drew anything new. The
// frame right after a screenshot frame always reports damage, so that one
// frame cannot tell; there the page's count of changes must be the same
// after it as at the last answer before the screenshot, with nothing
// animating, no input and no protocol event since (checked).
type keptShot struct {
	out     output
	sp      headlessexperimental.ScreenshotParams
	data    []byte
	checked bool
	// What the page had said and done at the screenshot: its count of
	// changes (-1: unknown), the display's input count and the page's
	// last activity.
	changes  int64
	inputs   int64
	activity time.Time
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
	// A screenshot can come back empty (or of the old size) while a new
	// document or window size has drawn nothing yet. shot runs its first
	// burstShots frames back to back, then paced, and gives up once it
	// has run maxEmptyShots frames and shotPatience has passed: a loaded
	// machine can take longer than any fixed count of back-to-back frames
	// to draw a new window (in CI, with a load average near 15, a new
	// renderer's first frames came back empty for over 2 s).
	burstShots    = 3
	maxEmptyShots = 10
	shotPatience  = 10 * time.Second
	// wedgePatience is how long a window whose every screenshot came back
	// empty is given before it counts as wedged (errWedged). Under load
	// (CI, many browsers), about 1 new window in a few hundred never
	// draws again: its frames come back empty for good while its page
	// still runs scripts and answers; Page.captureScreenshot hangs, and
	// neither a resize nor a reload brings it back. A new window at the
	// same URL draws at its first frame (measured: 4 of 4 wedged windows).
	wedgePatience = 3 * time.Second
)

// errWedged marks a frame-controlled window that draws nothing any more:
// Capture then opens its page again in a new window (reopen).
var errWedged = errors.New("the window draws nothing")

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
	f.kept, f.clean = nil, false
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

// lock returns the browser's frame lock. Frames of two displays of one
// frame-controlled browser must not overlap, or Chromium answers with
// frames of the wrong window and, under load, exits: the browser's lock
// (Browser.frameMu) orders them.
func (f *frameControl) lock() *sync.Mutex {
	if f.mu == nil {
		f.mu = f.d.frameMu
		if f.mu == nil {
			f.mu = new(sync.Mutex) // unit tests: no browser to share
		}
	}
	return f.mu
}

// hold takes the browser's frame lock until unhold, for frames that run
// back to back: the frames of a settle's burst, a screenshot's. Taking
// it for each frame instead would queue each frame of a step behind
// every other display's, so that on a browser shared by many sessions
// every step took as long as all of them together. A display lets go
// whenever it waits (between paced frames): others' frames run then.
// Calls to hold and unhold of one display come from the goroutine that
// holds the display's lock.
func (f *frameControl) hold() {
	if !f.held {
		f.lock().Lock()
		f.held = true
	}
}

// unhold lets go of what hold took.
func (f *frameControl) unhold() {
	if f.held {
		f.held = false
		f.lock().Unlock()
	}
}

// frame runs one frame, with a screenshot if shot is not nil, under the
// browser's frame lock (taken for it, unless held). It first waits for a
// frame of the tab that an earlier call stopped waiting for (unanswered).
func (f *frameControl) frame(ctx context.Context, shot *headlessexperimental.ScreenshotParams) (headlessexperimental.BeginFrameResult, error) {
	if !f.held {
		mu := f.lock()
		mu.Lock()
		defer mu.Unlock()
	}
	res, err := f.begin(ctx, shot)
	after := f.afterShot
	f.clean, f.afterShot = false, shot != nil && err == nil
	switch {
	case err != nil || shot != nil:
		f.kept = nil // grab keeps its own
	case res.HasDamage && !after:
		f.kept = nil
	case !res.HasDamage && after && f.kept != nil:
		f.kept.checked = true // nothing changed since the screenshot
	}
	return res, err
}

// unanswered is a beginFrame that the display stopped waiting for before
// Chromium answered it: a JavaScript dialog opened (the page draws nothing
// while one is open), the command timed out, or the caller gave up.
// Chromium runs it all the same and refuses every other frame of the tab
// ("Another frame is pending") until it ends, so the next frame waits for
// it first.
type unanswered struct {
	t        cdp.Session // the tab it runs on
	done     chan struct{}
	timedOut bool // it had no answer within the command timeout
}

// frameAbandon bounds how long a frame nobody waits for any more is kept
// track of: after it, the tab counts as stalled.
const frameAbandon = 2 * time.Minute

// stallGrace is how long the next frame waits for a frame that already had
// no answer within the command timeout before it asks whether the page
// answers at all.
const stallGrace = 100 * time.Millisecond

// begin sends one beginFrame and waits for its answer, as call does: until
// the command timeout, ctx's end, or a JavaScript dialog. The command runs
// on a goroutine of the display's, which receives Chromium's answer even
// after begin stopped waiting for it (f.pending).
func (f *frameControl) begin(ctx context.Context, shot *headlessexperimental.ScreenshotParams) (headlessexperimental.BeginFrameResult, error) {
	var res headlessexperimental.BeginFrameResult
	d := f.d
	if err := f.awaitPending(ctx); err != nil {
		return res, err
	}
	if d.isClosed() {
		return res, fmt.Errorf("%s: display closed: %w", headlessexperimental.CommandBeginFrame, screen.ErrGone)
	}
	type answer struct {
		res headlessexperimental.BeginFrameResult
		err error
	}
	ch := make(chan answer, 1)
	done := make(chan struct{})
	bg := d.bg
	if bg == nil {
		bg = context.Background() // unit tests' displays
	}
	fctx, cancel := context.WithTimeout(bg, frameAbandon)
	t := d.t
	d.wg.Go(func() {
		defer cancel()
		defer close(done)
		r, err := cdp.Call(fctx, t, headlessexperimental.BeginFrame, headlessexperimental.BeginFrameParams{Screenshot: shot})
		ch <- answer{r, err}
	})
	timeout := d.cfg.CommandTimeout
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var err error
	select {
	case a := <-ch:
		if a.err != nil {
			return res, d.translate(ctx, headlessexperimental.CommandBeginFrame, timeout, a.err)
		}
		return a.res, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-d.state.dialogOpened().Done():
		err = context.Canceled
	case <-anyDone(d.dialogs.context()):
		err = context.Canceled
	case <-timer.C:
		err = context.DeadlineExceeded
	}
	f.pending = &unanswered{t: t, done: done, timedOut: errors.Is(err, context.DeadlineExceeded)}
	if f.pending.timedOut && d.state.openDialog() == "" && d.dialogElsewhere() == "" {
		return res, f.stalled(ctx, timeout)
	}
	return res, d.translate(ctx, headlessexperimental.CommandBeginFrame, timeout, err)
}

// anyDone is ctx.Done(), or nil (never) for a nil ctx.
func anyDone(ctx context.Context) <-chan struct{} {
	if ctx == nil {
		return nil
	}
	return ctx.Done()
}

// awaitPending waits for the tab's frame that an earlier call stopped
// waiting for, if any: up to the command timeout, or stallGrace when that
// frame already had no answer within the command timeout. A frame still
// unanswered then while no dialog blocks the page means the window stopped
// drawing (errWedged), if the page still answers, or that the page hangs.
func (f *frameControl) awaitPending(ctx context.Context) error {
	p := f.pending
	if p == nil {
		return nil
	}
	d := f.d
	if p.t != d.t {
		f.pending = nil // another tab's frame: it holds up only that tab
		return nil
	}
	patience := d.cfg.CommandTimeout
	if p.timedOut {
		patience = stallGrace
	}
	timer := time.NewTimer(patience)
	defer timer.Stop()
	select {
	case <-p.done:
		f.pending = nil
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", headlessexperimental.CommandBeginFrame, context.Cause(ctx))
	case <-d.state.dialogOpened().Done():
		return d.translate(ctx, headlessexperimental.CommandBeginFrame, patience, context.Canceled)
	case <-anyDone(d.dialogs.context()):
		return d.translate(ctx, headlessexperimental.CommandBeginFrame, patience, context.Canceled)
	case <-timer.C:
	}
	if d.state.openDialog() != "" || d.dialogElsewhere() != "" {
		return d.translate(ctx, headlessexperimental.CommandBeginFrame, patience, context.Canceled)
	}
	p.timedOut = true
	return f.stalled(ctx, d.cfg.CommandTimeout)
}

// stalled says why a frame had no answer within timeout: the window
// stopped drawing while its page still runs (errWedged: Capture opens the
// page again in a new window), or the page itself does not answer
// (ErrUnresponsive), which a quick question to the page tells apart.
func (f *frameControl) stalled(ctx context.Context, timeout time.Duration) error {
	d := f.d
	if cause := d.goneCause(); cause != "" {
		return fmt.Errorf("%s: %s: %w", headlessexperimental.CommandBeginFrame, cause, screen.ErrGone)
	}
	if _, err := callWithin(ctx, d, min(timeout, time.Second), runtime.Evaluate, runtime.EvaluateParams{Expression: "0"}); err != nil {
		return fmt.Errorf("%s: no answer within %v: %w", headlessexperimental.CommandBeginFrame, timeout, ErrUnresponsive)
	}
	return fmt.Errorf("%s: no answer within %v while the page answers: %w", headlessexperimental.CommandBeginFrame, timeout, errWedged)
}

// answered records the page's answer to animationsJS: it checks a kept
// screenshot whose next frame reported damage.
func (f *frameControl) answered(a animations) {
	if k := f.kept; k != nil && !k.checked {
		if a.running() || a.changes < 0 || a.changes != k.changes {
			f.kept = nil
		} else {
			k.checked = true
		}
	}
	f.changes, f.probed = a.changes, true
}

// keep remembers data, the screenshot sp of a frame of o, if it is one.
func (f *frameControl) keep(o output, sp *headlessexperimental.ScreenshotParams, data []byte) {
	if len(data) == 0 {
		return
	}
	if _, size, err := imageSize(data); err != nil || size != o.size {
		return
	}
	st := f.d.state
	st.mu.Lock()
	activity := st.lastActivity
	st.mu.Unlock()
	changes := int64(-1)
	if f.probed {
		changes = f.changes
	}
	f.kept = &keptShot{out: o, sp: *sp, data: data, changes: changes, inputs: st.inputCount(), activity: activity}
}

// keptFor returns the kept screenshot if it shows the page as it is now,
// as o and sp ask: a settle has just ended on a frame without damage, the
// screenshot is checked, and no input or protocol event came since.
func (f *frameControl) keptFor(o output, sp *headlessexperimental.ScreenshotParams) ([]byte, bool) {
	k := f.kept
	if !f.clean || k == nil || !k.checked || k.out != o || k.out != f.out || !sameShot(&k.sp, sp) {
		return nil, false
	}
	st := f.d.state
	st.mu.Lock()
	activity := st.lastActivity
	st.mu.Unlock()
	if st.inputCount() != k.inputs || !activity.Equal(k.activity) {
		return nil, false
	}
	return k.data, true
}

// sameShot reports whether two screenshot parameters ask for the same
// encoding.
func sameShot(a, b *headlessexperimental.ScreenshotParams) bool {
	return a.Format == b.Format && a.OptimizeForSpeed == b.OptimizeForSpeed && samePtr(a.Quality, b.Quality)
}

func samePtr[T comparable](a, b *T) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// settle runs frames until one draws nothing new while the page loads
// nothing and nothing animates, or until timeout. The first frames after
// input run back to back; after burstFrames, and while the page waits for
// the network or animates, frames run at frameInterval.
//
// A frame without damage is not enough: a script animation draws only at
// its steps, and a CSS transition that eases in or waits out a delay draws
// nothing at first. So after input, and after every frame that drew
// something, the page is asked what still animates (animationsJS); the
// question runs while the next frame does, and its answer is also the
// round trip that lets the events the input caused (a request sent, a
// timer set) arrive first. A page that neither got input nor drew is not
// asked: it costs one frame.
//
// A capture whose settle ends as the last screenshot's did, with no frame
// that drew anything new since (see keptShot), gets that screenshot again:
// the same page encoded again would give the same image.
//
// The page's answer also tells its viewport (scroll offset, pinch zoom).
// A settle that ends on an answer asked after the last frame that drew
// anything new returns it for a capture of the whole viewport, which then
// makes no round trip of its own for it: nothing has moved since.
func (f *frameControl) settle(ctx context.Context, r captureReq, timeout time.Duration) (screen.Settle, viewport, error) {
	d := f.d
	start := time.Now()
	o, full := f.outputFor(r)
	if full {
		if err := f.apply(ctx, o); err != nil {
			return screen.Settle{}, viewport{}, fmt.Errorf("settle: %w", err)
		}
	}
	if timeout < 0 {
		return screen.Settle{}, viewport{}, nil
	}
	s := settling{f: f, start: start, deadline: start.Add(timeout), timeout: timeout}
	defer s.stop()
	f.hold()
	defer f.unhold()
	if n := d.state.inputCount(); n != d.fenced {
		d.fenced = n
		s.ask = true
	}
	for {
		begun := time.Now()
		damaged, err := s.frame(ctx)
		if err != nil {
			return screen.Settle{}, viewport{}, fmt.Errorf("settle: %w", err)
		}
		done, err := s.decide(ctx, damaged)
		if err != nil {
			return screen.Settle{}, viewport{}, fmt.Errorf("settle: %w", err)
		}
		if done {
			if !full || s.result.TimedOut {
				return s.result, viewport{}, nil
			}
			return s.result, s.view, nil
		}
		if damaged && s.burst < burstFrames {
			continue
		}
		wake := begun.Add(frameInterval)
		if !s.q.wake.IsZero() && s.q.wake.Before(wake) {
			wake = s.q.wake
		}
		if s.deadline.Before(wake) {
			wake = s.deadline
		}
		f.unhold() // others' frames run while this page waits
		err = f.wait(ctx, wake)
		f.hold()
		if err != nil {
			return screen.Settle{}, viewport{}, fmt.Errorf("settle: %w", err)
		}
	}
}

// settling is the state of one frame-control settle.
type settling struct {
	f               *frameControl
	start, deadline time.Time
	timeout         time.Duration
	ask             bool       // the page must be asked what animates after the next frame
	probe           *animProbe // the question in flight, or answered
	frames, damaged int
	burst           int
	probeErrs       int        // questions that failed
	anim            animations // the last answer
	// view is the viewport of the last answer, if no frame drew anything
	// new since it was asked.
	view   viewport
	q      quietness
	result screen.Settle
}

// animProbe is one animationsJS question, asked on a goroutine of its own.
type animProbe struct {
	done   chan struct{}
	cancel context.CancelFunc
	a      animations
	err    error
}

// frame runs one frame and reports whether it drew anything new. After
// input or damage it sends the question of what animates, which runs
// during the next frame.
func (s *settling) frame(ctx context.Context) (bool, error) {
	live := s.f.liveShot(s.burst > 0, s.start) // a live view's frame, if one is due (live.go)
	res, err := s.f.frame(ctx, live)
	if err != nil {
		return false, err
	}
	s.f.liveShown(live, res)
	s.frames++
	if res.HasDamage {
		s.damaged++
		s.burst++
		s.ask = true
		s.view = viewport{}
	} else {
		s.burst = 0
	}
	if s.ask && (s.probe == nil || s.probe.answered()) {
		if s.probe != nil {
			s.probe.cancel()
		}
		s.probe = s.f.ask(ctx)
		s.ask = false
	}
	return res.HasDamage, nil
}

// decide says whether the page has settled after a frame, or the wait
// timed out; s.result is then the settle. It waits for the answer to the
// question in flight only when nothing else keeps the page busy.
func (s *settling) decide(ctx context.Context, damaged bool) (bool, error) {
	d := s.f.d
	now := time.Now()
	s.q = d.state.status(now, d.cfg.QuietWindow, s.timeout)
	if !damaged && s.q.quiet && (s.probe != nil || s.ask) {
		p := s.probe
		if s.ask {
			// The question in flight was sent before the last frame
			// that drew something: ask again.
			if p != nil {
				p.cancel()
				<-p.done
			}
			p, s.ask = s.f.ask(ctx), false
		}
		s.probe = nil
		// Others' frames run while the page answers (a page that hangs
		// holds up no other display).
		s.f.unhold()
		defer s.f.hold()
		for {
			<-p.done
			if fatal(ctx, p.err) {
				return false, p.err
			}
			if p.err == nil || s.probeErrs == maxProbeErrs {
				break
			}
			// The document went away under the question (a navigation):
			// ask again. A page that cannot answer, quiet otherwise, is
			// left to the frames.
			s.probeErrs++
			p = s.f.ask(ctx)
		}
		s.view = viewport{}
		if p.err == nil {
			s.f.answered(p.a)
			s.view = p.a.view
		}
		switch {
		case p.err != nil:
			s.anim = animations{}
		case p.a.running():
			s.anim = p.a
			s.ask = true
		default:
			s.anim = animations{}
		}
		now = time.Now()
		s.q = d.state.status(now, d.cfg.QuietWindow, s.timeout)
	}
	waited := now.Sub(s.start)
	if !damaged && s.q.quiet && s.probe == nil && !s.ask {
		s.result = screen.Settle{Waited: waited}
		s.f.clean = true
		return true, nil
	}
	if now.Before(s.deadline) {
		return false, nil
	}
	reason := s.q.reason
	switch {
	case !s.q.quiet:
	case s.anim.running():
		reason = s.anim.String()
	default:
		reason = "the page kept drawing new frames (an animation?)"
	}
	if s.damaged > 0 {
		reason += fmt.Sprintf(" (%d new frames in %v)", s.damaged, waited.Round(time.Millisecond))
	}
	s.result = screen.Settle{Waited: waited, TimedOut: true, Reason: reason}
	return true, nil
}

// stop ends a question still in flight.
func (s *settling) stop() {
	if s.probe != nil {
		s.probe.cancel()
		<-s.probe.done
	}
}

// ask sends the question of what animates on a goroutine of its own.
func (f *frameControl) ask(ctx context.Context) *animProbe {
	pctx, cancel := context.WithCancel(ctx)
	p := &animProbe{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(p.done)
		p.a, p.err = f.d.animations(pctx)
	}()
	return p
}

// answered reports whether the question has its answer.
func (p *animProbe) answered() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
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
	sp := f.shotParams(r)
	if data, ok := f.keptFor(o, sp); ok {
		return data, nil
	}
	data, err := f.shot(ctx, o, sp)
	if err == nil {
		f.keep(o, sp, data)
	}
	return data, err
}

// shotParams are the screenshot parameters of beginFrame for r.
func (f *frameControl) shotParams(r captureReq) *headlessexperimental.ScreenshotParams {
	sp := &headlessexperimental.ScreenshotParams{
		Format:           headlessexperimental.ScreenshotParamsFormatPng,
		OptimizeForSpeed: true,
	}
	if r.format == screen.JPEG {
		sp.Format = headlessexperimental.ScreenshotParamsFormatJpeg
		sp.Quality = new(int64(r.quality))
	}
	return sp
}

// shot runs frames with a screenshot until one comes back of o's size:
// burstShots back to back, then paced a frame interval apart (letting go
// of the browser's frame lock while it waits), until maxEmptyShots frames
// ran and shotPatience passed. A window whose every frame came back
// empty for wedgePatience is wedged (errWedged).
func (f *frameControl) shot(ctx context.Context, o output, sp *headlessexperimental.ScreenshotParams) ([]byte, error) {
	start := time.Now()
	f.hold()
	defer f.unhold()
	n, empty, other := 0, 0, screen.Size{}
	for ; n < maxEmptyShots || time.Since(start) < shotPatience; n++ {
		if empty == n && n >= maxEmptyShots && time.Since(start) >= wedgePatience {
			return nil, fmt.Errorf("%s: %w: %d frames over %v came back without a screenshot",
				headlessexperimental.CommandBeginFrame, errWedged, n, time.Since(start).Round(time.Millisecond))
		}
		if n >= burstShots {
			f.unhold()
			if err := f.wait(ctx, time.Now().Add(frameInterval)); err != nil {
				return nil, err
			}
			f.hold()
		}
		res, err := f.frame(ctx, sp)
		if err != nil {
			return nil, err
		}
		if len(res.ScreenshotData) == 0 {
			empty++
			continue
		}
		// A frame drawn before the window took its new size is of the old
		// size: run another.
		if _, size, err := imageSize(res.ScreenshotData); err == nil && size != o.size {
			other = size
			continue
		}
		return res.ScreenshotData, nil
	}
	why := fmt.Sprintf("%d came back empty", empty)
	if !other.Empty() {
		why += fmt.Sprintf(", the others of a %dx%d window", other.W, other.H)
	}
	return nil, fmt.Errorf("%s: no screenshot of the %dx%d window in %d frames over %v (%s)",
		headlessexperimental.CommandBeginFrame, o.size.W, o.size.H, n, time.Since(start).Round(time.Millisecond), why)
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
