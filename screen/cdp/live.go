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

	"github.com/spotter-harness/spotter/screen"
)

// The live view (Display.Watch) shows the page as it changes, for people
// watching a session, without costing the steps anything while nobody
// watches, and little while someone does. A watch starts with a frame of
// the page as it is, and then sends its changes.
//
// In FrameControl mode the page is drawn only when the display runs a
// frame, so the live view runs them: while no capture or action holds
// the display, a frame every interval, and when it drew something new
// (damage), one more with a screenshot, which is the live frame; a page
// that does not change costs one frame per interval and sends nothing.
// While a capture settles, its own frames show the page: after a frame
// that drew something new, the next one takes a screenshot if a live
// frame is due. In Screencast mode the page draws on its own clock and
// the screencast that tells the settle when it draws sends images of the
// live size while someone watches; the frames that come sooner than the
// interval after the last are held, the newest is handed on at the next
// tick.

// liveQuality is the JPEG quality of live frames by default.
const liveQuality = 60

// live is the state of a display's live view.
type live struct {
	mu      sync.Mutex
	each    func(screen.LiveFrame) // nil while nobody watches
	o       screen.LiveOptions
	last    time.Time
	pending *screen.LiveFrame
	tab     *tab // Screencast: the tab whose screencast sends live frames
	// ticks counts the looks at the page the view has taken (tests wait
	// on it).
	ticks atomic.Int64
}

// errWatched refuses a second watcher of a display.
var errWatched = errors.New("the display is already watched")

// Watch shows the display live: see screen.Watcher. Frames are JPEG
// images of o.Size, the size of the session's screenshots.
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
	if !d.frames {
		defer d.liveScreencast(false)
	}
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	for {
		if cause := d.goneCause(); cause != "" {
			return fmt.Errorf("watch: %s: %w", cause, screen.ErrGone)
		}
		if d.frames {
			d.liveFrame(ctx)
		} else if d.liveScreencast(true) {
			d.live.flush(time.Now())
			d.live.ticks.Add(1)
		}
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
	l.each, l.o, l.last, l.pending, l.tab = each, o, time.Time{}, nil, nil
	return nil
}

func (l *live) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.each, l.pending = nil, nil
}

// due reports whether a live frame would be handed on at now.
func (l *live) due(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.each != nil && now.Sub(l.last) >= l.o.Interval
}

// offer hands f on if a frame is due, and otherwise holds it for flush.
func (l *live) offer(f screen.LiveFrame) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.each == nil {
		return
	}
	if time.Since(l.last) < l.o.Interval {
		l.pending = &f
		return
	}
	l.send(f)
}

// flush hands on the frame offer held, once it is due.
func (l *live) flush(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.each != nil && l.pending != nil && now.Sub(l.last) >= l.o.Interval {
		l.send(*l.pending)
	}
}

// send hands f on. l.mu is held.
func (l *live) send(f screen.LiveFrame) {
	l.last, l.pending = time.Now(), nil
	l.each(f)
}

// onEvent takes the frames of a screencast of the live size (Screencast
// mode): the tiny ones that only tell the settle that the page drew are
// too small to show and are left out.
func (l *live) onEvent(ev any) {
	fr, ok := ev.(*page.EventScreencastFrame)
	if !ok {
		return
	}
	l.mu.Lock()
	watching := l.each != nil
	l.mu.Unlock()
	if !watching {
		return
	}
	data := fr.Data // decoded from base64 already
	format, size, err := imageSize(data)
	if err != nil || size.W <= 4*screencastSize {
		return
	}
	at := time.Now()
	if m := fr.Metadata; m != nil && m.Timestamp > 0 {
		at = wallTime(float64(m.Timestamp))
	}
	l.offer(screen.LiveFrame{Data: data, Format: format, Size: size, Time: at})
}

// onTabEvent is the listener of every tab of the display beside its
// pageState: the page log and the live view take their events.
func (d *Display) onTabEvent(ev any) {
	d.plog.onEvent(ev)
	d.live.onEvent(ev)
}

// liveFrame runs one frame of FrameControl's live view, if a frame is due
// and nothing else holds the display.
func (d *Display) liveFrame(ctx context.Context) {
	if !d.live.due(time.Now()) || !d.mu.TryLock() {
		return // a capture or an action runs: its frames show the page
	}
	defer d.mu.Unlock()
	f, ok := d.r.(*frameControl)
	if !ok || d.check() != nil {
		return
	}
	if _, open, _ := d.state.currentDialog(); open {
		return // the page draws nothing new until the dialog closes
	}
	d.live.mu.Lock()
	first := d.live.last.IsZero()
	d.live.mu.Unlock()
	data, err := f.live(ctx, first)
	d.live.ticks.Add(1)
	if err != nil {
		d.log.DebugContext(ctx, "live frame", "err", err)
		return
	}
	if data != nil {
		d.live.offer(screen.LiveFrame{Data: data, Format: screen.JPEG, Size: f.out.size, Time: time.Now()})
	}
}

