package playwright

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	pw "github.com/playwright-community/playwright-go"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/internal/hitjs"
)

// HitTest returns the element that a click at p (CSS px of the viewport)
// would reach, as approval rules and secret-field detection need it, the
// same way screen/cdp's Display does (the script is the same): the nearest
// interactive ancestor of the element under p (for a label, its control),
// or that element itself, descending into open shadow roots and iframes:
// same-origin ones from the page, cross-origin ones in the page's process
// and out-of-process ones (of another site) through their own sessions.
//
// Target.Name is the element's accessible name; values typed into fields
// are never read. HitTest reads the page and changes nothing; it waits for
// a Perform or Capture in progress and takes at most hitjs.Timeout (less if ctx
// says so). A page that does not answer in time gives an error wrapping
// ErrUnresponsive, a page blocked by a dialog one naming the dialog, and a
// gone display one wrapping screen.ErrGone. Playwright's own evaluation
// runs in the page's main world, so the hit-test runs in hitjs.World over
// a CDP session of the page (Chromium only, launched or connected).
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
// text goes, descending as HitTest does. With no focused element it
// returns the zero Target. It is bounded as HitTest is.
func (d *Display) Focused(ctx context.Context) (screen.Target, error) {
	t, err := d.inspect(ctx, "focus", actions.Point{})
	if err != nil {
		return screen.Target{}, fmt.Errorf("focused element: %w", err)
	}
	return t, nil
}

// inspect runs the hit-test script in mode in the page's main frame and,
// while it lands on an iframe it cannot enter from there, in that frame.
func (d *Display) inspect(ctx context.Context, mode string, p actions.Point) (screen.Target, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if dl, open := d.Dialog(); open {
		return screen.Target{}, fmt.Errorf("%s blocks the page", dl.String())
	}
	var t screen.Target
	err := d.run(ctx, hitjs.Timeout, func(context.Context) error {
		s, err := d.cdpSession()
		if err != nil {
			return err
		}
		var tree struct {
			FrameTree struct {
				Frame struct {
					ID string `json:"id"`
				} `json:"frame"`
			} `json:"frameTree"`
		}
		if err := cdpCall(s, "Page.getFrameTree", nil, &tree); err != nil {
			return err
		}
		frame := tree.FrameTree.Frame.ID
		if frame == "" {
			return errors.New("the page has no main frame")
		}
		for depth := 0; ; depth++ {
			h, err := inspectFrame(s, frame, hitjs.Expr(mode, p.X, p.Y), depth > 0)
			if err != nil {
				return err
			}
			t = h.Target
			if h.Cross == nil || depth >= hitjs.MaxFrameDepth {
				return nil
			}
			// An iframe whose document this world cannot reach: go on
			// inside it, with the point in its coordinates. If that
			// fails, the iframe as seen from outside is the answer.
			child, err := frameOf(s, frame, hitjs.Expr(mode, p.X, p.Y))
			if err != nil || child == "" {
				return nil
			}
			if _, err := isolatedWorld(s, child); err != nil {
				// Out of the page's process: through a session of its own.
				fs, err := d.frameSession(child)
				if err != nil {
					return nil
				}
				defer fs.Detach() //nolint:errcheck // a frame that went away has nothing left to detach
				s = fs
			}
			frame, p = child, actions.Pt(h.Cross.X, h.Cross.Y)
		}
	})
	if err != nil {
		return screen.Target{}, err
	}
	return t, nil
}

// cdpSession returns the CDP session with the active tab's page, opening
// it the first time. It runs in a call of d.run, which holds busy.
func (d *Display) cdpSession() (pw.CDPSession, error) {
	tb := d.tab()
	if tb.cdp != nil {
		return tb.cdp, nil
	}
	s, err := d.bctx.NewCDPSession(tb.page)
	if err != nil {
		return nil, fmt.Errorf("open a CDP session with the page: %w", err)
	}
	tb.cdp = s
	return s, nil
}

