package cdp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/internal/axtext"
	"github.com/spotter-harness/spotter/screen/internal/hitjs"
)

// Snapshot returns the active tab's accessibility tree as Chromium
// computes it (roles, accessible names, states, the values of fields but
// never of password fields), as text with a reference for each element
// (screen.Snapshot). Like HitTest it reads the page and changes nothing,
// takes at most hitjs.Timeout, and waits for a Perform or Capture in
// progress to end. The main frame's document only: iframes show as
// elements without their content.
func (d *Display) Snapshot(ctx context.Context) (screen.Snapshot, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ctx, cancel, top, page, err := d.refPage(ctx)
	defer cancel()
	if err != nil {
		return screen.Snapshot{}, fmt.Errorf("snapshot: %w", err)
	}
	// Chromium builds the whole tree only while the domain is on; it
	// costs the page while it is, so it is on for the snapshot only.
	if _, err := hitCall(ctx, d, top, accessibility.Enable, cdp.Empty{}); err != nil {
		return screen.Snapshot{}, fmt.Errorf("snapshot: %w", err)
	}
	res, err := hitCall(ctx, d, top, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if _, derr := hitCall(ctx, d, top, accessibility.Disable, cdp.Empty{}); derr != nil && err == nil {
		err = derr
	}
	if err != nil {
		return screen.Snapshot{}, fmt.Errorf("snapshot: %w", err)
	}
	b, err := json.Marshal(res.Nodes)
	if err != nil {
		return screen.Snapshot{}, fmt.Errorf("snapshot: %w", err)
	}
	var nodes []axtext.Node
	if err := json.Unmarshal(b, &nodes); err != nil {
		return screen.Snapshot{}, fmt.Errorf("snapshot: %w", err)
	}
	masked, err := d.maskPasswords(ctx, top, nodes)
	if err != nil {
		return screen.Snapshot{}, fmt.Errorf("snapshot: %w", err)
	}
	d.refs.Forget(page)
	text, n := d.refs.Render(page, masked)
	s := screen.Snapshot{Text: text, Refs: n, URL: d.activeState().currentURL()}
	for _, nd := range nodes {
		if nd.ParentID == "" && nd.Name != nil {
			s.Title, _ = nd.Name.Value.(string)
			break
		}
	}
	return s, nil
}

// maskPasswords drops the value of every password field from nodes: the
// snapshot goes to the client, and typed secrets never do.
func (d *Display) maskPasswords(ctx context.Context, top cdp.Session, nodes []axtext.Node) ([]axtext.Node, error) {
	for i := range nodes {
		n := &nodes[i]
		if n.Value == nil || n.BackendDOMNodeID == 0 {
			continue
		}
		role, _ := n.Role.Value.(string)
		if role != "textbox" && role != "searchbox" && role != "combobox" {
			continue
		}
		desc, err := hitCall(ctx, d, top, dom.DescribeNode, dom.DescribeNodeParams{BackendNodeID: cdp.BackendNodeID(n.BackendDOMNodeID)})
		if err != nil || desc.Node == nil {
			n.Value = nil // unknown: not shown
			continue
		}
		for j := 0; j+1 < len(desc.Node.Attributes); j += 2 {
			if strings.EqualFold(desc.Node.Attributes[j], "type") && strings.EqualFold(desc.Node.Attributes[j+1], "password") {
				n.Value = &axtext.Value{Value: actions.SecretMask}
			}
		}
	}
	return nodes, nil
}

// refPage bounds ctx by hitjs.Timeout and returns it with the active
// tab's session and the key of its page for references. It runs under
// mu; the caller must call cancel.
func (d *Display) refPage(ctx context.Context) (context.Context, context.CancelFunc, cdp.Session, string, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, hitjs.Timeout,
		fmt.Errorf("the page did not answer within %v: %w", hitjs.Timeout, ErrUnresponsive))
	top, key, err := d.refKey(ctx)
	return ctx, cancel, top, key, err
}

func (d *Display) refKey(ctx context.Context) (cdp.Session, string, error) {
	if err := d.check(); err != nil {
		return nil, "", err
	}
	d.tabMu.RLock()
	cur, top, state := d.cur, d.t, d.state
	d.tabMu.RUnlock()
	if dlg := state.openDialog(); dlg != "" {
		return nil, "", fmt.Errorf("the page is blocked by %s: %w", dlg, errBlocked)
	}
	key := ""
	if cur != nil {
		key = string(cur.id)
	}
	// The document's node changes with every navigation: references of
	// an earlier document are stale.
	doc, err := hitCall(ctx, d, top, dom.GetDocument, dom.GetDocumentParams{Depth: new(int64)})
	if err != nil {
		return nil, "", err
	}
	if doc.Root != nil {
		key += fmt.Sprintf("/%d", doc.Root.BackendNodeID)
	}
	return top, key, nil
}

