package screentest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// fakeCaps is what the Fake declares: it shows no web pages (and refuses
// Navigate in these tests), and performs every other action.
const fakeCaps = Pointer | BackForward | Keys | Keypad | Typing | Scroll | PixelRatio

// refuseNavigate makes a Fake refuse Navigate, as a display without pages
// does.
func refuseNavigate(m screen.Mapped) error {
	if capabilityOf(m.Action) == Pages {
		return fmt.Errorf("navigate: %w", screen.ErrUnsupported)
	}
	return nil
}

// The Fake shows no web pages, so it gets the checks of capture geometry
// and of its declarations.
func TestConformance(t *testing.T) {
	Run(t, fakeCaps, func(t *testing.T, o Options) Display {
		return &Fake{Viewport: o.Viewport, DPR: o.DPR, Fail: refuseNavigate}
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

// declarationFaults are displays whose declarations are wrong, or that
// skip, by name: the capabilities they declare and the Fake's Fail.
var declarationFaults = map[string]struct {
	caps Capability
	fail func(screen.Mapped) error
	skip bool
}{
	// A display that lost click, but still declares it.
	"lost click": {fakeCaps, func(m screen.Mapped) error {
		if m.Kind == actions.Click && m.Button == actions.Left {
			return fmt.Errorf("click: %w", screen.ErrUnsupported)
		}
		return refuseNavigate(m)
	}, false},
	// A display whose typing fails otherwise.
	"broken typing": {fakeCaps, func(m screen.Mapped) error {
		if m.Kind == actions.Type {
			return errors.New("type: the keyboard is gone")
		}
		return refuseNavigate(m)
	}, false},
	// A display that scrolls, but does not declare it.
	"undeclared scroll": {fakeCaps &^ Scroll, refuseNavigate, false},
	// A display that undeclared keypad keys fail otherwise than with
	// ErrUnsupported.
	"keypad error": {fakeCaps &^ Keypad, func(m screen.Mapped) error {
		if capabilityOf(m.Action) == Keypad {
			return fmt.Errorf("%w: no such key", actions.ErrInvalid)
		}
		return refuseNavigate(m)
	}, false},
	// A display that navigates but shows no pages, and so must not
	// accept Navigate.
	"navigates blind": {fakeCaps, nil, false},
	// An Opener that skips.
	"skip": {fakeCaps, refuseNavigate, true},
}

// TestConformanceCatchesBrokenDisplays runs the suite on displays with a
// fault each, in a child process, and checks that it fails and says why.
func TestConformanceCatchesBrokenDisplays(t *testing.T) {
	if fault := os.Getenv("SCREENTEST_FAULT"); fault != "" {
		if d, ok := declarationFaults[fault]; ok {
			Run(t, d.caps, func(t *testing.T, o Options) Display {
				if d.skip && o.DPR == 2 {
					t.Skip("no DPR 2 here")
				}
				return &Fake{Viewport: o.Viewport, DPR: o.DPR, Fail: d.fail}
			})
			return
		}
		Run(t, fakeCaps, func(t *testing.T, o Options) Display {
			return broken{&Fake{Viewport: o.Viewport, DPR: o.DPR, Fail: refuseNavigate}, fault}
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
		{"lost click", "Perform(click at (450,300)) = click: not supported by this display (the display declares Pointer, so it must perform it)"},
		{"broken typing", `Perform(type "Hello, World! ~{}|<>?_+\nline 2 café ✓") = type: the keyboard is gone`},
		{"undeclared scroll", "Perform(scroll at (450,300) by (0,100)) = <nil>, want an error wrapping screen.ErrUnsupported: the display does not declare Scroll"},
		{"keypad error", "Perform(keypress Numpad5) = invalid action: no such key, want an error wrapping screen.ErrUnsupported: the display does not declare Keypad"},
		{"navigates blind", "want an error wrapping screen.ErrUnsupported: the display does not declare Pages"},
		{"skip", "DPR2 was skipped: the suite does not skip"},
	}
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			t.Parallel()
			run := "^TestConformanceCatchesBrokenDisplays$"
			if d, ok := declarationFaults[tt.fault]; ok {
				// Only the input checks: the captures' are the costly ones.
				dpr := "1"
				if d.skip {
					dpr = "2"
				}
				run += "/^DPR" + dpr + "$/^Input$"
			}
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run="+run)
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

func TestCapabilityString(t *testing.T) {
	tests := []struct {
		in   Capability
		want string
	}{
		{0, "none"},
		{Pages, "Pages"},
		{Pointer | Keys | Typing, "Pointer|Keys|Typing"},
		{Scroll | 1<<20, "Scroll|0x100000"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("Capability(%#x).String() = %q, want %q", uint(tt.in), got, tt.want)
		}
	}
}
