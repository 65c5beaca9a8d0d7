package wiring

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/vnc/desktop"
)

// The vnc backend connects to a VNC server that runs elsewhere, with the
// password from the variable the spec names; a screen of another size than
// the spec's is refused in words, and so is a browser-only action. A vnc
// display has no DOM to inspect.
func TestOpenVNC(t *testing.T) {
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("set SPOTTER_INTEGRATION=1 to run tests against a real Xvnc")
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	desk, err := desktop.Start(ctx, desktop.Config{Size: screen.Size{W: 800, H: 600}, Password: "s3cret"})
	if err != nil {
		t.Fatalf("start a desktop to connect to: %v", err)
	}
	defer desk.Close()
	env := func(k string) string {
		if k == "TEST_VNC_PASSWORD" {
			return "s3cret"
		}
		return ""
	}
	spec := DisplaySpec{Backend: VNC, Address: "unix:" + desk.Socket, PasswordEnv: "TEST_VNC_PASSWORD", Width: 800, Height: 600}

	wrong := spec
	wrong.Width, wrong.Height = 1280, 800
	if d, err := OpenDisplay(ctx, DisplayRequest{Display: wrong, Getenv: env}); err == nil {
		d.Close(ctx)
		t.Errorf("OpenDisplay(1280x800 on an 800x600 server) = nil error, want one")
	} else if !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), "screen is 800x600") {
		t.Errorf("OpenDisplay(1280x800 on an 800x600 server) = %v, want ErrSpec naming the server's size", err)
	}

	d, err := OpenDisplay(ctx, DisplayRequest{Display: spec, Getenv: env})
	if err != nil {
		t.Fatalf("OpenDisplay(vnc) = %v", err)
	}
	defer d.Close(context.Background())
	if _, ok := d.(*BrowserDisplay); ok {
		t.Errorf("OpenDisplay(vnc) is a BrowserDisplay, want a display without a DOM")
	}
	shot, err := d.Capture(ctx, screen.CaptureOptions{Size: screen.Size{W: 800, H: 600}, Format: screen.PNG})
	if err != nil || shot.Frame.Viewport != (screen.Size{W: 800, H: 600}) {
		t.Fatalf("Capture() = %v (viewport %v), want an 800x600 screenshot", err, shot.Frame.Viewport)
	}
	err = d.Perform(ctx, screen.Mapped{Action: actions.Action{Kind: actions.Navigate, URL: "https://example.com/"}})
	if !errors.Is(err, screen.ErrUnsupported) || !strings.Contains(err.Error(), "not a browser") {
		t.Errorf("Perform(navigate) = %v, want ErrUnsupported saying the display is not a browser", err)
	}
	if err := d.Perform(ctx, screen.Mapped{Action: actions.Action{Kind: actions.Click, At: actions.Pt(10, 10)}}); err != nil {
		t.Errorf("Perform(click) = %v", err)
	}

	bad := spec
	bad.PasswordEnv = "TEST_VNC_WRONG"
	wrongPass := func(k string) string { return map[string]string{"TEST_VNC_WRONG": "nope"}[k] }
	if d, err := OpenDisplay(ctx, DisplayRequest{Display: bad, Getenv: wrongPass}); err == nil {
		d.Close(ctx)
		t.Errorf("OpenDisplay(wrong password) = nil error, want one")
	} else if strings.Contains(err.Error(), "nope") {
		t.Errorf("OpenDisplay(wrong password) = %v: the error shows the password", err)
	}
}
