package axtext

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// The CDP half of snapshots and references, for both browser backends:
// each sends the same commands to the active tab's page over a session of
// its own (screen/cdp's target session, screen/playwright's CDPSession),
// bounded and with errors translated in its own way.

// A Caller sends one CDP command to a page's session and decodes its
// result into result (if not nil). Params are JSON objects (maps).
type Caller interface {
	Call(ctx context.Context, method string, params map[string]any, result any) error
}

// PageKey names the document tab shows now, for references: the
// document's node changes with every navigation, so references of an
// earlier document are stale.
func PageKey(ctx context.Context, c Caller, tab string) (string, error) {
	var doc struct {
		Root *struct {
			BackendNodeID int64 `json:"backendNodeId"`
		} `json:"root"`
	}
	if err := c.Call(ctx, "DOM.getDocument", map[string]any{"depth": 0}, &doc); err != nil {
		return "", err
	}
	if doc.Root != nil {
		tab += fmt.Sprintf("/%d", doc.Root.BackendNodeID)
	}
	return tab, nil
}

// Snapshot reads the accessibility tree of the document page (PageKey)
// as Chromium computes it and renders it as a snapshot's text (Render),
// the values of password fields masked; the references of other pages
// are forgotten. The accessibility domain is on for the read only: it
// costs the page while it is.
func (r *Refs) Snapshot(ctx context.Context, c Caller, page string) (screen.Snapshot, error) {
	if err := c.Call(ctx, "Accessibility.enable", nil, nil); err != nil {
		return screen.Snapshot{}, err
	}
	var tree struct {
		Nodes []Node `json:"nodes"`
	}
	err := c.Call(ctx, "Accessibility.getFullAXTree", nil, &tree)
	if derr := c.Call(ctx, "Accessibility.disable", nil, nil); derr != nil && err == nil {
		err = derr
	}
	if err != nil {
		return screen.Snapshot{}, err
	}
	nodes := maskPasswords(ctx, c, tree.Nodes)
	r.Forget(page)
	text, n := r.Render(page, nodes)
	s := screen.Snapshot{Text: text, Refs: n}
	for _, nd := range nodes {
		if nd.ParentID == "" && nd.Name != nil {
			s.Title, _ = nd.Name.Value.(string)
			break
		}
	}
	return s, nil
}

// maskPasswords drops the value of every password field from nodes: the
// snapshot goes to the client, and typed secrets never do. A field whose
// type cannot be read shows no value.
func maskPasswords(ctx context.Context, c Caller, nodes []Node) []Node {
	for i := range nodes {
		n := &nodes[i]
		if n.Value == nil || n.BackendDOMNodeID == 0 {
			continue
		}
		role, _ := n.Role.Value.(string)
		if role != "textbox" && role != "searchbox" && role != "combobox" {
			continue
		}
		var desc struct {
			Node *struct {
				Attributes []string `json:"attributes"`
			} `json:"node"`
		}
		if err := c.Call(ctx, "DOM.describeNode", map[string]any{"backendNodeId": n.BackendDOMNodeID}, &desc); err != nil || desc.Node == nil {
			n.Value = nil
			continue
		}
		for j := 0; j+1 < len(desc.Node.Attributes); j += 2 {
			if strings.EqualFold(desc.Node.Attributes[j], "type") && strings.EqualFold(desc.Node.Attributes[j+1], "password") {
				n.Value = &Value{Value: actions.SecretMask}
			}
		}
	}
	return nodes
}

// Locate finds the element of ref on the document page (PageKey) and
// returns its visible box (CSS pixels of the viewport: layout pixels
// times zoom), scrolling it into view first when none of it is in view.
// A reference whose element is gone, or of another page, is an error
// wrapping screen.ErrStaleRef; an element with no box (hidden) is an
// error that says so.
func (r *Refs) Locate(ctx context.Context, c Caller, ref, page string, zoom float64) (screen.Located, error) {
	el, err := r.Lookup(ref, page)
	if err != nil {
		return screen.Located{}, err
	}
	loc := screen.Located{Role: el.Role, Name: el.Name}
	box, err := visibleBox(ctx, c, el.Node, zoom)
	if err == nil && box.Empty() {
		if err = c.Call(ctx, "DOM.scrollIntoViewIfNeeded", map[string]any{"backendNodeId": el.Node}, nil); err == nil {
			loc.Scrolled = true
			box, err = visibleBox(ctx, c, el.Node, zoom)
		}
	}
	switch {
	case err != nil && isNodeGone(err):
		return screen.Located{}, fmt.Errorf("%w: %s (%s) is no longer on the page; take a new snapshot", screen.ErrStaleRef, ref, describe(el))
	case err != nil:
		return screen.Located{}, fmt.Errorf("locate %s: %w", ref, err)
	case box.Empty():
		return screen.Located{}, fmt.Errorf("%s (%s) has no visible box to act on (hidden, or of no size)", ref, describe(el))
	}
	loc.Box = box
	return loc, nil
}

func describe(el Element) string {
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
func visibleBox(ctx context.Context, c Caller, node int64, zoom float64) (actions.Rect, error) {
	var q struct {
		Quads [][]float64 `json:"quads"`
	}
	err := c.Call(ctx, "DOM.getContentQuads", map[string]any{"backendNodeId": node}, &q)
	if err != nil && strings.Contains(err.Error(), "Could not compute content quads") {
		return actions.Rect{}, nil // not rendered: no box
	}
	if err != nil {
		return actions.Rect{}, err
	}
	if len(q.Quads) == 0 {
		return actions.Rect{}, nil
	}
	var m struct {
		CSSLayoutViewport *struct {
			ClientWidth  float64 `json:"clientWidth"`
			ClientHeight float64 `json:"clientHeight"`
		} `json:"cssLayoutViewport"`
	}
	if err := c.Call(ctx, "Page.getLayoutMetrics", nil, &m); err != nil {
		return actions.Rect{}, err
	}
	if m.CSSLayoutViewport == nil {
		return actions.Rect{}, errors.New("the page has no viewport")
	}
	vw, vh := m.CSSLayoutViewport.ClientWidth, m.CSSLayoutViewport.ClientHeight
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
	// A zoomed page lays out in px divided by its zoom: its quads are in
	// layout px; the viewport's pixels are zoom times as large.
	if zoom != 1 && zoom > 0 {
		r = actions.Rect{Min: actions.Pt(r.Min.X*zoom, r.Min.Y*zoom), Max: actions.Pt(r.Max.X*zoom, r.Max.Y*zoom)}
	}
	return r, nil
}

// Decode decodes a CDP result (as a session hands it: raw JSON, or
// values of Go's JSON types) into result, for Callers.
func Decode(v any, result any) error {
	if result == nil {
		return nil
	}
	b, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			return err
		}
	}
	return json.Unmarshal(b, result)
}
