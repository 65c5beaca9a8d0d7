package playwright

import (
	"testing"

	"github.com/spotter-harness/spotter/screen/screentest"
)

var _ screentest.Display = (*Display)(nil)

// TestConformance runs the display conformance suite on the shared browser,
// with a display per device pixel ratio.
func TestConformance(t *testing.T) {
	testBrowser(t)
	screentest.Run(t, func(t *testing.T, o screentest.Options) (screentest.Display, bool) {
		return newDisplay(t, DisplayConfig{Viewport: o.Viewport, DPR: o.DPR}), true
	})
}
