package e2e

import (
	"bytes"
	"context"
	"fmt"
	"image"
	_ "image/png" // VNC screenshots
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/script"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/vnc"
	"github.com/spotter-harness/spotter/screen/vnc/desktop"
)

// xtermBG is the terminal's background, so a screenshot shows it.
var xtermBG = [3]uint8{0x20, 0x40, 0x80}

// TestDesktopTask runs the loop on a Linux desktop over VNC: a real Xvnc
// with Openbox and an xterm. The scripted model clicks into the terminal
// and types a shell command; the file the shell writes proves that the
// keystrokes arrived where the model aimed. A browser-only action is
// refused with a clear error, and the run goes on.
//
// The run starts only once the terminal is ready, checked, not waited for:
// its window is mapped, it has the input focus, and the framebuffer shows
// it.
func TestDesktopTask(t *testing.T) {
	integration(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	desk, err := desktop.Start(ctx, desktop.Config{Size: screen.Size{W: 1024, H: 768},
		Apps: []desktop.App{desktop.XTerm("-geometry", "80x24+0+0", "-bg", "#204080", "-fg", "white", "-e", "sh")}})
	if err != nil {
		t.Fatalf("start desktop: %v", err)
	}
	defer desk.Close()
	d, err := desk.Dial(ctx, vnc.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	box := waitForXTerm(ctx, t, desk, d)

	file := filepath.Join(t.TempDir(), "proof.txt")
	// The middle of the terminal's window, in the 1024x768 image.
	at := box.Min.Add(box.Max).Div(2)
	turns := []script.Turn{
		{Say: "The terminal is at the top left; I click into it and run a command.",
			Actions: batchJSON(t, `[{"type":"click","x":%d,"y":%d},{"type":"type","text":"echo spotter-ok > %s\n"}]`, at.X, at.Y, file)},
		{Say: "A desktop has no URL bar.", Actions: batchJSON(t, `[{"type":"navigate","url":"https://example.com/"}]`),
			ExpectError: "desktop has no URL"},
		{Say: "Done."},
	}
	m := script.New(turns, true)
	out, err := harness.Run(ctx, harness.Config{Model: m, Display: d, Policy: allowAll(),
		Capture: screen.CaptureOptions{Size: screen.Size{W: 1024, H: 768}}, MaxSteps: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !out.OK() {
		t.Fatalf("outcome = %s (%s), want end_turn", out.Stop, out.Err)
	}
	// The shell writes the file when it runs the command: check until the
	// deadline rather than sleep a fixed time.
	var got []byte
	for {
		if got, err = os.ReadFile(file); err == nil && bytes.HasSuffix(got, []byte("\n")) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s = %q (%v) at the deadline: the typing did not reach the terminal", file, got, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if string(got) != "spotter-ok\n" {
		t.Errorf("%s = %q, want %q", file, got, "spotter-ok\n")
	}
	if len(m.Received) < 2 || m.Received[1].Results[0].Shot == nil || m.Received[1].Results[0].Shot.Frame.Sent != (screen.Size{W: 1024, H: 768}) {
		t.Errorf("the model did not get a 1024x768 screenshot back")
	}
}

// waitForXTerm returns the xterm's window on the screen once it is mapped,
// has the input focus, and the framebuffer shows its background there.
func waitForXTerm(ctx context.Context, t *testing.T, desk *desktop.Desktop, d *vnc.Display) image.Rectangle {
	t.Helper()
	xdotool := func(args ...string) (string, error) {
		c := exec.CommandContext(ctx, "xdotool", args...)
		c.Env = append(os.Environ(), desk.Env()...)
		out, err := c.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	fail := func(format string, args ...any) {
		logs, _ := filepath.Glob(filepath.Join(filepath.Dir(desk.Socket), "*.log"))
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			t.Logf("%s:\n%s", filepath.Base(l), b)
		}
		t.Fatalf(format, args...)
	}
	// Poll until a window of the class is mapped and viewable.
	t0 := time.Now()
	var win string
	for {
		out, err := xdotool("search", "--onlyvisible", "--class", "xterm")
		if err == nil && out != "" {
			win = strings.Fields(out)[0]
			break
		}
		select {
		case <-ctx.Done():
			fail("no xterm window at the deadline: %v %s", err, out)
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Logf("the xterm's window was mapped after %v", time.Since(t0).Round(time.Millisecond))
	// Activate it through the window manager, and poll until the window
	// manager says it is the active window (the one with the focus).
	if out, err := xdotool("windowactivate", win); err != nil {
		fail("activate the xterm: %v %s", err, out)
	}
	for {
		out, err := xdotool("getactivewindow")
		if err == nil && out == win {
			break
		}
		select {
		case <-ctx.Done():
			fail("the active window is %s (%v) at the deadline, want the xterm's %s", out, err, win)
		case <-time.After(20 * time.Millisecond):
		}
	}
	// xwininfo, not xdotool getwindowgeometry, which counts the window
	// manager's frame twice.
	info := exec.CommandContext(ctx, "xwininfo", "-id", win)
	info.Env = append(os.Environ(), desk.Env()...)
	geo, err := info.CombinedOutput()
	if err != nil {
		fail("xwininfo of the xterm: %v %s", err, geo)
	}
	var x, y, w, h int
	for line := range strings.Lines(string(geo)) {
		line = strings.TrimSpace(line)
		fmt.Sscanf(line, "Absolute upper-left X: %d", &x)
		fmt.Sscanf(line, "Absolute upper-left Y: %d", &y)
		fmt.Sscanf(line, "Width: %d", &w)
		fmt.Sscanf(line, "Height: %d", &h)
	}
	box := image.Rect(x, y, x+w, y+h)
	if box.Dx() < 200 || box.Dy() < 100 || !box.In(image.Rect(0, 0, 1024, 768)) {
		fail("xterm window at %v, want a window of 80x24 cells on the screen", box)
	}
	// The framebuffer (the image the model gets) shows the terminal: its
	// background at the bottom right of the window, away from any text.
	probe := box.Max.Sub(image.Pt(10, 10))
	for {
		shot, err := d.Capture(ctx, screen.CaptureOptions{Format: screen.PNG})
		if err != nil {
			fail("capture: %v", err)
		}
		img, _, err := image.Decode(bytes.NewReader(shot.Data))
		if err != nil {
			fail("decode the screenshot: %v", err)
		}
		r, g, b, _ := img.At(probe.X, probe.Y).RGBA()
		r, g, b = r>>8, g>>8, b>>8
		if near(r, xtermBG[0]) && near(g, xtermBG[1]) && near(b, xtermBG[2]) {
			return box
		}
		select {
		case <-ctx.Done():
			fail("the framebuffer never showed the xterm at %v (pixel %d,%d,%d)", probe, r, g, b)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// batchJSON formats a script batch of JSON, turning newlines in typed text
// into JSON escapes, and checks that it decodes.
func batchJSON(t *testing.T, format string, args ...any) script.Batch {
	t.Helper()
	s := format
	if len(args) > 0 {
		s = fmt.Sprintf(format, args...)
	}
	b := script.Batch(strings.ReplaceAll(s, "\n", `\n`))
	turn, err := script.New([]script.Turn{{Actions: b}}, false).Next(context.Background(), harness.Input{})
	if err != nil || turn.Calls[0].DecodeErr != nil {
		t.Fatalf("script batch %s: %v %v", s, err, turn.Calls[0].DecodeErr)
	}
	return b
}
