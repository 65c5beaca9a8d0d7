package desktop_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/vnc"
	"github.com/spotter-harness/spotter/screen/vnc/desktop"
)

// Start a desktop with a browser on it and connect to it.
func ExampleStart() {
	ctx := context.Background()
	d, err := desktop.Start(ctx, desktop.Config{
		Size: screen.Size{W: 1280, H: 800},
		Apps: []desktop.App{desktop.Chromium("https://example.com")},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()

	v, err := d.Dial(ctx, vnc.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer v.Close()
	shot, err := v.Capture(ctx, screen.CaptureOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(shot.Frame.Viewport)
}

func ExampleChromium() {
	app := desktop.Chromium("https://example.com")
	fmt.Println(strings.Join(app.Argv, "\n"))
	// Output:
	// chromium
	// --disable-background-networking
	// --disable-component-update
	// --component-updater=url-source=http://localhost:0/
	// --gaia-url=http://localhost:0/
	// --disable-sync
	// --disable-default-apps
	// --disable-client-side-phishing-detection
	// --disable-domain-reliability
	// --no-pings
	// --metrics-recording-only
	// --no-first-run
	// --no-default-browser-check
	// --disable-features=Translate,AutofillServerCommunication,NetworkTimeServiceQuerying,OptimizationHints,OptimizationHintsFetching,OptimizationGuideModelDownloading,OptimizationGuideOnDeviceModel,MediaRouter,DialMediaRouteProvider
	// --no-sandbox
	// --disable-gpu
	// --disable-dev-shm-usage
	// --password-store=basic
	// --test-type
	// --user-data-dir=chromium-profile
	// --start-maximized
	// https://example.com
}
