// Package hitjs is the one hit-test script of the browser backends
// (screen/cdp and screen/playwright), so that both describe the element
// under a point, or the focused one, alike: the approval rules and the
// secret-field checks see the same screen.Target on either.
package hitjs

import (
	_ "embed"
	"strconv"
)

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
