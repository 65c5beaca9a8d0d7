// Package axtext turns a page's accessibility tree, as Chromium's
// Accessibility.getFullAXTree answers it, into the text of a
// screen.Snapshot, and keeps the element references it hands out: one
// implementation for the browser backends (screen/cdp, screen/playwright),
// which fetch the tree over CDP each in their own way.
package axtext

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/spotter-harness/spotter/screen"
)

// Node is the part of a CDP Accessibility.AXNode a snapshot reads.
type Node struct {
	NodeID           string     `json:"nodeId"`
	Ignored          bool       `json:"ignored"`
	Role             *Value     `json:"role,omitempty"`
	Name             *Value     `json:"name,omitempty"`
	Value            *Value     `json:"value,omitempty"`
	Properties       []Property `json:"properties,omitempty"`
	ParentID         string     `json:"parentId,omitempty"`
	ChildIDs         []string   `json:"childIds,omitempty"`
	BackendDOMNodeID int64      `json:"backendDOMNodeId,omitempty"`
}

// Value is an AXValue.
type Value struct {
	Value any `json:"value,omitempty"`
}

// Property is an AXProperty.
type Property struct {
	Name  string `json:"name"`
	Value Value  `json:"value"`
}

func (v *Value) str() string {
	if v == nil || v.Value == nil {
		return ""
	}
	switch x := v.Value.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v.Value)
}

// MaxLines bounds a snapshot's text.
const MaxLines = 3000

// flattened roles stand for no element of their own: their children are
// shown in their place.
var flattened = map[string]bool{"generic": true, "none": true, "presentation": true, "LabelText": true,
	"ListMarker": true, "Section": true}

// skipped roles are neither shown nor descended into.
var skipped = map[string]bool{"InlineTextBox": true, "LineBreak": true}

// valued roles show their value after the line.
var valued = map[string]bool{"textbox": true, "searchbox": true, "combobox": true, "spinbutton": true, "slider": true}

// states are the properties shown in brackets, in this order.
var states = []string{"level", "checked", "pressed", "selected", "expanded", "disabled", "required", "readonly", "invalid", "focused"}

// Refs hands out element references ("e1", "e2", ...) for the elements
// of snapshots, by their DOM backend node id, and finds the element of a
// reference again. An element keeps its reference across snapshots; a
// reference of a page that is no longer shown is stale.
type Refs struct {
	mu     sync.Mutex
	next   int
	byNode map[refKey]string
	byRef  map[string]refEntry
}

type refKey struct {
	page string
	node int64
}

type refEntry struct {
	refKey
	role, name string
}

// Element is a reference's element.
type Element struct {
	Node       int64 // DOM backend node id
	Role, Name string
}

func (r *Refs) ref(page string, node int64, role, name string) string {
	if r.byNode == nil {
		r.byNode, r.byRef = map[refKey]string{}, map[string]refEntry{}
	}
	k := refKey{page, node}
	if ref, ok := r.byNode[k]; ok {
		r.byRef[ref] = refEntry{k, role, name}
		return ref
	}
	r.next++
	ref := "e" + strconv.Itoa(r.next)
	r.byNode[k] = ref
	r.byRef[ref] = refEntry{k, role, name}
	return ref
}

// Forget drops the references of every page but page (the one shown now):
// they are stale.
func (r *Refs) Forget(page string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, ref := range r.byNode {
		if k.page != page {
			delete(r.byNode, k)
			delete(r.byRef, ref)
		}
	}
}

// Lookup returns the element of ref on page. A reference no snapshot of
// page handed out, or one of another page, is an error wrapping
// screen.ErrStaleRef that says which.
func (r *Refs) Lookup(ref, page string) (Element, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.byRef[ref]
	if !ok {
		n, err := strconv.Atoi(strings.TrimPrefix(ref, "e"))
		if !strings.HasPrefix(ref, "e") || err != nil || n < 1 || n > r.next {
			return Element{}, fmt.Errorf("%w: no snapshot named %q; refs are the [ref=...] of the snapshot tool's answer", screen.ErrStaleRef, ref)
		}
		return Element{}, fmt.Errorf("%w: %s belonged to a page that is no longer shown; take a new snapshot", screen.ErrStaleRef, ref)
	}
	if e.page != page {
		return Element{}, fmt.Errorf("%w: %s belongs to a page or tab that is no longer shown; take a new snapshot", screen.ErrStaleRef, ref)
	}
	return Element{Node: e.node, Role: e.role, Name: e.name}, nil
}

// Render writes the tree of nodes (all of one page's, as
// getFullAXTree gives them) as a snapshot's text, handing out references.
// It returns the text and the number of elements with a reference.
func (r *Refs) Render(page string, nodes []Node) (string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	byID := make(map[string]*Node, len(nodes))
	var root *Node
	for i := range nodes {
		n := &nodes[i]
		byID[n.NodeID] = n
		if root == nil && n.ParentID == "" {
			root = n
		}
	}
	if root == nil {
		return "", 0
	}
	w := &writer{r: r, page: page, byID: byID, seen: map[string]bool{}}
	w.walk(root, 0, "")
	if w.more > 0 {
		fmt.Fprintf(&w.b, "- ... %d more elements not shown (the page is long)\n", w.more)
	}
	return w.b.String(), w.refs
}

type writer struct {
	r          *Refs
	page       string
	byID       map[string]*Node
	seen       map[string]bool
	b          strings.Builder
	lines      int
	refs, more int
}

func (w *writer) line(depth int, s string) {
	if w.lines >= MaxLines {
		w.more++
		return
	}
	w.lines++
	w.b.WriteString(strings.Repeat("  ", depth))
	w.b.WriteString("- ")
	w.b.WriteString(s)
	w.b.WriteByte('\n')
}

func (w *writer) children(n *Node, depth int, parentName string) {
	for _, id := range n.ChildIDs {
		if c := w.byID[id]; c != nil {
			w.walk(c, depth, parentName)
		}
	}
}

func (w *writer) walk(n *Node, depth int, parentName string) {
	if w.seen[n.NodeID] {
		return // a cycle would be the browser's bug; never loop on it
	}
	w.seen[n.NodeID] = true
	role := n.Role.str()
	name := clip(strings.TrimSpace(n.Name.str()), 100)
	switch {
	case skipped[role]:
		return
	case role == "RootWebArea" || role == "WebArea":
		w.children(n, depth, name)
		return
	case n.Ignored || flattened[role] || role == "":
		w.children(n, depth, parentName)
		return
	case role == "StaticText":
		if name != "" && name != parentName && !strings.Contains(parentName, name) {
			w.line(depth, "text: "+strconv.Quote(clip(name, 200)))
		}
		return
	}
	s := role
	if name != "" {
		s += " " + strconv.Quote(name)
	}
	for _, st := range states {
		for _, p := range n.Properties {
			if p.Name != st {
				continue
			}
			v := p.Value.str()
			switch {
			case v == "" || v == "false":
			case v == "true":
				s += " [" + st + "]"
			default:
				s += " [" + st + "=" + v + "]"
			}
		}
	}
	if n.BackendDOMNodeID != 0 {
		s += " [ref=" + w.r.ref(w.page, n.BackendDOMNodeID, role, name) + "]"
		w.refs++
	}
	if valued[role] {
		if v := n.Value.str(); v != "" {
			s += ": " + clip(v, 200)
		}
	}
	w.line(depth, s)
	w.children(n, depth+1, name)
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
