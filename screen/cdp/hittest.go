package cdp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/internal/hitjs"
)

// HitTest returns the element that a click at p (CSS px of the viewport)
// would reach, as approval rules need it: the nearest interactive
// ancestor of the element under p (a link, a button, a form field, an
// element with a widget role; for a label, its control), or that element
// itself. It descends into open shadow roots and into iframes:
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
	t, err := d.inspect(ctx, func(x, y float64) string { return hitjs.Expr("point", x, y) }, p)
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
	t, err := d.inspect(ctx, func(float64, float64) string { return hitjs.Expr("focus", 0, 0) }, actions.Point{})
	if err != nil {
		return screen.Target{}, fmt.Errorf("focused element: %w", err)
	}
	return t, nil
}

// inspect runs expr (made for a point inside the frame at hand) in the
// page's main frame and, while it lands on a frame it cannot enter, in
// that frame.
func (d *Display) inspect(ctx context.Context, expr func(x, y float64) string, p actions.Point) (screen.Target, error) {
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
		h, err := d.inspectFrame(ctx, sess, frame, expr(p.X, p.Y), depth > 0)
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
		child, err := d.frameOf(ctx, sess, frame, expr(p.X, p.Y))
		if err != nil || child == "" {
			return outer, nil // the iframe as it is seen from outside
		}
		p = actions.Pt(h.Cross.X, h.Cross.Y)
		if _, err := hitCall(ctx, d, sess, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{FrameID: child, WorldName: hitjs.World}); err == nil {
			frame = child // in this process: same session
			continue
		}
		s, done, err := d.attachFrame(ctx, child)
		if err != nil {
			return outer, nil
		}
		release = append(release, done)
		sess, frame = s, child
	}
}

// hit is what the hit-test script returns.
type hit struct {
	screen.Target
	// Cross is set when the element is an iframe whose document the
	// script could not enter; X and Y are the point inside it.
	Cross *struct{ X, Y float64 } `json:"cross,omitempty"`
}

// inspectFrame runs expr in the hit-test world of frame, on sess.
func (d *Display) inspectFrame(ctx context.Context, sess cdp.Session, frame cdp.FrameID, expr string, inFrame bool) (hit, error) {
	w, err := hitCall(ctx, d, sess, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{FrameID: frame, WorldName: hitjs.World})
	if err != nil {
		return hit{}, err
	}
	res, err := hitCall(ctx, d, sess, runtime.Evaluate, runtime.EvaluateParams{
		Expression:    expr + ".describe(" + strconv.FormatBool(inFrame) + ")",
		ContextID:     w.ExecutionContextID,
		ReturnByValue: new(true),
		Silent:        new(true),
		Timeout:       runtime.TimeDelta(hitjs.Timeout / time.Millisecond),
	})
	if err != nil {
		return hit{}, err
	}
	if res.ExceptionDetails != nil {
		msg := res.ExceptionDetails.Text
		if e := res.ExceptionDetails.Exception; e != nil && e.Description != "" {
			msg = e.Description
		}
		return hit{}, fmt.Errorf("hit-test script: %s", clipErr(msg))
	}
	var h hit
	if res.Result == nil || len(res.Result.Value) == 0 || string(res.Result.Value) == "null" {
		return h, nil
	}
	if err := json.Unmarshal(res.Result.Value, &h); err != nil {
		return hit{}, fmt.Errorf("hit-test script: %v", err)
	}
	return h, nil
}

// frameOf returns the id of the frame that the iframe element expr lands
// on shows.
func (d *Display) frameOf(ctx context.Context, sess cdp.Session, frame cdp.FrameID, expr string) (cdp.FrameID, error) {
	w, err := hitCall(ctx, d, sess, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{FrameID: frame, WorldName: hitjs.World})
	if err != nil {
		return "", err
	}
	res, err := hitCall(ctx, d, sess, runtime.Evaluate, runtime.EvaluateParams{
		Expression: expr + ".element",
		ContextID:  w.ExecutionContextID,
		Silent:     new(true),
		Timeout:    runtime.TimeDelta(hitjs.Timeout / time.Millisecond),
	})
	if err != nil {
		return "", err
	}
	if res.ExceptionDetails != nil || res.Result == nil || res.Result.ObjectID == "" {
		return "", errors.New("no iframe element")
	}
	defer func() {
		_, _ = hitCall(context.WithoutCancel(ctx), d, sess, runtime.ReleaseObject, runtime.ReleaseObjectParams{ObjectID: res.Result.ObjectID})
	}()
	n, err := hitCall(ctx, d, sess, dom.DescribeNode, dom.DescribeNodeParams{ObjectID: res.Result.ObjectID})
	if err != nil {
		return "", err
	}
	if n.Node == nil {
		return "", errors.New("no iframe node")
	}
	return n.Node.FrameID, nil
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
	top, state, _ := d.activeTab()
	if sess == top {
		return callWithin(ctx, d, d.cfg.CommandTimeout, c, p)
	}
	cctx, cancel := context.WithTimeout(ctx, d.cfg.CommandTimeout)
	defer cancel()
	stop := context.AfterFunc(state.dialogOpened(), cancel)
	defer stop()
	r, err := cdp.Call(cctx, sess, c, p)
	if err != nil {
		return r, d.translate(ctx, c.Method, d.cfg.CommandTimeout, err)
	}
	return r, nil
}

// clipErr keeps a page's exception text short: the page chose it.
func clipErr(s string) string {
	if r := []rune(s); len(r) > 200 {
		return string(r[:200]) + "…"
	}
	return s
}
