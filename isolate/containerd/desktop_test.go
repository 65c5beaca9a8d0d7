package containerd

import (
	"bytes"
	"context"
	"image"
	_ "image/png" // VNC screenshots
	"strings"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/vnc"
)

// xtermBlue is the background of the sandbox desktop's terminal.
var xtermBlue = [3]uint8{0x20, 0x40, 0x80}

// TestDesktopInSandbox starts a desktop inside a sandbox and drives it
// over the agent's unix socket: a screenshot shows the terminal, a click
// gives it the focus, and typed text runs a command whose output file
// appears in the sandbox, written by the sandbox's user.
func TestDesktopInSandbox(t *testing.T) {
	s := startSandbox(t, isolate.Config{Name: "desktop"})
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	t0 := time.Now()
	d, err := s.Desktop(ctx, screen.Size{W: 800, H: 600}, nil, vnc.Config{})
	if err != nil {
		t.Fatalf("Desktop() = %v", err)
	}
	defer d.Close()
	t.Logf("desktop up in %v", time.Since(t0).Round(time.Millisecond))

	// Poll the framebuffer until the terminal shows, well inside its
	// window (80x24 cells from the top left, below Openbox's title bar).
	probe := image.Pt(300, 300)
	for {
		shot, err := d.Capture(ctx, screen.CaptureOptions{Format: screen.PNG})
		if err != nil {
			t.Fatalf("Capture() = %v", err)
		}
		if shot.Frame.Viewport != (screen.Size{W: 800, H: 600}) {
			t.Fatalf("screen %v, want 800x600", shot.Frame.Viewport)
		}
		img, _, err := image.Decode(bytes.NewReader(shot.Data))
		if err != nil {
			t.Fatal(err)
		}
		r, g, b, _ := img.At(probe.X, probe.Y).RGBA()
		if near8(r>>8, xtermBlue[0]) && near8(g>>8, xtermBlue[1]) && near8(b>>8, xtermBlue[2]) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the terminal never showed at %v (pixel %d,%d,%d); agent log:\n%s", probe, r>>8, g>>8, b>>8, tail(s.dir+"/"+logFileName, 4096))
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Logf("terminal on screen %v after the start", time.Since(t0).Round(time.Millisecond))

	click := screen.Mapped{Action: actions.Action{Kind: actions.Click, At: actions.Pt(float64(probe.X), float64(probe.Y)), HasAt: true}}
	if err := d.Perform(ctx, click); err != nil {
		t.Fatalf("click: %v", err)
	}
	typed := screen.Mapped{Action: actions.Action{Kind: actions.Type, Text: "echo spotter-ok > /tmp/desktop-proof\n"}}
	if err := d.Perform(ctx, typed); err != nil {
		t.Fatalf("type: %v", err)
	}
	for {
		out, code, err := s.exec(ctx, nil, "/bin/sh", "-c", "cat /tmp/desktop-proof && stat -c %u /tmp/desktop-proof")
		if err == nil && code == 0 && strings.Fields(out)[0] == "spotter-ok" {
			if f := strings.Fields(out); len(f) < 2 || f[1] != "10001" {
				t.Errorf("the file was written by uid %v, want the sandbox's 10001", f)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no proof file in the sandbox: %q %d %v", out, code, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func near8(v uint32, want uint8) bool {
	d := int(v) - int(want)
	return d > -24 && d < 24
}