// live runs a frame and, if it drew something new, one more with a
// screenshot, which it returns; nil if nothing changed. The window is
// made to show what a capture of the live size shows. The frame right
// after a screenshot always reports damage (see keptShot), so there a
// second frame tells. The first frame of a watch (first) is taken
// whether the page changed or not: it shows the page as it is.
func (f *frameControl) live(ctx context.Context, first bool) ([]byte, error) {
	d := f.d
	d.live.mu.Lock()
	o := d.live.o
	d.live.mu.Unlock()
	req, err := d.captureRequest(screen.CaptureOptions{Size: o.Size, Format: screen.JPEG, Quality: o.Quality})
	if err != nil {
		return nil, err
	}
	out, _ := f.outputFor(req)
	if err := f.apply(ctx, out); err != nil {
		return nil, err
	}
	after := f.afterShot
	for range 2 {
		if first {
			break
		}
		res, err := f.frame(ctx, nil)
		if err != nil || !res.HasDamage {
			return nil, err
		}
		if !after {
			break
		}
		after = false
	}
	res, err := f.frame(ctx, f.liveParams(o))
	if err != nil || !f.liveSized(res.ScreenshotData) {
		return nil, err
	}
	return res.ScreenshotData, nil
}

// liveShot returns the screenshot parameters for the next frame of a
// settle if it should be a live frame: someone watches, the frame before
// drew something new, a frame is due, and the window shows what a live
// frame shows (a settle for a region's capture leaves it as it was). The
// settle hands the screenshot on with liveShown.
func (f *frameControl) liveShot(damaged bool) *headlessexperimental.ScreenshotParams {
	if !damaged || !f.d.live.due(time.Now()) {
		return nil
	}
	f.d.live.mu.Lock()
	o := f.d.live.o
	f.d.live.mu.Unlock()
	req, err := f.d.captureRequest(screen.CaptureOptions{Size: o.Size, Format: screen.JPEG, Quality: o.Quality})
	if err != nil {
		return nil
	}
	if out, _ := f.outputFor(req); out != f.out {
		return nil
	}
	return f.liveParams(o)
}

// liveShown hands on the screenshot of a frame that liveShot asked for.
func (f *frameControl) liveShown(sp *headlessexperimental.ScreenshotParams, res headlessexperimental.BeginFrameResult) {
	if sp != nil && f.liveSized(res.ScreenshotData) {
		f.d.live.offer(screen.LiveFrame{Data: res.ScreenshotData, Format: screen.JPEG, Size: f.out.size, Time: time.Now()})
	}
}

func (f *frameControl) liveParams(o screen.LiveOptions) *headlessexperimental.ScreenshotParams {
	return &headlessexperimental.ScreenshotParams{Format: headlessexperimental.ScreenshotParamsFormatJpeg,
		Quality: new(int64(o.Quality)), OptimizeForSpeed: true}
}

// liveSized reports whether data is a JPEG of the window's size: a frame
// drawn before the window took its size is not.
func (f *frameControl) liveSized(data []byte) bool {
	if len(data) == 0 || !bytes.HasPrefix(data, []byte{0xff, 0xd8}) {
		return false
	}
	_, size, err := imageSize(data)
	return err == nil && size == f.out.size
}

// liveScreencast makes the active tab's screencast (Screencast mode) send
// images of the live size while on, and the tiny ones again when not, and
// reports whether it does. On, it gives up when a capture or an action
// holds the display (the next tick tries again); off, it waits for them.
// Either is bounded by the display's command timeout.
func (d *Display) liveScreencast(on bool) bool {
	d.live.mu.Lock()
	o, was := d.live.o, d.live.tab
	d.live.mu.Unlock()
	if !on && was == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(d.bg, d.cfg.CommandTimeout)
	defer cancel()
	if on && !d.mu.TryLock() {
		return false
	}
	if !on {
		d.mu.Lock()
	}
	defer d.mu.Unlock()
	if on && was == d.cur {
		return true
	}
	if d.cur == nil || d.check() != nil {
		return false
	}
	q, w, h := int64(signalQuality), int64(screencastSize), int64(screencastSize)
	if on {
		q, w, h = int64(o.Quality), int64(o.Size.W), int64(o.Size.H)
	}
	// A screencast that runs cannot be changed: it is stopped and
	// started again with the new size.
	if _, err := call(ctx, d, page.StopScreencast, cdp.Empty{}); err != nil {
		d.log.Debug("live screencast", "on", on, "err", err)
		return false
	}
	if _, err := call(ctx, d, page.StartScreencast, screencastParams(q, w, h)); err != nil {
		d.log.Debug("live screencast", "on", on, "err", err)
		return false
	}
	d.live.mu.Lock()
	d.live.tab = nil
	if on {
		d.live.tab = d.cur
	}
	d.live.mu.Unlock()
	return true
}

// screencastParams start a screencast of JPEG images of quality q that fit
// in w by h px, one per frame the page draws.
func screencastParams(q, w, h int64) page.StartScreencastParams {
	return page.StartScreencastParams{Format: page.StartScreencastFormatJpeg, Quality: &q, MaxWidth: w, MaxHeight: h,
		EveryNthFrame: 1, MaxFramesInFlight: 8}
}
