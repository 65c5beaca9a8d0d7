package cdp

import (
	"context"
	"errors"
	"fmt"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/internal/hitjs"
)

// HitTest returns the element that a click at p (CSS px of the viewport)
// would reach, as approval rules need it: the nearest interactive
// ancestor of the element under p (a link, a button, a form field, an
// element with a widget role; for a label, its control), else the nearest
// one with a click handler in its markup or a pointer cursor of its own,
// else the nearest one a script listens on for clicks (Target.Acts set
// for all of these), or that element itself (static: Acts unset). It descends into open shadow roots and into iframes:
// same-origin ones from the page, cross-origin ones in the page's process
// and out-of-process ones through their own targets. A point on nothing
// gives the zero Target.
//
// The page's scripts cannot change the answer: the hit-test runs in an
// isolated world, and reads text with bounded walks, so a huge DOM costs
// a bounded time. HitTest takes at most hitjs.Timeout (less if ctx says so); a page
// that does not answer in time gives an error wrapping ErrUnresponsive, a
// page blocked by a dialog one naming the dialog, and a dead page one
// wrapping screen.ErrGone. HitTest reads the page and changes nothing; it
// inspects the active tab, and waits for a Perform or Capture in progress
// to end.
//
// Target.Name is the element's accessible name, computed the usual way
// (aria-labelledby, aria-label, labels, alt, the text of controls that take
// their name from it, title, placeholder); a form field with none falls
// back to its name attribute, so that an unlabelled <input name=cardnumber>
// still says what it is. Values typed into fields are never read.
func (d *Display) HitTest(ctx context.Context, p actions.Point) (screen.Target, error) {
	if err := hitjs.CheckPoint(p); err != nil {
		return screen.Target{}, err
	}
	t, err := d.inspect(ctx, "point", p)
	if err != nil {
		return screen.Target{}, fmt.Errorf("hit-test at %v: %w", p, err)
	}
	return t, nil
}

// Focused returns the element that has the keyboard focus, where typed
// text goes, descending into shadow roots and iframes as HitTest does.
// With no focused element it returns the zero Target. It is bounded as
// HitTest is.
func (d *Display) Focused(ctx context.Context) (screen.Target, error) {
	t, err := d.inspect(ctx, "focus", actions.Point{})
	if err != nil {
		return screen.Target{}, fmt.Errorf("focused element: %w", err)
	}
	return t, nil
}

// inspect runs the hit-test in mode in the page's main frame and, while
// it lands on a frame it cannot enter, in that frame.
func (d *Display) inspect(ctx context.Context, mode string, p actions.Point) (screen.Target, error) {
	// mu keeps the active tab (d.t, d.state, d.ctx) from changing under
	// the inspection.
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(); err != nil {
		return screen.Target{}, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, hitjs.Timeout,
		fmt.Errorf("the page did not answer within %v: %w", hitjs.Timeout, ErrUnresponsive))
	defer cancel()
	// Tabs switch under tabMu, not mu: take the active one once. Points
	// come in viewport px; a zoomed page lays out in px divided by zoom.
	top, _, zoom := d.activeTab()
	if zoom > 0 && zoom != 1 {
		p = actions.Pt(p.X/zoom, p.Y/zoom)
	}
	tree, err := hitCall(ctx, d, top, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		return screen.Target{}, err
	}
	if tree.FrameTree == nil || tree.FrameTree.Frame == nil {
		return screen.Target{}, errors.New("the page has no main frame")
	}
	sess, frame := top, tree.FrameTree.Frame.ID
	var release []func()
	defer func() {
		for _, f := range release {
			f()
		}
	}()
	for depth := 0; ; depth++ {
		call := d.hitCaller(sess)
		world, err := hitjs.Enter(ctx, call, string(frame))
		if err != nil {
			return screen.Target{}, err
		}
		h, err := hitjs.Describe(ctx, call, world, mode, p, depth > 0)
		if err != nil {
			return screen.Target{}, err
		}
		if h.Cross == nil {
			return h.Target, nil
		}
		// The element is an iframe whose document this world cannot
		// reach: go on inside it, with the point in its coordinates.
		outer := h.Target
		if depth >= hitjs.MaxFrameDepth {
			return outer, nil
		}
		child, err := hitjs.FrameOf(ctx, call, world, mode, p)
		if err != nil || child == "" {
			return outer, nil // the iframe as it is seen from outside
		}
		p = actions.Pt(h.Cross.X, h.Cross.Y)
		if _, err := hitjs.Enter(ctx, call, child); err == nil {
			frame = cdp.FrameID(child) // in this process: same session
			continue
		}
		s, done, err := d.attachFrame(ctx, cdp.FrameID(child))
		if err != nil {
			return outer, nil
		}
		release = append(release, done)
		sess, frame = s, cdp.FrameID(child)
	}
}

// hitCaller sends the hit-test's commands on sess, as hitCall does.
func (d *Display) hitCaller(sess cdp.Session) hitjs.Caller {
	return func(ctx context.Context, method string, params map[string]any, result any) error {
		return hitDo(ctx, d, sess, method, params, result)
	}
}

// attachFrame attaches to the target of an out-of-process iframe (its
// target id is its frame id) and returns its session, with a function that
// detaches from it and leaves the iframe alone.
func (d *Display) attachFrame(ctx context.Context, frame cdp.FrameID) (cdp.Session, func(), error) {
	fctx, cancel := chromedp.NewContext(d.ctx, chromedp.WithTargetID(target.ID(frame)), chromedp.WithDetachOnCancel())
	done := func() {
		_ = chromedp.Cancel(fctx) // detaching from a frame that went away has nothing left to do
		cancel()
	}
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(fctx) }()
	select {
	case err := <-started:
		if err != nil {
			done()
			return nil, nil, fmt.Errorf("attach to frame %s: %w", frame, err)
		}
	case <-ctx.Done():
		done()
		<-started
		return nil, nil, context.Cause(ctx)
	}
	c := chromedp.FromContext(fctx)
	if c == nil || c.Target == nil {
		done()
		return nil, nil, fmt.Errorf("attach to frame %s: no target", frame)
	}
	return c.Target, done, nil
}

// hitCall runs one command of a hit-test on sess, bounded by ctx and the
// display's command timeout, with call's translation of errors.
func hitCall[P, R any](ctx context.Context, d *Display, sess cdp.Session, c cdp.Command[P, R], p P) (R, error) {
	var r R
	err := hitDo(ctx, d, sess, c.Method, p, &r)
	return r, err
}

// hitDo sends method with params on sess and decodes its answer into
// result: bounded by ctx and the display's command timeout, cut short by
// a dialog that opens meanwhile, its errors translated as call's are.
func hitDo(ctx context.Context, d *Display, sess cdp.Session, method string, params, result any) error {
	_, state, _ := d.activeTab()
	cctx, cancel := context.WithTimeout(ctx, d.cfg.CommandTimeout)
	defer cancel()
	stop := context.AfterFunc(state.dialogOpened(), cancel)
	defer stop()
	if err := sess.Call(cctx, method, params, result); err != nil {
		return d.translate(ctx, method, d.cfg.CommandTimeout, err)
	}
	return nil
}

// clipErr keeps a page's exception text short: the page chose it.
func clipErr(s string) string {
	if r := []rune(s); len(r) > 200 {
		return string(r[:200]) + "…"
	}
	return s
}
