package playwright

import (
	"github.com/spotter-harness/spotter/screen/screentest"
)

var _ screentest.Display = (*Display)(nil)

// capabilities is what a Display declares to the conformance suite:
// Playwright's mouse has no back and forward buttons, and its keyboard
// sends no key of the numeric keypad as a keypad key (see unsupportedKeys).
//
// A launched browser's displays run the suite in the behaviour matrix
// (internal/matrix: none and local, at DPR 1, 1.5 and 2, opened as the
// entry points open them); TestConnectedConformance runs it on a browser
// connected to a Playwright server, which the matrix does not open.
const capabilities = screentest.Pages | screentest.Pointer | screentest.Keys |
	screentest.Typing | screentest.Scroll | screentest.PixelRatio
