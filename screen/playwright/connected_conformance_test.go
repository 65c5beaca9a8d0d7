package playwright

import (
	"context"
	"testing"

	"github.com/spotter-harness/spotter/screen/screentest"
)

// TestConnectedConformance runs the display conformance suite on displays
// of a browser connected to a Playwright server.
func TestConnectedConformance(t *testing.T) {
	b := connectBrowser(t, startServer(t).endpoint)
	screentest.Run(t, capabilities, func(t *testing.T, o screentest.Options) screentest.Display {
		d, err := b.NewDisplay(t.Context(), DisplayConfig{Viewport: o.Viewport, DPR: o.DPR})
		if err != nil {
			t.Fatalf("NewDisplay() on a connected browser = %v", err)
		}
		t.Cleanup(func() {
			if err := d.Close(context.Background()); err != nil {
				t.Errorf("Close() = %v", err)
			}
		})
		return d
	})
}
