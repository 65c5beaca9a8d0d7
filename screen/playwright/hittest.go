package playwright

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	pw "github.com/playwright-community/playwright-go"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/internal/hitjs"
)

// HitTest returns the element that a click at p (CSS px of the viewport)
// would reach, as approval rules and secret-field detection need it, the
// same way screen/cdp's Display does (the script and its probe of the
// page's click listeners are package hitjs's): the nearest interactive
// ancestor of the element under p (for a label, its control), else the
// nearest one with a click handler or a pointer cursor of its own, or that
// element itself, descending into open shadow roots and iframes:
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
	err := d.run(ctx, hitjs.Timeout, func(ctx context.Context) error {
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
			call := caller(s)
			world, err := hitjs.Enter(ctx, call, frame)
			if err != nil {
				return err
			}
			h, err := hitjs.Describe(ctx, call, world, mode, p, depth > 0)
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
			child, err := hitjs.FrameOf(ctx, call, world, mode, p)
			if err != nil || child == "" {
				return nil
			}
			if _, err := hitjs.Enter(ctx, call, child); err != nil {
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

// caller sends the hit-test's commands on s (Playwright's sessions take
// no context: d.run bounds the whole hit-test).
func caller(s pw.CDPSession) hitjs.Caller {
	return func(_ context.Context, method string, params map[string]any, result any) error {
		return cdpCall(s, method, params, result)
	}
}
