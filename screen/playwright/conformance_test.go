package playwright

import (
	"testing"

	"github.com/spotter-harness/spotter/screen/screentest"
)

var _ screentest.Display = (*Display)(nil)

// capabilities is what a Display declares to the conformance suite:
// Playwright's mouse has no back and forward buttons, and its keyboard
// sends no key of the numeric keypad as a keypad key (see unsupportedKeys).
const capabilities = screentest.Pages | screentest.Pointer | screentest.Keys |
	screentest.Typing | screentest.Scroll | screentest.PixelRatio

// TestConformance runs the display conformance suite on the shared browser,
// with a display per device pixel ratio.
func TestConformance(t *testing.T) {
	testBrowser(t)
	screentest.Run(t, capabilities, func(t *testing.T, o screentest.Options) screentest.Display {
		return newDisplay(t, DisplayConfig{Viewport: o.Viewport, DPR: o.DPR})
	})
}
