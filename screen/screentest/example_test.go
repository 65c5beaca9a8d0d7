package screentest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/screentest"
)

// A Fake records what it performs and answers captures with a plain image
// and a complete Frame.
func ExampleFake() {
	ctx := context.Background()
	d := &screentest.Fake{DPR: 2}
	click := actions.Action{Kind: actions.Click, At: actions.Pt(640, 400), HasAt: true}
	if err := d.Perform(ctx, screen.Mapped{Action: click}); err != nil {
		fmt.Println(err)
		return
	}
	shot, err := d.Capture(ctx, screen.CaptureOptions{Size: screen.Size{W: 1024, H: 640}})
	if err != nil {
		fmt.Println(err)
		return
	}
	f := shot.Frame
	fmt.Println(len(d.Performed()), f.ID, f.Viewport, f.DPR, f.Capture, f.Sent, f.Format)
	// Output:
	// 1 f0001 {1280 800} 2 {2560 1600} {1024 640} png
}

// A display backend's tests run the conformance suite with the
// capabilities its displays have, and an Opener that opens one of its
// displays for the viewport and pixel ratio asked for. (The suite needs a
// *testing.T, so this example only shows the call.)
func ExampleRun() {
	testConformance := func(t *testing.T) {
		caps := screentest.Pages | screentest.Pointer | screentest.Keys | screentest.Typing | screentest.Scroll | screentest.PixelRatio
		screentest.Run(t, caps, func(t *testing.T, o screentest.Options) screentest.Display {
			return openBrowserTab(t, o.Viewport, o.DPR)
		})
	}
	_ = testConformance
}

// openBrowserTab stands for a backend's own way to open a display.
func openBrowserTab(t *testing.T, vp screen.Size, dpr float64) screentest.Display {
	return &screentest.Fake{Viewport: vp, DPR: dpr}
}
