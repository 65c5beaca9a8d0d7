// Package desktop_test runs the harness loop on a Linux desktop over VNC. It
// is its own test binary: in a process that had already driven Chromium (the
// e2e package's other tests), the xterm never mapped a window, for a reason
// not yet found; alone, it passes every time.
package desktop_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/script"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/vnc"
	"github.com/spotter-harness/spotter/screen/vnc/desktop"
)

// TestDesktopTask runs the same loop on a Linux desktop over VNC: a real
// Xvnc with Openbox and an xterm. The scripted model clicks into the
// terminal and types a shell command; the file the shell writes proves the
// keystrokes arrived where the model aimed. Browser-only kinds are refused
// with a clear error and the run goes on.
func TestDesktopTask(t *testing.T) {
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("set SPOTTER_INTEGRATION=1 to run tests against a real Xvnc")
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	desk, err := desktop.Start(ctx, desktop.Config{Size: screen.Size{W: 1024, H: 768},
		Apps: []desktop.App{desktop.XTerm("-geometry", "80x24+0+0", "-e", "sh")}})
	if err != nil {
		t.Fatalf("start desktop: %v", err)
	}
	defer desk.Close()
	// Wait for the terminal's window, so the first screenshot shows it.
	for {
		find := exec.CommandContext(ctx, "xdotool", "search", "--onlyvisible", "--class", "xterm")
		find.Env = append(os.Environ(), desk.Env()...)
		out, err := find.Output()
		if err == nil && len(strings.TrimSpace(string(out))) > 0 {
			break
		}
		select {
		case <-ctx.Done():
			logs, _ := filepath.Glob(filepath.Join(filepath.Dir(desk.Socket), "*.log"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				t.Logf("%s:\n%s", filepath.Base(l), b)
			}
			t.Fatalf("no xterm window appeared: %v (xdotool: %v %s)", ctx.Err(), err, out)
		case <-time.After(100 * time.Millisecond):
		}
	}
	d, err := desk.Dial(ctx, vnc.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	file := filepath.Join(t.TempDir(), "proof.txt")
	turns := []script.Turn{
		{Say: "The terminal is at the top left; I click into it and run a command.",
			Actions: batch(t, `[{"type":"click","x":120,"y":90},{"type":"type","text":"echo spotter-was-here > %s\n"}]`, file)},
		{Say: "A desktop has no URL bar.", Actions: batch(t, `[{"type":"navigate","url":"https://example.com/"}]`),
			ExpectError: "desktop has no URL"},
		{Say: "Done."},
	}
	m := script.New(turns, true)
	allowAll := actions.Policy{Allow: actions.Kinds(), Hosts: []string{"*"}}
	out, err := harness.Run(ctx, harness.Config{Model: m, Display: d, Policy: allowAll,
		Capture: screen.CaptureOptions{Size: screen.Size{W: 1024, H: 768}}, MaxSteps: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !out.OK() {
		t.Fatalf("outcome = %s (%s), want end_turn", out.Stop, out.Err)
	}
	// The shell writes the file when it runs the command; give it until the
	// deadline, checking rather than sleeping a fixed time.
	var got []byte
	for ctx.Err() == nil {
		if got, err = os.ReadFile(file); err == nil && len(got) > 0 {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	if strings.TrimSpace(string(got)) != "spotter-was-here" {
		t.Errorf("%s = %q (err %v), want the echoed text: the typing did not reach the terminal", file, got, err)
	}
	if len(m.Received) < 2 || m.Received[1].Results[0].Shot == nil || m.Received[1].Results[0].Shot.Frame.Sent != (screen.Size{W: 1024, H: 768}) {
		t.Errorf("the model did not get a 1024x768 screenshot back")
	}
}

// batch formats a script batch, in JSON.
func batch(t *testing.T, format string, args ...any) script.Batch {
	t.Helper()
	s := format
	if len(args) > 0 {
		s = fmt.Sprintf(format, args...)
	}
	b := script.Batch(jsonEscapeNewlines(s))
	if _, err := actionsOf(b); err != nil {
		t.Fatalf("script batch %s: %v", s, err)
	}
	return b
}

// jsonEscapeNewlines turns literal newlines inside the formatted JSON into \n escapes.
func jsonEscapeNewlines(s string) string { return strings.ReplaceAll(s, "\n", `\n`) }

func actionsOf(b script.Batch) ([]actions.Action, error) {
	m := script.New([]script.Turn{{Actions: b}}, false)
	turn, err := m.Next(context.Background(), harness.Input{})
	if err != nil {
		return nil, err
	}
	return turn.Calls[0].Actions, turn.Calls[0].DecodeErr
}
