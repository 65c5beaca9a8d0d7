package cdp_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
	"github.com/spotter-harness/spotter/screen/screentest"
)

var _ screentest.Display = (*cdp.Display)(nil)

// capabilities is what a cdp.Display declares to the conformance suite: all
// of it, in either capture mode.
const capabilities = screentest.Pages | screentest.Pointer | screentest.BackForward | screentest.Keys |
	screentest.Keypad | screentest.Typing | screentest.Scroll | screentest.PixelRatio

// conformance runs the display conformance suite on one browser, with a
// display per device pixel ratio that wrap may wrap.
func conformance(t *testing.T, wrap func(*cdp.Display) screentest.Display) {
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("set SPOTTER_INTEGRATION=1 to run against a real Chromium")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	mode, err := cdp.ParseMode(os.Getenv("SPOTTER_CDP_MODE"))
	if err != nil {
		t.Fatalf("SPOTTER_CDP_MODE: %v", err)
	}
	b, err := cdp.Launch(ctx, cdp.Config{Mode: mode})
	if err != nil {
		t.Fatalf("Launch() = %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(context.Background()); err != nil {
			t.Errorf("Browser.Close() = %v", err)
		}
	})
	screentest.Run(t, capabilities, func(t *testing.T, o screentest.Options) screentest.Display {
		cfg := cdp.DisplayConfig{Viewport: o.Viewport, DPR: o.DPR}
		d, err := b.NewDisplay(t.Context(), cfg)
		if err != nil {
			t.Fatalf("NewDisplay(%+v) = %v", cfg, err)
		}
		t.Cleanup(func() {
			if err := d.Close(context.Background()); err != nil {
				t.Errorf("Display.Close() = %v", err)
			}
		})
		return wrap(d)
	})
}

func TestConformance(t *testing.T) {
	conformance(t, func(d *cdp.Display) screentest.Display { return d })
}

// faulty is a display with a fault of the kind the suite is there to catch.
type faulty struct {
	*cdp.Display
	fault string
	prev  []byte // the previous full-size image ("stale")
}

func (f *faulty) Perform(ctx context.Context, m screen.Mapped) error {
	if f.fault == "offset" && m.HasAt {
		m.At.X += 3 // a rounding or scaling error
	}
	if f.fault == "lost click" && m.Kind == actions.Click {
		return fmt.Errorf("click: %w", screen.ErrUnsupported) // which the suite once skipped
	}
	return f.Display.Perform(ctx, m)
}

func (f *faulty) Capture(ctx context.Context, o screen.CaptureOptions) (screen.Shot, error) {
	shot, err := f.Display.Capture(ctx, o)
	if f.fault == "stale" && err == nil && o.Size.Empty() && o.Region.Empty() {
		// A frame from before the last action, with a new Frame.
		if f.prev != nil {
			shot.Data, f.prev = f.prev, shot.Data
		} else {
			f.prev = shot.Data
		}
	}
	return shot, err
}

// TestConformanceCatchesFaults runs the suite's click check on displays
// with a fault each, in a child process, and checks that it fails and says
// why: the checks on real pages can fail.
func TestConformanceCatchesFaults(t *testing.T) {
	if fault := os.Getenv("CDP_CONFORMANCE_FAULT"); fault != "" {
		conformance(t, func(d *cdp.Display) screentest.Display { return &faulty{Display: d, fault: fault} })
		return
	}
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("set SPOTTER_INTEGRATION=1 to run against a real Chromium")
	}
	tests := []struct {
		fault string
		want  string // in the suite's failure report
	}{
		{"offset", "Perform(click at (37,211)): events (-want +got)"},
		{"stale", "capture after a click at (0,0): pixel (0,0)"},
		{"lost click", "Perform(click at (37,211)) = click: not supported by this display (the display declares Pointer, so it must perform it)"},
	}
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0],
				"-test.run=^TestConformanceCatchesFaults$/^DPR1$/^Pointer$/^click_lands_on_the_pixel$")
			cmd.Env = append(os.Environ(), "CDP_CONFORMANCE_FAULT="+tt.fault)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a display with the fault %q:\n%s", tt.fault, out)
			}
			if _, ok := err.(*exec.ExitError); !ok {
				t.Fatalf("run the suite on a display with the fault %q: %v", tt.fault, err)
			}
			if !strings.Contains(string(out), tt.want) {
				t.Errorf("the suite failed a display with the fault %q, but did not say %q:\n%s", tt.fault, tt.want, out)
			}
		})
	}
}
