// Package hitjs holds the scripts that both browser backends (screen/cdp
// and screen/playwright) run in pages: the one hit-test script, so that
// both describe the element under a point, or the focused one, alike (the
// approval rules and the secret-field checks see the same screen.Target on
// either), and the watch of what a file input received from an upload.
package hitjs

import (
	_ "embed"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/spotter-harness/spotter/actions"
)

// Timeout bounds a whole HitTest or Focused call, however many frames it
// descends into.
const Timeout = 5 * time.Second

// MaxFrameDepth bounds how many iframes a hit-test enters from outside
// the page's process.
const MaxFrameDepth = 4

// World names the isolated world that hit-tests run in: its globals and
// DOM wrappers are its own, so a page that overrides
// document.elementFromPoint, or defines throwing getters on its elements,
// does not change what a hit-test sees.
const World = "spotter-hittest"

// CheckPoint refuses a point a hit-test cannot be asked about.
func CheckPoint(p actions.Point) error {
	if math.IsNaN(p.X) || math.IsNaN(p.Y) || math.IsInf(p.X, 0) || math.IsInf(p.Y, 0) {
		return fmt.Errorf("hit-test at %v: %w: not a finite point", p, actions.ErrInvalid)
	}
	return nil
}

// script locates the element and describes it. Every loop and text walk
// is bounded.
//
//go:embed hit.js
var script string

// Expr returns a script expression whose value is an object with the
// hit-test's result: .element (the element, for the protocol) and
// .describe(inFrame) (the screen.Target as JSON, with cross set for an
// iframe it could not enter). mode is "point" (the element at x, y, CSS
// pixels of the frame's viewport) or "focus" (the focused element).
func Expr(mode string, x, y float64) string {
	return "(" + script + ")(" + strconv.Quote(mode) + "," + strconv.FormatFloat(x, 'f', -1, 64) + "," +
		strconv.FormatFloat(y, 'f', -1, 64) + ")"
}