// frameSession returns a CDP session with the out-of-process iframe whose
// frame id is id, which the caller must detach. Playwright opens sessions
// with frames, not with frame ids: each frame of the page that has a
// session of its own (an out-of-process one) is asked for its id.
func (d *Display) frameSession(id string) (pw.CDPSession, error) {
	page := d.tab().page
	for _, f := range page.Frames() {
		if f == page.MainFrame() {
			continue
		}
		s, err := d.bctx.NewCDPSession(f)
		if err != nil {
			continue // in the page's process
		}
		var tree struct {
			FrameTree struct {
				Frame struct {
					ID string `json:"id"`
				} `json:"frame"`
			} `json:"frameTree"`
		}
		if cdpCall(s, "Page.getFrameTree", nil, &tree) == nil && tree.FrameTree.Frame.ID == id {
			return s, nil
		}
		s.Detach() //nolint:errcheck // not the frame wanted
	}
	return nil, fmt.Errorf("no session with frame %s", id)
}

// cdpCall sends a CDP command on s and decodes its result into out (if
// not nil).
func cdpCall(s pw.CDPSession, method string, params map[string]any, out any) error {
	res, err := s.Send(method, params)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if out == nil {
		return nil
	}
	b, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("%s: %v", method, err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s: %v", method, err)
	}
	return nil
}

// isolatedWorld creates (or finds again) the hit-test world in frame and
// returns its execution context.
func isolatedWorld(s pw.CDPSession, frame string) (int64, error) {
	var w struct {
		ID int64 `json:"executionContextId"`
	}
	err := cdpCall(s, "Page.createIsolatedWorld", map[string]any{"frameId": frame, "worldName": hitjs.World}, &w)
	return w.ID, err
}

// hit is what the hit-test script returns.
type hit struct {
	screen.Target
	// Cross is set when the element is an iframe whose document the
	// script could not enter; X and Y are the point inside it.
	Cross *struct{ X, Y float64 } `json:"cross,omitempty"`
}

// evalResult is the part of Runtime.evaluate's result that a hit-test
// reads.
type evalResult struct {
	Result struct {
		Value    json.RawMessage `json:"value"`
		ObjectID string          `json:"objectId"`
	} `json:"result"`
	Exception *struct {
		Text      string `json:"text"`
		Exception *struct {
			Description string `json:"description"`
		} `json:"exception"`
	} `json:"exceptionDetails"`
}

func (r evalResult) err() error {
	if r.Exception == nil {
		return nil
	}
	msg := r.Exception.Text
	if e := r.Exception.Exception; e != nil && e.Description != "" {
		msg = e.Description
	}
	return fmt.Errorf("hit-test script: %s", clip(msg, 200))
}

// inspectFrame runs expr in the hit-test world of frame.
func inspectFrame(s pw.CDPSession, frame, expr string, inFrame bool) (hit, error) {
	world, err := isolatedWorld(s, frame)
	if err != nil {
		return hit{}, err
	}
	var res evalResult
	err = cdpCall(s, "Runtime.evaluate", map[string]any{
		"expression":    expr + ".describe(" + strconv.FormatBool(inFrame) + ")",
		"contextId":     world,
		"returnByValue": true,
		"silent":        true,
		"timeout":       hitjs.Timeout.Milliseconds(),
	}, &res)
	if err != nil {
		return hit{}, err
	}
	if err := res.err(); err != nil {
		return hit{}, err
	}
	var h hit
	if len(res.Result.Value) == 0 || string(res.Result.Value) == "null" {
		return h, nil
	}
	if err := json.Unmarshal(res.Result.Value, &h); err != nil {
		return hit{}, fmt.Errorf("hit-test script: %v", err)
	}
	return h, nil
}

// frameOf returns the id of the frame that the iframe element expr lands
// on in frame shows.
func frameOf(s pw.CDPSession, frame, expr string) (string, error) {
	world, err := isolatedWorld(s, frame)
	if err != nil {
		return "", err
	}
	var res evalResult
	err = cdpCall(s, "Runtime.evaluate", map[string]any{
		"expression": expr + ".element",
		"contextId":  world,
		"silent":     true,
		"timeout":    hitjs.Timeout.Milliseconds(),
	}, &res)
	if err != nil {
		return "", err
	}
	if res.err() != nil || res.Result.ObjectID == "" {
		return "", errors.New("no iframe element")
	}
	defer cdpCall(s, "Runtime.releaseObject", map[string]any{"objectId": res.Result.ObjectID}, nil) //nolint:errcheck // nothing to do if the page went away
	var n struct {
		Node struct {
			FrameID string `json:"frameId"`
		} `json:"node"`
	}
	if err := cdpCall(s, "DOM.describeNode", map[string]any{"objectId": res.Result.ObjectID}, &n); err != nil {
		return "", err
	}
	return n.Node.FrameID, nil
}
