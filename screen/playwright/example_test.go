package playwright_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/playwright"
)

// A DPR-2 display captured at the 1024x640 a model is sent. Playwright
// captures 1280x800 (one pixel per CSS pixel) and the display resizes it.
//
// This example needs the Playwright driver (install-driver.sh) and
// Chromium, so it has no Output comment and go test only compiles it; the
// integration tests (SPOTTER_INTEGRATION=1) run the same path. It prints:
//
//	f0001 {1280 800} 2 {2560 1600} {1024 640} jpeg
func ExampleOpen() {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<button style="width:100%;height:100vh" onclick="this.textContent='clicked'">click me</button>`)
	}))
	defer page.Close()

	ctx := context.Background()
	d, err := playwright.Open(ctx, playwright.Config{Viewport: screen.Size{W: 1280, H: 800}, DPR: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close(ctx)

	steps := []actions.Action{
		{Kind: actions.Navigate, URL: page.URL},
		{Kind: actions.Click, At: actions.Pt(640, 400), HasAt: true}, // CSS px, as screen.Frame.Map makes them
	}
	for _, a := range steps {
		if err := d.Perform(ctx, screen.Mapped{Action: a}); err != nil {
			log.Fatal(err)
		}
	}
	shot, err := d.Capture(ctx, screen.CaptureOptions{Size: screen.Size{W: 1024, H: 640}, Format: screen.JPEG})
	if err != nil {
		log.Fatal(err)
	}
	f := shot.Frame
	fmt.Println(f.ID, f.Viewport, f.DPR, f.Capture, f.Sent, f.Format)
}

// Several displays can share one browser and driver; each is a page in a
// browser context of its own. (Needs the driver and Chromium: compiled,
// not run, by go test.)
func ExampleBrowser_NewDisplay() {
	ctx := context.Background()
	b, err := playwright.Launch(ctx, playwright.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close(ctx)
	for _, dpr := range []float64{1, 2} {
		d, err := b.NewDisplay(ctx, playwright.DisplayConfig{DPR: dpr})
		if err != nil {
			log.Fatal(err)
		}
		defer d.Close(ctx)
		shot, err := d.Capture(ctx, screen.CaptureOptions{})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(shot.Frame.Sent, shot.Frame.Capture)
	}
}
