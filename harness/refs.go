package harness

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/screen"
)

// A Referencer names a page's elements for a client without vision: a
// snapshot of the accessibility tree with a reference for each element,
// and where a reference's element is now. screen/cdp's and
// screen/playwright's displays are ones; desktops are not.
type Referencer interface {
	Snapshot(ctx context.Context) (screen.Snapshot, error)
	// Locate returns the element's visible box in CSS pixels of the
	// viewport, scrolling it into view first when none of it is in view.
	Locate(ctx context.Context, ref string) (screen.Located, error)
}

// ErrNoDOM marks a snapshot or an element reference asked of a display
// that cannot name a page's elements: a desktop or a VNC server, which
// have no DOM.
var ErrNoDOM = errors.New("this display cannot name elements: a desktop or VNC server has no DOM, so there is no snapshot or element reference here; act in pixels of the screenshot")

// Snapshot returns the display's accessibility tree with element
// references, with every secret the executor knows redacted, and records
// that it was taken.
func (e *Executor) Snapshot(ctx context.Context, actor Actor) (screen.Snapshot, error) {
	if e.cfg.Referencer == nil {
		return screen.Snapshot{}, ErrNoDOM
	}
	s, err := e.cfg.Referencer.Snapshot(WithActor(ctx, actor))
	if errors.Is(err, screen.ErrUnsupported) {
		return screen.Snapshot{}, ErrNoDOM
	}
	if err != nil {
		return screen.Snapshot{}, err
	}
	e.mu.Lock()
	s.Text = e.redact.String(s.Text)
	s.Title = e.redact.String(s.Title)
	e.mu.Unlock()
	e.Record(trace.Event{Type: trace.TypeNote, Actor: actorName(actor),
		Text: fmt.Sprintf("snapshot of %s: %d elements with references", s.URL, s.Refs)})
	return s, nil
}

// hasRefs reports whether any point of batch names an element.
func hasRefs(batch []actions.Action) bool {
	for _, a := range batch {
		for _, p := range points(&a) {
			if p.Ref != "" {
				return true
			}
		}
	}
	return false
}

// points returns a's points that are given (At when HasAt, the path, a
// zoom region's corners), for reading and writing.
func points(a *actions.Action) []*actions.Point {
	var ps []*actions.Point
	if a.HasAt {
		ps = append(ps, &a.At)
	}
	for i := range a.Path {
		ps = append(ps, &a.Path[i])
	}
	if a.Region != (actions.Rect{}) {
		ps = append(ps, &a.Region.Min, &a.Region.Max)
	}
	return ps
}

// resolveRefs turns the element references of c's points into points of
// the current screen: each element is found (scrolled into view when none
// of it is), a fresh screenshot is taken, and each reference becomes the
// image pixel at its element's visible centre on it, keeping the ref
// beside it for the record. c then names that screenshot, and everything
// after (validation, policy, approvals, secrets, mapping) treats the call
// as one in pixels. It returns the call, the elements' boxes in image
// pixels by reference (for approval cards), and notes saying where each
// reference resolved.
func (e *Executor) resolveRefs(ctx context.Context, c Call, actor Actor) (Call, map[string]actions.Rect, []string, error) {
	if e.cfg.Referencer == nil {
		return c, nil, nil, ErrNoDOM
	}
	if c.Space.Kind != screen.ImageSpace {
		return c, nil, nil, fmt.Errorf("%w: element references resolve to pixels of the screenshot, not of a %v", actions.ErrInvalid, c.Space)
	}
	if c.FrameID != "" {
		return c, nil, nil, fmt.Errorf("%w: element references are found on the current screen; leave frame_id out of a call that names them", actions.ErrInvalid)
	}
	var refs []string
	batch := slices.Clone(c.Actions)
	for i := range batch {
		batch[i].Path = slices.Clone(batch[i].Path)
		for _, p := range points(&batch[i]) {
			switch {
			case p.Ref == "":
				return c, nil, nil, fmt.Errorf("%w: action %d mixes pixels and element references; give a call's points all as refs or all as pixels", actions.ErrInvalid, i)
			case !slices.Contains(refs, p.Ref):
				refs = append(refs, p.Ref)
			}
		}
	}
	// Locate every element; when one had to be scrolled into view, look
	// again: all of them must be in view at once.
	locs := map[string]screen.Located{}
	for pass := 0; ; pass++ {
		scrolled := false
		for _, ref := range refs {
			l, err := e.cfg.Referencer.Locate(WithActor(ctx, actor), ref)
			if errors.Is(err, screen.ErrUnsupported) {
				return c, nil, nil, ErrNoDOM
			}
			if err != nil {
				return c, nil, nil, err
			}
			locs[ref] = l
			scrolled = scrolled || l.Scrolled
		}
		if !scrolled {
			break
		}
		if pass == 1 {
			return c, nil, nil, fmt.Errorf("the elements %s do not fit in view together; act on them in separate calls", strings.Join(refs, ", "))
		}
	}
	shot, name, err := e.Screenshot(ctx, actor)
	if err != nil {
		return c, nil, nil, fmt.Errorf("screenshot for the element references: %w", err)
	}
	f := shot.Frame
	e.Record(trace.Event{Type: trace.TypeNote, Actor: actorName(actor), Text: "screenshot " + f.ID + " to resolve " + strings.Join(refs, ", "),
		FrameID: f.ID, Frame: f, Shot: name})
	boxes := map[string]actions.Rect{}
	var notes []string
	for _, ref := range refs {
		l := locs[ref]
		centre := actions.Pt((l.Box.Min.X+l.Box.Max.X)/2, (l.Box.Min.Y+l.Box.Max.Y)/2)
		p := f.FromCSS(centre)
		if math.IsNaN(p.X) || p.X < 0 || p.Y < 0 || p.X >= float64(f.Sent.W) || p.Y >= float64(f.Sent.H) {
			return c, nil, nil, fmt.Errorf("%s (%s) is outside screenshot %s", ref, l.Role, f.ID)
		}
		box := actions.Rect{Min: f.FromCSS(l.Box.Min), Max: f.FromCSS(l.Box.Max)}
		boxes[ref] = box
		what := l.Role
		if l.Name != "" {
			what += fmt.Sprintf(" %q", l.Name)
		}
		notes = append(notes, fmt.Sprintf("%s (%s) is at (%g,%g) on screenshot %s", ref, what, p.X, p.Y, f.ID))
		for i := range batch {
			for _, q := range points(&batch[i]) {
				if q.Ref == ref {
					q.X, q.Y = p.X, p.Y
				}
			}
		}
	}
	c.Actions, c.FrameID = batch, f.ID
	e.Record(trace.Event{Type: trace.TypeNote, CallID: c.ID, Actor: actorName(actor), Text: "element references: " + strings.Join(notes, "; "),
		FrameID: f.ID})
	return c, boxes, notes, nil
}
