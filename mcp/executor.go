package mcp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
)

// ErrNoFrame marks a call with coordinates before any screenshot was taken.
var ErrNoFrame = errors.New("no screenshot has been taken yet; take one first (kind screenshot)")

// Executor runs single calls on one display the way the harness loop runs
// a model's calls: the batch is validated against the Limits and the
// Policy, every coordinate is mapped with the Frame of the screenshot the
// caller saw, the Approver (if any) is asked before each action, and every
// call is answered with a fresh screenshot. It serves callers that are not a
// harness.Model, such as an MCP client. Calls run one at a time.
type Executor struct {
	Display  harness.Display
	Policy   actions.Policy
	Limits   actions.Limits
	Approver harness.Approver // nil: an action runs once the Policy allows it
	Capture  screen.CaptureOptions
	// ActionTimeout bounds one action, plus its own duration; zero: 15s.
	ActionTimeout time.Duration

	mu     sync.Mutex
	seq    int
	frames map[string]screen.Frame
	latest screen.Frame
	cursor *actions.Point
}

// Result answers one call.
type Result struct {
	Shot  *screen.Shot // the fresh screenshot; nil only if the display failed
	Zoom  *screen.Shot // a zoom action's region capture
	Ran   int          // actions that completed
	Err   error        // why the call failed, in words for the caller
	Notes []string     // what the caller should know that is not a failure
	// Cursor is the pointer in Shot's image pixels, for cursor_position.
	Cursor *actions.Point
}

// Screenshot captures the display and remembers the frame, so that later
// calls can refer to it.
func (e *Executor) Screenshot(ctx context.Context) (screen.Shot, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.capture(ctx)
}

func (e *Executor) capture(ctx context.Context) (screen.Shot, error) {
	shot, err := e.Display.Capture(ctx, e.Capture)
	if err != nil {
		return screen.Shot{}, err
	}
	if e.frames == nil {
		e.frames = map[string]screen.Frame{}
	}
	e.frames[shot.Frame.ID] = shot.Frame
	e.latest = shot.Frame
	return shot, nil
}

// Call runs batch, whose coordinates are pixels of the screenshot frameID
// names (empty: the latest), and answers with a fresh screenshot. It
// blocks while the Approver decides.
func (e *Executor) Call(ctx context.Context, callID, frameID string, batch []actions.Action) Result {
	e.mu.Lock()
	defer e.mu.Unlock()
	var r Result
	r.Err = e.run(ctx, callID, frameID, batch, &r)
	shot, err := e.capture(ctx)
	if err != nil {
		r.Err = errors.Join(r.Err, fmt.Errorf("screenshot after the call: %w", err))
		return r
	}
	r.Shot = &shot
	r.Notes = append(r.Notes, shot.Events...)
	if shot.Frame.Settle.TimedOut {
		r.Notes = append(r.Notes, fmt.Sprintf("The page had not settled after %v (%s); the screenshot may show it mid-change.",
			shot.Frame.Settle.Waited.Round(time.Millisecond), shot.Frame.Settle.Reason))
	}
	if r.Cursor != nil { // in the pixels of the fresh screenshot
		p := shot.Frame.FromCSS(*r.Cursor)
		r.Cursor = &p
	}
	return r
}

func (e *Executor) run(ctx context.Context, callID, frameID string, batch []actions.Action, r *Result) error {
	if err := actions.ValidateBatch(batch, e.Limits); err != nil {
		return err
	}
	if err := e.Policy.CheckBatch(batch); err != nil {
		return err
	}
	frame := e.latest
	if frameID != "" && frameID != e.latest.ID {
		f, ok := e.frames[frameID]
		if !ok {
			return fmt.Errorf("%w %q", harness.ErrUnknownFrame, frameID)
		}
		frame = f
		if !f.Zoomed() {
			r.Notes = append(r.Notes, fmt.Sprintf("This call refers to screenshot %s, but %s is the latest; its coordinates were mapped with %s's geometry.", f.ID, e.latest.ID, f.ID))
		}
	}
	for i, a := range batch {
		if err := e.act(ctx, callID, i, a, frame, r); err != nil {
			return fmt.Errorf("action %d (%s): %w", i, a.Kind, err)
		}
		r.Ran++
	}
	return nil
}

func (e *Executor) act(ctx context.Context, callID string, i int, a actions.Action, frame screen.Frame, r *Result) error {
	if frame.ID == "" && (a.HasAt || len(a.Path) > 0 || !a.Region.Empty()) {
		return ErrNoFrame
	}
	m, err := frame.Map(a, screen.Image)
	if err != nil {
		return err
	}
	if e.Approver != nil {
		req := harness.ApprovalRequest{CallID: callID, Index: i, Action: a, Frame: frame}
		if a.Kind.IsPointer() {
			req.Mapped = &m
		}
		d, err := e.Approver.Approve(ctx, req)
		if err != nil {
			return err
		}
		r.Notes = append(r.Notes, d.Notes...)
		if d.Edit != nil {
			ed := *d.Edit
			if err := ed.Validate(e.Limits); err != nil {
				return fmt.Errorf("the approver's edit: %w", err)
			}
			if err := e.Policy.Check(ed); err != nil {
				return fmt.Errorf("the approver's edit: %w", err)
			}
			if m, err = frame.Map(ed, screen.Image); err != nil {
				return fmt.Errorf("the approver's edit: %w", err)
			}
			a = ed
			r.Notes = append(r.Notes, fmt.Sprintf("A human edited action %d before it ran; it ran as %s.", i, a.Kind))
		}
	}
	switch a.Kind {
	case actions.Screenshot:
		return nil // the fresh screenshot answers it
	case actions.Wait:
		t := time.NewTimer(a.Duration)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	case actions.CursorPosition:
		if e.cursor == nil {
			return errors.New("the pointer has not been moved yet")
		}
		p := *e.cursor
		r.Cursor = &p
		return nil
	case actions.Zoom:
		o := e.Capture
		o.Region = m.Region
		o.Size = screen.Size{}
		shot, err := e.Display.Capture(ctx, o)
		if err != nil {
			return err
		}
		e.frames[shot.Frame.ID] = shot.Frame
		r.Zoom = &shot
		return nil
	}
	actx, cancel := context.WithTimeout(ctx, cmp.Or(e.ActionTimeout, 15*time.Second)+a.Duration)
	defer cancel()
	if err := e.Display.Perform(actx, m); err != nil {
		return err
	}
	switch {
	case m.Kind == actions.Drag && len(m.Path) > 0:
		p := m.Path[len(m.Path)-1]
		e.cursor = &p
	case m.Kind.IsPointer() && m.HasAt:
		p := m.At
		e.cursor = &p
	}
	return nil
}
