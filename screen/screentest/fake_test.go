package screentest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// The Fake shows no web pages, so it gets the checks of capture geometry.
func TestConformance(t *testing.T) {
	Run(t, func(t *testing.T, o Options) (Display, bool) {
		return &Fake{Viewport: o.Viewport, DPR: o.DPR}, false
	})
}

// broken is a Fake whose captures a fault spoils.
type broken struct {
	*Fake
	fault string
}

func (b broken) Capture(ctx context.Context, o screen.CaptureOptions) (screen.Shot, error) {
	asked := o
	switch b.fault {
	case "size":
		o.Size = screen.Size{} // always the clip's CSS size
	case "format":
		o.Format = screen.PNG // whatever was asked for
	case "region":
		o.Region = actions.Rect{} // always the viewport
	}
	shot, err := b.Fake.Capture(ctx, o)
	f := &shot.Frame
	switch b.fault {
	case "format":
		f.Format = screen.Format(asked.Format)
		if f.Format == "" {
			f.Format = screen.PNG
		}
	case "region":
		f.Clip = asked.Region
	case "ids":
		f.ID = "f0001"
	case "sent":
		f.Sent.W++
	case "device px":
		f.Capture = screen.Size{W: int(f.Clip.Dx()), H: int(f.Clip.Dy())}
	case "clip outside":
		f.Clip.Max.X += 10
	}
	return shot, err
}

// TestConformanceCatchesBrokenDisplays runs the suite on displays with a
// fault each, in a child process, and checks that it fails and says why.
func TestConformanceCatchesBrokenDisplays(t *testing.T) {
	if fault := os.Getenv("SCREENTEST_FAULT"); fault != "" {
		Run(t, func(t *testing.T, o Options) (Display, bool) {
			return broken{&Fake{Viewport: o.Viewport, DPR: o.DPR}, fault}, false
		})
		return
	}
	tests := []struct {
		fault string
		want  string // in the suite's failure report
	}{
		{"size", "the image is 900x600, want 450x300"},
		{"format", "the image is not a jpeg"},
		{"region", "the image is 900x600, want 200x150"},
		{"ids", `Frame.ID "f0001" was already the ID of Capture()`},
		{"sent", "Frame.Sent = {901 600}, but the image is 900x600"},
		{"device px", "Frame.Capture = {900 600}, want the clip [(0,0)-(900,600)] in device pixels, {1800 1200}"},
		{"clip outside", "Frame.Clip [(0,0)-(910,600)] is not inside the 900x600 viewport"},
	}
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestConformanceCatchesBrokenDisplays$")
			cmd.Env = append(os.Environ(), "SCREENTEST_FAULT="+tt.fault)
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
