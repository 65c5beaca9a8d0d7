package mcp

import (
	"bytes"
	"context"
	"log/slog"
	"net/url"
	"os"
	"testing"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/internal/demo"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
)

// TestChromiumOverBothTransports drives the demo app in a real Chromium
// through an MCP client: a screenshot, a click into the name field, typing,
// a click on Check in, and a fresh image that shows the change; the demo
// app confirms the check-in arrived.
func TestChromiumOverBothTransports(t *testing.T) {
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("set SPOTTER_INTEGRATION=1 to run tests against a real Chromium")
	}
	ctx := t.Context()
	b, err := cdp.Launch(ctx, cdp.Config{Viewport: screen.Size{W: 1280, H: 800}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(context.Background()) })

	for _, transport := range []string{"memory", "http"} {
		t.Run(transport, func(t *testing.T) {
			app := demo.NewServer()
			base, stop, err := app.Serve(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(stop)
			u, _ := url.Parse(base)
			policy := actions.Standard()
			policy.Hosts = []string{u.Host}
			srv, err := New(Config{
				NewDisplay: func(ctx context.Context) (Display, error) { return b.NewDisplay(ctx, cdp.DisplayConfig{}) },
				StartURL:   base + "/",
				Policy:     policy,
				Capture:    screen.CaptureOptions{Size: screen.Size{W: 1024, H: 640}},
				Logger:     slog.New(slog.DiscardHandler),
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Close(context.Background()) })
			f := &fixture{srv: srv}
			cs := f.connect(t, transport)

			first, images, errText := call(t, cs, ToolComputer, map[string]any{"kind": "screenshot"})
			if errText != "" || len(images) != 1 || first.Image != (screen.Size{W: 1024, H: 640}) {
				t.Fatalf("screenshot: %+v, %d images, error %q", first, len(images), errText)
			}
			before := images[0]
			// The demo's name field and Check in button, in the 1024x640 image.
			n, _, errText := call(t, cs, ToolComputer, map[string]any{"frame_id": first.FrameID, "actions": []any{
				map[string]any{"kind": "click", "at": map[string]any{"x": 182, "y": 113}},
				map[string]any{"kind": "type", "text": "Ada Lovelace"},
				map[string]any{"kind": "click", "at": map[string]any{"x": 386, "y": 113}},
			}})
			if errText != "" || n.Ran != 3 {
				t.Fatalf("click, type, click: ran %d, error %q", n.Ran, errText)
			}
			after, images, errText := call(t, cs, ToolComputer, map[string]any{"kind": "screenshot"})
			if errText != "" || len(images) != 1 || after.FrameID == first.FrameID {
				t.Fatalf("second screenshot: %+v, error %q, want a fresh frame", after, errText)
			}
			if bytes.Equal(before, images[0]) {
				t.Errorf("the screenshot after checking in is the same image as before")
			}
			if got := app.State()["checkin"]; got != "Ada Lovelace" {
				t.Errorf("demo app checked in %q, want %q", got, "Ada Lovelace")
			}
			// Navigating is allowed to the demo's host only.
			if _, _, errText := call(t, cs, ToolNavigate, map[string]any{"url": base + "/?again"}); errText != "" {
				t.Errorf("navigate within the demo: %s", errText)
			}
		})
	}
}