// Locate finds the element of a reference from Snapshot on the active
// tab and returns its visible box (CSS pixels of the viewport), scrolling
// it into view first when none of it is in view. A reference whose
// element is gone, or of another tab, is an error wrapping
// screen.ErrStaleRef; an element with no box (hidden) is an error that
// says so.
func (d *Display) Locate(ctx context.Context, ref string) (screen.Located, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ctx, cancel, top, page, err := d.refPage(ctx)
	defer cancel()
	if err != nil {
		return screen.Located{}, fmt.Errorf("locate %s: %w", ref, err)
	}
	el, err := d.refs.Lookup(ref, page)
	if err != nil {
		return screen.Located{}, err
	}
	loc := screen.Located{Role: el.Role, Name: el.Name}
	node := cdp.BackendNodeID(el.Node)
	box, err := d.visibleBox(ctx, top, node)
	if err == nil && box.Empty() {
		if _, err = hitCall(ctx, d, top, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: node}); err == nil {
			loc.Scrolled = true
			box, err = d.visibleBox(ctx, top, node)
		}
	}
	switch {
	case err != nil && isNodeGone(err):
		return screen.Located{}, fmt.Errorf("%w: %s (%s) is no longer on the page; take a new snapshot", screen.ErrStaleRef, ref, describeEl(el))
	case err != nil:
		return screen.Located{}, fmt.Errorf("locate %s: %w", ref, err)
	case box.Empty():
		return screen.Located{}, fmt.Errorf("%s (%s) has no visible box to act on (hidden, or of no size)", ref, describeEl(el))
	}
	loc.Box = box
	return loc, nil
}

func describeEl(el axtext.Element) string {
	if el.Name != "" {
		return fmt.Sprintf("%s %q", el.Role, el.Name)
	}
	return el.Role
}

// isNodeGone reports whether a DOM command failed because its node is
// not in the document any more.
func isNodeGone(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "No node with given id") || strings.Contains(msg, "not attached") ||
		strings.Contains(msg, "detached") || strings.Contains(msg, "Could not find node")
}

// visibleBox returns the part of a node's first content quad's bounding
// box inside the viewport, in CSS pixels of the viewport (the empty Rect
// when none is), or an error.
func (d *Display) visibleBox(ctx context.Context, top cdp.Session, node cdp.BackendNodeID) (actions.Rect, error) {
	q, err := hitCall(ctx, d, top, dom.GetContentQuads, dom.GetContentQuadsParams{BackendNodeID: node})
	if err != nil && strings.Contains(err.Error(), "Could not compute content quads") {
		return actions.Rect{}, nil // not rendered: no box
	}
	if err != nil {
		return actions.Rect{}, err
	}
	if len(q.Quads) == 0 {
		return actions.Rect{}, nil
	}
	m, err := hitCall(ctx, d, top, page.GetLayoutMetrics, cdp.Empty{})
	if err != nil {
		return actions.Rect{}, err
	}
	if m.CSSLayoutViewport == nil {
		return actions.Rect{}, errors.New("the page has no viewport")
	}
	vw, vh := float64(m.CSSLayoutViewport.ClientWidth), float64(m.CSSLayoutViewport.ClientHeight)
	quad := q.Quads[0]
	r := actions.Rect{Min: actions.Pt(math.Inf(1), math.Inf(1)), Max: actions.Pt(math.Inf(-1), math.Inf(-1))}
	for i := 0; i+1 < len(quad); i += 2 {
		r.Min.X, r.Max.X = min(r.Min.X, quad[i]), max(r.Max.X, quad[i])
		r.Min.Y, r.Max.Y = min(r.Min.Y, quad[i+1]), max(r.Max.Y, quad[i+1])
	}
	r.Min.X, r.Min.Y = max(r.Min.X, 0), max(r.Min.Y, 0)
	r.Max.X, r.Max.Y = min(r.Max.X, vw), min(r.Max.Y, vh)
	if r.Empty() {
		return actions.Rect{}, nil
	}
	// A zoomed page lays out in px divided by its zoom: its quads are
	// in layout px; the viewport's pixels are zoom times as large.
	if z := d.zoom(); z != 1 {
		r = actions.Rect{Min: actions.Pt(r.Min.X*z, r.Min.Y*z), Max: actions.Pt(r.Max.X*z, r.Max.Y*z)}
	}
	return r, nil
}
