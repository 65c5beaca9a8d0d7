package screen

import (
	"errors"

	"github.com/spotter-harness/spotter/actions"
)

// ErrStaleRef marks an element reference whose element is no longer on
// the page (it was removed, or the page navigated) or that no snapshot of
// this display named.
var ErrStaleRef = errors.New("stale element reference")

// A Snapshot is a page's accessibility tree as text, for a client without
// vision: one element a line, indented by depth, with its role, accessible
// name, states and a short reference the client may act on instead of a
// point:
//
//   - heading "Check in" [level=1] [ref=e1]
//   - textbox "Passenger name" [required] [ref=e2]: Ada
//   - button "Buy now" [ref=e3]
//
// The same element keeps its reference across snapshots of one page.
type Snapshot struct {
	URL   string `json:"url,omitempty"`
	Title string `json:"title,omitempty"`
	Text  string `json:"text"`
	Refs  int    `json:"refs"` // elements with a reference
}

// Located is where an element reference's element is now: its visible
// box in CSS pixels of the viewport (the part of its border box inside
// the viewport), after it was scrolled into view when none of it was.
type Located struct {
	Box      actions.Rect
	Role     string
	Name     string
	Scrolled bool
}
