package vnc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/screentest"
	"github.com/spotter-harness/spotter/screen/vnc"
	"github.com/spotter-harness/spotter/screen/vnc/desktop"
)

var _ harness.Display = (*vnc.Display)(nil)

// integration skips t unless SPOTTER_INTEGRATION is set. When it is set, a
// missing Xvnc or X tool fails the test.
func integration(t testing.TB) {
	t.Helper()
	if os.Getenv("SPOTTER_INTEGRATION") == "" {
		t.Skip("set SPOTTER_INTEGRATION=1 to run against a real Xvnc")
	}
}

// startDesktop starts a desktop for t and closes it when t ends.
func startDesktop(t testing.TB, cfg desktop.Config) *desktop.Desktop {
	t.Helper()
	integration(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d, err := desktop.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("desktop.Start(%+v) = %v", cfg, err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Desktop.Close() = %v", err)
		}
	})
	return d
}

// dial connects to d for t and closes the display when t ends.
func dial(t testing.TB, d *desktop.Desktop, cfg vnc.Config) *vnc.Display {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := d.Dial(ctx, cfg)
	if err != nil {
		t.Fatalf("Dial(%s) = %v", d.Socket, err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

// xrun runs an X client on d and returns its output.
func xrun(t testing.TB, d *desktop.Desktop, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), d.Env()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// waitWindow waits until a window of class is visible on d. xdotool search
// fails now and then when a window goes away while it looks (Chromium
// makes and destroys windows as it starts), so it is asked again.
func waitWindow(t testing.TB, d *desktop.Desktop, class string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		cmd := exec.Command("xdotool", "search", "--onlyvisible", "--class", class)
		cmd.Env = append(os.Environ(), d.Env()...)
		out, err := cmd.CombinedOutput()
		if err == nil && len(bytes.TrimSpace(out)) > 0 {
			return
		}
		if time.Now().After(deadline) {
			logs, _ := filepath.Glob(filepath.Join(filepath.Dir(d.Socket), "*.log"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				t.Logf("%s:\n%s", filepath.Base(l), b)
			}
			t.Fatalf("no visible %s window after 20s: xdotool search: %v\n%s", class, err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// capture takes a PNG capture of the whole screen and decodes it.
func capture(t testing.TB, v *vnc.Display, o screen.CaptureOptions) (screen.Shot, image.Image) {
	t.Helper()
	shot, err := v.Capture(t.Context(), o)
	if err != nil {
		t.Fatalf("Capture(%+v) = %v", o, err)
	}
	img, err := png.Decode(bytes.NewReader(shot.Data))
	if err != nil && o.Format != screen.JPEG {
		t.Fatalf("Capture(%+v): decode PNG: %v", o, err)
	}
	return shot, img
}

// captureUntil captures the screen until ok accepts the image, and fails
// t if it does not within a few seconds. Changes that X clients make on
// their own reach the display whenever the server sends them; only input
// sent through Perform makes Capture wait for its effects.
func captureUntil(t testing.TB, v *vnc.Display, what string, ok func(image.Image) bool) (screen.Shot, image.Image) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		shot, img := capture(t, v, screen.CaptureOptions{})
		if ok(img) {
			return shot, img
		}
		if time.Now().After(deadline) {
			t.Fatalf("the screen did not show %s within 5s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rgb formats a colour as #rrggbb.
func rgb(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8)
}

func TestHandshake(t *testing.T) {
	open := startDesktop(t, desktop.Config{Size: screen.Size{W: 320, H: 200}, NoWindowManager: true})
	locked := startDesktop(t, desktop.Config{Size: screen.Size{W: 320, H: 200}, NoWindowManager: true, Password: "s3cret!"})
	tests := []struct {
		name     string
		d        *desktop.Desktop
		password string
		wantErr  error
	}{
		{"none", open, "", nil},
		{"none, with a password", open, "ignored", nil},
		{"vnc auth", locked, "s3cret!", nil},
		{"vnc auth, wrong password", locked, "s3cret?", vnc.ErrAuth},
		{"vnc auth, no password", locked, "", vnc.ErrAuth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			v, err := vnc.Dial(ctx, "unix", tt.d.Socket, vnc.Config{Password: tt.password})
			if !errors.Is(err, tt.wantErr) || (err != nil) != (tt.wantErr != nil) {
				t.Fatalf("Dial(password %q) = %v, want %v", tt.password, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			defer v.Close()
			shot, img := capture(t, v, screen.CaptureOptions{})
			if got := img.Bounds().Size(); got != image.Pt(320, 200) || shot.Frame.Viewport != (screen.Size{W: 320, H: 200}) {
				t.Errorf("Capture() image %v, Frame.Viewport %v; want 320x200", got, shot.Frame.Viewport)
			}
		})
	}
}

func TestLiveImage(t *testing.T) {
	d := startDesktop(t, desktop.Config{Size: screen.Size{W: 640, H: 400}, NoWindowManager: true})
	v := dial(t, d, vnc.Config{})
	for _, c := range []string{"#336699", "#cc3300"} {
		xrun(t, d, "xsetroot", "-solid", c)
		_, img := captureUntil(t, v, c, func(img image.Image) bool { return rgb(img.At(320, 200)) == c })
		for _, p := range []image.Point{{0, 0}, {639, 0}, {320, 200}, {0, 399}, {639, 399}} {
			if got := rgb(img.At(p.X, p.Y)); got != c {
				t.Errorf("after xsetroot -solid %s: Capture() pixel %v = %s, want %s", c, p, got, c)
			}
		}
	}
}

// perform runs actions on v, failing t on an error.
func perform(t testing.TB, v *vnc.Display, as ...actions.Action) {
	t.Helper()
	for _, a := range as {
		if err := v.Perform(t.Context(), screen.Mapped{Action: a}); err != nil {
			t.Fatalf("Perform(%v) = %v", a, err)
		}
	}
}

// xevent is one event that xev printed.
type xevent struct {
	Type   string // ButtonPress, KeyRelease, MotionNotify, ...
	Button int
	State  uint64
	Root   image.Point
	Keysym string // the keysym's name: "Shift_L", "a", "eacute"
	Text   string // what XLookupString gives for a key press
	Time   int    // X server time, ms
}

func (e xevent) String() string {
	switch e.Type {
	case "ButtonPress", "ButtonRelease":
		return fmt.Sprintf("%s %d state %#x at %v", e.Type, e.Button, e.State, e.Root)
	case "KeyPress", "KeyRelease":
		return fmt.Sprintf("%s %s state %#x", e.Type, e.Keysym, e.State)
	}
	return fmt.Sprintf("%s state %#x at %v", e.Type, e.State, e.Root)
}

var (
	xevHead   = regexp.MustCompile(`^(\w+) event, serial`)
	xevWhere  = regexp.MustCompile(`time (\d+), \(-?\d+,-?\d+\), root:\((-?\d+),(-?\d+)\)`)
	xevState  = regexp.MustCompile(`state (0x[0-9a-f]+)`)
	xevButton = regexp.MustCompile(`button (\d+)`)
	xevKeysym = regexp.MustCompile(`\(keysym 0x[0-9a-f]+, ([^)]+)\)`)
	xevText   = regexp.MustCompile(`XLookupString gives \d+ bytes: (?:\([0-9a-f ]+\) "(.*)")?$`)
)

// parseXev reads xev's output: blocks of lines, one per event.
func parseXev(out string) []xevent {
	var evs []xevent
	for block := range strings.SplitSeq(out, "\n\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		m := xevHead.FindStringSubmatch(lines[0])
		if m == nil {
			continue
		}
		e := xevent{Type: m[1]}
		for _, l := range lines[1:] {
			l = strings.TrimSpace(l)
			if m := xevWhere.FindStringSubmatch(l); m != nil {
				e.Time, _ = strconv.Atoi(m[1])
				x, _ := strconv.Atoi(m[2])
				y, _ := strconv.Atoi(m[3])
				e.Root = image.Pt(x, y)
			}
			if m := xevState.FindStringSubmatch(l); m != nil {
				e.State, _ = strconv.ParseUint(m[1], 0, 32)
			}
			if m := xevButton.FindStringSubmatch(l); m != nil {
				e.Button, _ = strconv.Atoi(m[1])
			}
			if m := xevKeysym.FindStringSubmatch(l); m != nil {
				e.Keysym = m[1]
			}
			if m := xevText.FindStringSubmatch(l); m != nil && e.Type == "KeyPress" {
				e.Text = m[1]
			}
		}
		evs = append(evs, e)
	}
	return evs
}

// recorder runs xev in a window over the whole screen of a desktop without
// a window manager, and reads the events it prints.
type recorder struct {
	mu   sync.Mutex
	out  bytes.Buffer
	seen int // bytes of out already returned
}

func (r *recorder) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.Write(b)
}

func startXev(t *testing.T, d *desktop.Desktop) *recorder {
	t.Helper()
	r := &recorder{}
	cmd := exec.Command("stdbuf", "-oL", "xev", "-geometry", fmt.Sprintf("%dx%d+0+0", d.Size.W, d.Size.H),
		"-name", "spotter-xev", "-event", "keyboard", "-event", "mouse")
	cmd.Env = append(os.Environ(), d.Env()...)
	cmd.Stdout = r
	if err := cmd.Start(); err != nil {
		t.Fatalf("start xev (Debian package x11-utils): %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	xrun(t, d, "xdotool", "search", "--sync", "--onlyvisible", "--name", "spotter-xev")
	return r
}

// numLockMask is X's modifier bit of NumLock (Mod2).
const numLockMask = 0x10

// markerKey is the key next presses after a test's input: no test sends
// it, and X passes it on without side effects.
const markerKey = actions.Key("Pause")

// next returns the events xev printed for the input sent through v since
// the previous call, less pointer motion unless motion is set. It presses
// markerKey through v and waits until xev prints its release: X handles
// the input of one RFB connection in order, so every event before it has
// been printed then, and none is left over for the next call.
func (r *recorder) next(t *testing.T, v *vnc.Display, motion bool) []xevent {
	t.Helper()
	perform(t, v, actions.Action{Kind: actions.Keypress, Keys: actions.Chord{markerKey}})
	deadline := time.Now().Add(5 * time.Second)
	for {
		r.mu.Lock()
		out := r.out.String()[r.seen:]
		r.mu.Unlock()
		all := parseXev(out)
		end := slices.IndexFunc(all, func(e xevent) bool { return e.Type == "KeyRelease" && e.Keysym == string(markerKey) })
		if end < 0 {
			if time.Now().After(deadline) {
				t.Fatalf("xev did not print the release of the marker key %s within 5s; it printed:\n%s", markerKey, out)
			}
			time.Sleep(20 * time.Millisecond) // polling xev's output, with the deadline above
			continue
		}
		r.mu.Lock()
		r.seen += len(out)
		r.mu.Unlock()
		var evs []xevent
		for _, e := range all[:end] {
			// Dial turned NumLock on (Mod2): keypad keys type digits.
			// The tests compare the other modifiers.
			input := strings.HasPrefix(e.Type, "Key") && e.Type != "KeymapNotify" || strings.HasPrefix(e.Type, "Button") || e.Type == "MotionNotify"
			if input && e.State&numLockMask == 0 {
				t.Errorf("xev event %v: NumLock is off, want it on since Dial", e)
			}
			e.State &^= numLockMask
			switch {
			case e.Type == "MotionNotify" && !motion:
			case e.Type == "EnterNotify" || e.Type == "LeaveNotify" || e.Type == "KeymapNotify":
			case e.Type == "KeyPress" && e.Keysym == string(markerKey):
			default:
				evs = append(evs, e)
			}
		}
		return evs
	}
}

func strs(evs []xevent) []string {
	var s []string
	for _, e := range evs {
		s = append(s, e.String())
	}
	return s
}

func TestInput(t *testing.T) {
	d := startDesktop(t, desktop.Config{Size: screen.Size{W: 640, H: 400}, NoWindowManager: true})
	v := dial(t, d, vnc.Config{})
	rec := startXev(t, d)
	at := actions.Pt
	click := func(x, y float64, b actions.Button, mods ...actions.Key) actions.Action {
		return actions.Action{Kind: actions.Click, At: at(x+0.5, y+0.5), HasAt: true, Button: b, Modifiers: mods}
	}
	tests := []struct {
		name string
		a    []actions.Action
		want []string
	}{
		{"click", []actions.Action{click(100, 100, actions.Left)}, []string{
			"ButtonPress 1 state 0x0 at (100,100)", "ButtonRelease 1 state 0x100 at (100,100)"}},
		{"right click", []actions.Action{click(200, 150, actions.Right)}, []string{
			"ButtonPress 3 state 0x0 at (200,150)", "ButtonRelease 3 state 0x400 at (200,150)"}},
		{"middle click", []actions.Action{click(20, 30, actions.Middle)}, []string{
			"ButtonPress 2 state 0x0 at (20,30)", "ButtonRelease 2 state 0x200 at (20,30)"}},
		{"control click", []actions.Action{click(10, 10, actions.Left, actions.Control)}, []string{
			"KeyPress Control_L state 0x0", "ButtonPress 1 state 0x4 at (10,10)",
			"ButtonRelease 1 state 0x104 at (10,10)", "KeyRelease Control_L state 0x4"}},
		{"scroll", []actions.Action{
			{Kind: actions.Scroll, At: at(300, 200), DeltaY: 2 * vnc.DefaultWheelStep},
			{Kind: actions.Scroll, At: at(300, 200), DeltaY: -vnc.DefaultWheelStep, DeltaX: vnc.DefaultWheelStep},
			{Kind: actions.Scroll, At: at(300, 200), DeltaX: -vnc.DefaultWheelStep},
		}, []string{
			"ButtonPress 5 state 0x0 at (300,200)", "ButtonRelease 5 state 0x1000 at (300,200)",
			"ButtonPress 5 state 0x0 at (300,200)", "ButtonRelease 5 state 0x1000 at (300,200)",
			"ButtonPress 4 state 0x0 at (300,200)", "ButtonRelease 4 state 0x800 at (300,200)",
			"ButtonPress 7 state 0x0 at (300,200)", "ButtonRelease 7 state 0x0 at (300,200)",
			"ButtonPress 6 state 0x0 at (300,200)", "ButtonRelease 6 state 0x0 at (300,200)",
		}},
		{"press and release", []actions.Action{
			{Kind: actions.MouseDown, At: at(40, 40), HasAt: true},
			{Kind: actions.MouseUp, At: at(90, 60), HasAt: true},
		}, []string{"ButtonPress 1 state 0x0 at (40,40)", "ButtonRelease 1 state 0x100 at (90,60)"}},
		{"keypress", []actions.Action{
			{Kind: actions.Keypress, Keys: actions.Chord{actions.Control, "a"}},
			{Kind: actions.Keypress, Keys: actions.Chord{"F5"}},
			{Kind: actions.Keypress, Keys: actions.Chord{"Escape"}},
			{Kind: actions.Keypress, Keys: actions.Chord{actions.Shift, "Tab"}},
		}, []string{
			"KeyPress Control_L state 0x0", "KeyPress a state 0x4", "KeyRelease a state 0x4", "KeyRelease Control_L state 0x4",
			"KeyPress F5 state 0x0", "KeyRelease F5 state 0x0",
			"KeyPress Escape state 0x0", "KeyRelease Escape state 0x0",
			"KeyPress Shift_L state 0x0", "KeyPress ISO_Left_Tab state 0x1", "KeyRelease ISO_Left_Tab state 0x1", "KeyRelease Shift_L state 0x1",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			perform(t, v, tt.a...)
			got := rec.next(t, v, false)
			if diff := cmp.Diff(tt.want, strs(got)); diff != "" {
				t.Errorf("xev events of %s (-want +got):\n%s", tt.name, diff)
			}
		})
	}

	t.Run("double and triple click", func(t *testing.T) {
		perform(t, v, actions.Action{Kind: actions.DoubleClick, At: at(50, 60), HasAt: true},
			actions.Action{Kind: actions.TripleClick, At: at(50, 60), HasAt: true})
		got := rec.next(t, v, false)
		var want []string
		for range 5 {
			want = append(want, "ButtonPress 1 state 0x0 at (50,60)", "ButtonRelease 1 state 0x100 at (50,60)")
		}
		if diff := cmp.Diff(want, strs(got)); diff != "" {
			t.Fatalf("xev events (-want +got):\n%s", diff)
		}
		// Applications count presses as one multiple click if X stamped
		// them apart (Chromium: not in the same millisecond) and within
		// their multi-click time (Xt: 200 ms, GTK 400 ms, Chromium 500 ms).
		for _, click := range [][]int{{0, 2}, {4, 6, 8}} {
			for i := 1; i < len(click); i++ {
				if gap := got[click[i]].Time - got[click[i-1]].Time; gap < 1 {
					t.Errorf("presses %d and %d of a multiple click are %d ms apart, want them in distinct milliseconds", click[i-1], click[i], gap)
				}
			}
			if spread := got[click[len(click)-1]].Time - got[click[0]].Time; spread >= 200 {
				t.Errorf("the presses of a %d-click are %d ms apart, want under 200 ms", len(click), spread)
			}
			t.Logf("%d-click: presses at %d ms", len(click), got[click[len(click)-1]].Time-got[click[0]].Time)
		}
	})

	t.Run("drag", func(t *testing.T) {
		path := []actions.Point{at(50, 50), at(200, 150), at(210, 300)}
		perform(t, v, actions.Action{Kind: actions.Drag, Path: path})
		got := rec.next(t, v, true)
		for len(got) > 0 && got[0].Type == "MotionNotify" { // the move to the start
			got = got[1:]
		}
		first, last := got[0], got[len(got)-1]
		if first.String() != "ButtonPress 1 state 0x0 at (50,50)" || last.String() != "ButtonRelease 1 state 0x100 at (210,300)" {
			t.Errorf("drag along %v: first event %v, last %v; want a press at the start and a release at the end", path, first, last)
		}
		var corner bool
		for _, e := range got[1 : len(got)-1] {
			if e.Type != "MotionNotify" || e.State != 0x100 {
				t.Errorf("drag along %v: event %v between press and release, want motion with button 1 held", path, e)
			}
			corner = corner || e.Root == image.Pt(200, 150)
		}
		if !corner || len(got) < 10 {
			t.Errorf("drag along %v: %d motion events, through (200,150): %v; want many, through the corner", path, len(got)-2, corner)
		}
	})

	t.Run("hold key", func(t *testing.T) {
		perform(t, v, actions.Action{Kind: actions.HoldKey, Keys: actions.Chord{actions.Shift}, Duration: 300 * time.Millisecond})
		got := rec.next(t, v, false)
		if diff := cmp.Diff([]string{"KeyPress Shift_L state 0x0", "KeyRelease Shift_L state 0x1"}, strs(got)); diff != "" {
			t.Fatalf("xev events (-want +got):\n%s", diff)
		}
		if held := got[1].Time - got[0].Time; held < 290 || held > 1000 {
			t.Errorf("Shift held for %d ms, want 300", held)
		}
	})

	t.Run("typing", func(t *testing.T) {
		const text = "Hello, World! é ж€"
		perform(t, v, actions.Action{Kind: actions.Type, Text: text})
		got := rec.next(t, v, false)
		var typed strings.Builder
		for _, e := range got {
			typed.WriteString(e.Text)
		}
		if typed.String() != text {
			t.Errorf("Type(%q): the window received %q", text, typed.String())
		}
		if diff := cmp.Diff([]string{"KeyPress Shift_L state 0x0", "KeyPress H state 0x1", "KeyRelease H state 0x1", "KeyRelease Shift_L state 0x1"}, strs(got[:4])); diff != "" {
			t.Errorf("Type(%q) first events (-want +got):\n%s", text, diff)
		}
	})

	t.Run("pointer position", func(t *testing.T) {
		perform(t, v, actions.Action{Kind: actions.Move, At: at(123.7, 45.2)})
		rec.next(t, v, true)
		if got := xrun(t, d, "xdotool", "getmouselocation"); !strings.HasPrefix(got, "x:123 y:45 ") {
			t.Errorf("after a move to (123.7,45.2): xdotool getmouselocation = %q, want x:123 y:45", got)
		}
	})
}

func TestTypeIntoXterm(t *testing.T) {
	out := filepath.Join(t.TempDir(), "typed.txt")
	d := startDesktop(t, desktop.Config{
		Size: screen.Size{W: 800, H: 500}, NoWindowManager: true,
		Apps: []desktop.App{desktop.XTerm("-geometry", "80x20+0+0", "-e", "sh")},
	})
	v := dial(t, d, vnc.Config{})
	waitWindow(t, d, "xterm")
	const text = "Hello, World! é"
	perform(t, v,
		actions.Action{Kind: actions.Move, At: actions.Pt(100, 100)}, // the focus follows the pointer
		actions.Action{Kind: actions.Type, Text: "printf '%s\\n' '" + text + "' > " + out + "\n"},
	)
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(out)
		if err == nil && strings.HasSuffix(string(b), "\n") {
			if got := strings.TrimSuffix(string(b), "\n"); got != text {
				t.Errorf("xterm's shell wrote %q, want %q", got, text)
			}
			return
		}
		if time.Now().After(deadline) {
			shot, _ := v.Capture(t.Context(), screen.CaptureOptions{})
			os.WriteFile(filepath.Join(t.TempDir(), "screen.png"), shot.Data, 0o644)
			t.Fatalf("no %s after 5s (%v)", out, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestEncodingsAgree(t *testing.T) {
	d := startDesktop(t, desktop.Config{
		Size: screen.Size{W: 800, H: 600}, NoWindowManager: true,
		Apps: []desktop.App{desktop.XTerm("-geometry", "60x20+30+40", "-bg", "#ffffee", "-e", "sh", "-c", "seq 1 400 | tr '\\n' ' '; sleep 600")},
	})
	xrun(t, d, "xsetroot", "-mod", "5", "7", "-fg", "#cc2200", "-bg", "#224488")
	waitWindow(t, d, "xterm")
	sets := [][]vnc.Encoding{{vnc.Raw}, {vnc.ZRLE}, {vnc.CopyRect, vnc.Raw}, {vnc.CopyRect, vnc.ZRLE}}
	var displays []*vnc.Display
	for _, encs := range sets {
		displays = append(displays, dial(t, d, vnc.Config{Encodings: encs}))
	}
	// Move the window: clients that asked for CopyRect get its pixels as a copy.
	xrun(t, d, "xdotool", "search", "--onlyvisible", "--class", "xterm", "windowmove", "300", "250")

	deadline := time.Now().Add(10 * time.Second)
	for {
		var imgs []image.Image
		for _, v := range displays {
			_, img := capture(t, v, screen.CaptureOptions{})
			imgs = append(imgs, img)
		}
		var diffs []string
		for i := 1; i < len(imgs); i++ {
			if diff := diffPixels(imgs[0], imgs[i]); diff != "" {
				diffs = append(diffs, fmt.Sprintf("%v differs from %v: %s", sets[i], sets[0], diff))
			}
		}
		moved := rgb(imgs[0].At(310, 260)) == "#ffffee" && rgb(imgs[0].At(40, 50)) != "#ffffee"
		if len(diffs) == 0 && moved {
			break
		}
		if time.Now().After(deadline) {
			for i, v := range displays {
				n, at := vnc.Damage(v)
				t.Logf("display %v: %d updates, the latest at %v; rectangles %v", sets[i], n, at.Format(time.StampMilli), vnc.Rects(v))
			}
			t.Fatalf("after 10s, moved window: %v; captures disagree:\n%s", moved, strings.Join(diffs, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i, v := range displays {
		got := vnc.Rects(v)
		for _, e := range []vnc.Encoding{vnc.Raw, vnc.CopyRect, vnc.ZRLE} {
			asked := false
			for _, a := range sets[i] {
				asked = asked || a == e
			}
			if e == vnc.Raw && sets[i][len(sets[i])-1] == vnc.ZRLE {
				continue // a server may send Raw to anyone
			}
			if asked != (got[e] > 0) {
				t.Errorf("display asking for %v decoded %d %v rectangles", sets[i], got[e], e)
			}
		}
	}
}

// diffPixels describes how two images differ, or returns "".
func diffPixels(a, b image.Image) string {
	if a.Bounds() != b.Bounds() {
		return fmt.Sprintf("bounds %v and %v", a.Bounds(), b.Bounds())
	}
	ra, okA := a.(*image.RGBA)
	rb, okB := b.(*image.RGBA)
	if okA && okB && bytes.Equal(ra.Pix, rb.Pix) {
		return ""
	}
	n := 0
	var first string
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if ca, cb := color.RGBAModel.Convert(a.At(x, y)), color.RGBAModel.Convert(b.At(x, y)); ca != cb {
				if n == 0 {
					first = fmt.Sprintf("(%d,%d) %s and %s", x, y, rgb(ca), rgb(cb))
				}
				n++
			}
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d pixels, first %s", n, first)
}

func TestDesktopSizeChange(t *testing.T) {
	d := startDesktop(t, desktop.Config{Size: screen.Size{W: 1280, H: 800}, NoWindowManager: true})
	v := dial(t, d, vnc.Config{})
	xrun(t, d, "xsetroot", "-solid", "#118833")
	for _, size := range []screen.Size{{W: 1024, H: 768}, {W: 1280, H: 800}} {
		xrun(t, d, "xrandr", "-s", fmt.Sprintf("%dx%d", size.W, size.H))
		var events []string
		shot, _ := captureUntil(t, v, fmt.Sprintf("a %dx%d screen", size.W, size.H), func(img image.Image) bool {
			return img.Bounds().Size() == image.Pt(size.W, size.H)
		})
		events = append(events, shot.Events...)
		if shot.Frame.Viewport != size {
			t.Errorf("after xrandr -s %dx%d: Frame.Viewport = %v", size.W, size.H, shot.Frame.Viewport)
		}
		want := fmt.Sprintf("the screen size changed to %dx%d", size.W, size.H)
		if len(events) == 0 || events[len(events)-1] != want {
			t.Errorf("after xrandr -s %dx%d: Shot.Events = %q, want %q last", size.W, size.H, events, want)
		}
		// The desktop is redrawn at the new size.
		captureUntil(t, v, "the root colour at the new size", func(img image.Image) bool {
			return rgb(img.At(size.W-1, size.H-1)) == "#118833"
		})
		perform(t, v, actions.Action{Kind: actions.Move, At: actions.Pt(float64(size.W)-1, float64(size.H)-1)})
	}
}

func TestServerGone(t *testing.T) {
	d := startDesktop(t, desktop.Config{Size: screen.Size{W: 320, H: 200}, NoWindowManager: true})
	v := dial(t, d, vnc.Config{})
	if err := d.Close(); err != nil {
		t.Fatalf("Desktop.Close() = %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := v.Capture(t.Context(), screen.CaptureOptions{})
		if errors.Is(err, screen.ErrGone) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Capture() after the desktop closed = %v, want ErrGone", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := v.Perform(t.Context(), screen.Mapped{Action: actions.Action{Kind: actions.Move, At: actions.Pt(1, 1)}}); !errors.Is(err, screen.ErrGone) {
		t.Errorf("Perform() after the desktop closed = %v, want ErrGone", err)
	}
	if _, err := os.Stat(d.Socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the desktop's socket %s after Close: %v, want it removed", d.Socket, err)
	}
}

// conformanceCaps is what a VNC desktop declares to the conformance suite:
// no web pages (a desktop has no URL), no back and forward mouse buttons
// (RFB and Xvnc lack them), and a pixel ratio of 1 only. The suite cannot
// see what input does on a desktop; TestInput and the tests after it do.
const conformanceCaps = screentest.Pointer | screentest.Keys | screentest.Keypad | screentest.Typing | screentest.Scroll

func TestConformance(t *testing.T) {
	integration(t)
	screentest.Run(t, conformanceCaps, func(t *testing.T, o screentest.Options) screentest.Display {
		d := startDesktop(t, desktop.Config{Size: o.Viewport})
		return dial(t, d, vnc.Config{})
	})
}

func TestChromiumOnDesktop(t *testing.T) {
	page := "data:text/html,<body style='margin:0;background:%23114477'><h1 style='color:white'>Spotter</h1></body>"
	d := startDesktop(t, desktop.Config{Size: screen.Size{W: 1024, H: 700}, Apps: []desktop.App{desktop.Chromium(page)}})
	v := dial(t, d, vnc.Config{})
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, img := capture(t, v, screen.CaptureOptions{})
		if rgb(img.At(512, 500)) == "#114477" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Chromium's page did not show within 30s: pixel (512,500) = %s", rgb(img.At(512, 500)))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
