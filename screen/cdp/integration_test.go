package cdp

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// event is one DOM event that testdata/events.html recorded.
type event struct {
	Type     string  `json:"type"`
	Target   string  `json:"target"`
	Shift    bool    `json:"shift"`
	Ctrl     bool    `json:"ctrl"`
	Alt      bool    `json:"alt"`
	Meta     bool    `json:"meta"`
	X        float64 `json:"x"`
	Y        float64 `json:"y"`
	Button   int     `json:"button"`
	Buttons  int     `json:"buttons"`
	Detail   int     `json:"detail"`
	DX       float64 `json:"dx"`
	DY       float64 `json:"dy"`
	Key      string  `json:"key"`
	Code     string  `json:"code"`
	Location int     `json:"location"`
}

// takeEvents returns the events recorded so far and clears the record.
func takeEvents(t testing.TB, d *Display) []event {
	t.Helper()
	return eval[[]event](t, d, "events.splice(0)")
}

// only keeps the events of the given types.
func only(evs []event, types ...string) []event {
	var out []event
	for _, e := range evs {
		for _, typ := range types {
			if e.Type == typ {
				out = append(out, e)
			}
		}
	}
	return out
}

func at(x, y float64) actions.Action {
	return actions.Action{At: actions.Pt(x, y), HasAt: true}
}

func kind(k actions.Kind, a actions.Action) actions.Action {
	a.Kind = k
	return a
}

// mouseFields compares mouse events by what a pointer test cares about.
var mouseFields = cmpopts.IgnoreFields(event{}, "Target", "DX", "DY", "Key", "Code", "Location")

func TestClickLandsOnCSSPixel(t *testing.T) {
	for _, dpr := range []float64{1, 2} {
		t.Run(fmt.Sprintf("dpr%g", dpr), func(t *testing.T) {
			d := newDisplay(t, DisplayConfig{DPR: dpr})
			load(t, d, "events.html")
			if got := eval[float64](t, d, "devicePixelRatio"); got != dpr {
				t.Fatalf("devicePixelRatio = %g, want %g", got, dpr)
			}
			for _, p := range []actions.Point{{X: 0, Y: 0}, {X: 37, Y: 411}, {X: 640, Y: 400}, {X: 1279, Y: 799}} {
				takeEvents(t, d)
				do(t, d, kind(actions.Click, at(p.X, p.Y)))
				got := only(takeEvents(t, d), "mousedown", "mouseup", "click")
				want := []event{
					{Type: "mousedown", X: p.X, Y: p.Y, Buttons: 1, Detail: 1},
					{Type: "mouseup", X: p.X, Y: p.Y, Detail: 1},
					{Type: "click", X: p.X, Y: p.Y, Detail: 1},
				}
				if diff := cmp.Diff(want, got, mouseFields); diff != "" {
					t.Errorf("Perform(click at %v) at DPR %g: events (-want +got):\n%s", p, dpr, diff)
				}
			}
		})
	}
}

func TestMouseButtons(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	load(t, d, "events.html")
	tests := []struct {
		button  actions.Button
		dom     int // MouseEvent.button
		buttons int // MouseEvent.buttons while pressed
	}{
		{actions.Left, 0, 1},
		{actions.Right, 2, 2},
		{actions.Middle, 1, 4},
		{actions.Back, 3, 8},
		{actions.Forward, 4, 16},
	}
	for _, tt := range tests {
		t.Run(tt.button.String(), func(t *testing.T) {
			takeEvents(t, d)
			a := kind(actions.Click, at(200, 250))
			a.Button = tt.button
			do(t, d, a)
			got := only(takeEvents(t, d), "mousedown", "mouseup")
			want := []event{
				{Type: "mousedown", X: 200, Y: 250, Button: tt.dom, Buttons: tt.buttons, Detail: 1},
				{Type: "mouseup", X: 200, Y: 250, Button: tt.dom, Detail: 1},
			}
			if diff := cmp.Diff(want, got, mouseFields); diff != "" {
				t.Errorf("Perform(click %v) events (-want +got):\n%s", tt.button, diff)
			}
		})
	}
	t.Run("down-move-up", func(t *testing.T) {
		takeEvents(t, d)
		do(t, d, kind(actions.MouseDown, at(50, 60)))
		do(t, d, kind(actions.Move, at(70, 80)))
		do(t, d, actions.Action{Kind: actions.MouseUp}) // at the pointer
		got := only(takeEvents(t, d), "mousedown", "mousemove", "mouseup")
		want := []event{
			{Type: "mousemove", X: 50, Y: 60},
			{Type: "mousedown", X: 50, Y: 60, Buttons: 1, Detail: 1},
			{Type: "mousemove", X: 70, Y: 80, Buttons: 1},
			{Type: "mouseup", X: 70, Y: 80, Detail: 1},
		}
		if diff := cmp.Diff(want, got, mouseFields); diff != "" {
			t.Errorf("mouse down, move, up: events (-want +got):\n%s", diff)
		}
	})
}

func TestMultiClickDetail(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	load(t, d, "events.html")
	type click struct {
		Type   string
		Detail int
	}
	tests := []struct {
		kind actions.Kind
		want []click
	}{
		{actions.DoubleClick, []click{
			{"mousedown", 1}, {"mouseup", 1}, {"click", 1},
			{"mousedown", 2}, {"mouseup", 2}, {"click", 2}, {"dblclick", 2},
		}},
		{actions.TripleClick, []click{
			{"mousedown", 1}, {"mouseup", 1}, {"click", 1},
			{"mousedown", 2}, {"mouseup", 2}, {"click", 2}, {"dblclick", 2},
			{"mousedown", 3}, {"mouseup", 3}, {"click", 3},
		}},
	}
	for i, tt := range tests {
		t.Run(tt.kind.String(), func(t *testing.T) {
			takeEvents(t, d)
			// A new place each time, so that it is not counted as a
			// continuation of the previous test's clicks.
			do(t, d, kind(tt.kind, at(100+float64(i)*200, 300)))
			var got []click
			for _, e := range only(takeEvents(t, d), "mousedown", "mouseup", "click", "dblclick") {
				got = append(got, click{e.Type, e.Detail})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Perform(%v) events (-want +got):\n%s", tt.kind, diff)
			}
		})
	}
}

func TestDrag(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	load(t, d, "events.html")
	path := []actions.Point{{X: 100, Y: 100}, {X: 300, Y: 100}, {X: 300, Y: 300}, {X: 150, Y: 320}}
	takeEvents(t, d)
	do(t, d, actions.Action{Kind: actions.Drag, Path: path})
	evs := only(takeEvents(t, d), "mousedown", "mousemove", "mouseup")
	if len(evs) < 2 {
		t.Fatalf("Perform(drag %v) events = %+v, want a press, moves and a release", path, evs)
	}
	// Moves before the press bring the pointer to the start.
	for len(evs) > 0 && evs[0].Type == "mousemove" {
		evs = evs[1:]
	}
	first, last := evs[0], evs[len(evs)-1]
	if first.Type != "mousedown" || first.X != 100 || first.Y != 100 {
		t.Errorf("drag starts with %+v, want mousedown at (100,100)", first)
	}
	if last.Type != "mouseup" || last.X != 150 || last.Y != 320 {
		t.Errorf("drag ends with %+v, want mouseup at (150,320)", last)
	}
	moves := evs[1 : len(evs)-1]
	next := 1 // the next path point the moves must pass through
	for i, m := range moves {
		if m.Type != "mousemove" || m.Buttons != 1 {
			t.Errorf("drag event %d = %+v, want a mousemove with the left button held", i+1, m)
		}
		if next < len(path) && m.X == path[next].X && m.Y == path[next].Y {
			next++
		}
	}
	if next != len(path) {
		t.Errorf("drag moves passed through path points up to %d of %d; moves: %+v", next, len(path), moves)
	}
	if len(moves) < 10 {
		t.Errorf("drag made %d moves along a 550 px path, want intermediate moves", len(moves))
	}
}

func TestScrollAtPoint(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	load(t, d, "events.html")
	takeEvents(t, d)
	a := kind(actions.Scroll, at(750, 200)) // inside #scroller
	a.DeltaY = 300
	do(t, d, a)
	capture(t, d, screen.CaptureOptions{})
	if got := eval[float64](t, d, "document.getElementById('scroller').scrollTop"); got <= 0 {
		t.Errorf("after a wheel over the inner container, its scrollTop = %g, want > 0", got)
	}
	if got := eval[float64](t, d, "scrollY"); got != 0 {
		t.Errorf("after a wheel over the inner container, window scrollY = %g, want 0", got)
	}
	wheels := only(takeEvents(t, d), "wheel")
	if len(wheels) != 1 || wheels[0].X != 750 || wheels[0].Y != 200 || wheels[0].DY != 300 || wheels[0].Target != "inner" {
		t.Errorf("wheel events = %+v, want one at (750,200) with deltaY 300 on #inner", wheels)
	}

	a = kind(actions.Scroll, at(100, 100)) // outside it: the page scrolls
	a.DeltaY = 200
	do(t, d, a)
	shot := capture(t, d, screen.CaptureOptions{})
	if got := eval[float64](t, d, "scrollY"); got <= 0 {
		t.Errorf("after a wheel over the page, window scrollY = %g, want > 0", got)
	}
	if shot.Frame.Scroll.Y <= 0 {
		t.Errorf("after a wheel over the page, Frame.Scroll = %v, want Y > 0", shot.Frame.Scroll)
	}
}

// capture captures d, failing t on an error.
func capture(t testing.TB, d *Display, o screen.CaptureOptions) screen.Shot {
	t.Helper()
	shot, err := d.Capture(t.Context(), o)
	if err != nil {
		t.Fatalf("Capture(%+v) = %v", o, err)
	}
	return shot
}

// keyEvent is a keyboard event as a key test compares it.
type keyEvent struct {
	Type, Key, Code        string
	Shift, Ctrl, Alt, Meta bool
}

func keyEvents(evs []event) []keyEvent {
	var out []keyEvent
	for _, e := range only(evs, "keydown", "keyup") {
		out = append(out, keyEvent{e.Type, e.Key, e.Code, e.Shift, e.Ctrl, e.Alt, e.Meta})
	}
	return out
}

// focusInput clicks into the text field of events.html and clears it.
func focusInput(t *testing.T, d *Display) {
	t.Helper()
	do(t, d, kind(actions.Click, at(200, 512)))
	eval[string](t, d, "document.getElementById('txt').value = ''")
	if got := eval[string](t, d, "document.activeElement.id"); got != "txt" {
		t.Fatalf("after clicking the text field, the focus is on %q, want txt", got)
	}
	takeEvents(t, d)
}

func inputValue(t *testing.T, d *Display) string {
	t.Helper()
	return eval[string](t, d, "document.getElementById('txt').value")
}

func TestType(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	load(t, d, "events.html")
	focusInput(t, d)

	const text = "Hello, World! 123"
	do(t, d, actions.Action{Kind: actions.Type, Text: text})
	if got := inputValue(t, d); got != text {
		t.Errorf("Perform(type %q): the field holds %q", text, got)
	}
	var keys []string
	var shifted []string
	for _, e := range only(takeEvents(t, d), "keydown") {
		if e.Key == "Shift" {
			continue
		}
		keys = append(keys, e.Key)
		if e.Shift {
			shifted = append(shifted, e.Key)
		}
	}
	wantKeys := strings.Split(text, "")
	if diff := cmp.Diff(wantKeys, keys); diff != "" {
		t.Errorf("Perform(type %q) keydown keys (-want +got):\n%s", text, diff)
	}
	if diff := cmp.Diff([]string{"H", "W", "!"}, shifted); diff != "" {
		t.Errorf("Perform(type %q) keys with shiftKey (-want +got):\n%s", text, diff)
	}

	t.Run("not on the keyboard", func(t *testing.T) {
		focusInput(t, d)
		const text = "Grüße, 東京 ✓"
		do(t, d, actions.Action{Kind: actions.Type, Text: text})
		if got := inputValue(t, d); got != text {
			t.Errorf("Perform(type %q): the field holds %q", text, got)
		}
	})

	t.Run("shift held", func(t *testing.T) {
		focusInput(t, d)
		do(t, d, actions.Action{Kind: actions.Type, Text: "ab", Modifiers: actions.Chord{actions.Shift}})
		want := []keyEvent{
			{Type: "keydown", Key: "Shift", Code: "ShiftLeft", Shift: true},
			{Type: "keydown", Key: "a", Code: "KeyA", Shift: true},
			{Type: "keyup", Key: "a", Code: "KeyA", Shift: true},
			{Type: "keydown", Key: "b", Code: "KeyB", Shift: true},
			{Type: "keyup", Key: "b", Code: "KeyB", Shift: true},
			{Type: "keyup", Key: "Shift", Code: "ShiftLeft"},
		}
		if diff := cmp.Diff(want, keyEvents(takeEvents(t, d))); diff != "" {
			t.Errorf("Perform(type \"ab\" with Shift held) events (-want +got):\n%s", diff)
		}
	})

	t.Run("enter", func(t *testing.T) {
		focusInput(t, d)
		do(t, d, actions.Action{Kind: actions.Type, Text: "a\n"})
		got := keyEvents(takeEvents(t, d))
		if len(got) != 4 || got[2].Key != "Enter" || got[2].Code != "Enter" {
			t.Errorf("Perform(type \"a\\n\") key events = %+v, want a then Enter", got)
		}
	})
}

func TestKeypressChord(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	load(t, d, "events.html")
	focusInput(t, d)
	do(t, d, actions.Action{Kind: actions.Keypress, Keys: actions.Chord{actions.Control, actions.Shift, "PageDown"}})
	want := []keyEvent{
		{Type: "keydown", Key: "Control", Code: "ControlLeft", Ctrl: true},
		{Type: "keydown", Key: "Shift", Code: "ShiftLeft", Ctrl: true, Shift: true},
		{Type: "keydown", Key: "PageDown", Code: "PageDown", Ctrl: true, Shift: true},
		{Type: "keyup", Key: "PageDown", Code: "PageDown", Ctrl: true, Shift: true},
		{Type: "keyup", Key: "Shift", Code: "ShiftLeft", Ctrl: true},
		{Type: "keyup", Key: "Control", Code: "ControlLeft"},
	}
	if diff := cmp.Diff(want, keyEvents(takeEvents(t, d))); diff != "" {
		t.Errorf("Perform(keypress Control+Shift+PageDown) events (-want +got):\n%s", diff)
	}
}

func TestEditingShortcuts(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	load(t, d, "events.html")
	focusInput(t, d)
	press := func(keys ...actions.Key) {
		t.Helper()
		do(t, d, actions.Action{Kind: actions.Keypress, Keys: keys})
	}
	do(t, d, actions.Action{Kind: actions.Type, Text: "old text"})
	press(actions.Control, "a")
	do(t, d, actions.Action{Kind: actions.Type, Text: "new"})
	if got := inputValue(t, d); got != "new" {
		t.Errorf("type \"old text\", Control+a, type \"new\": the field holds %q, want \"new\"", got)
	}

	// Copy all, paste twice at the end.
	press(actions.Control, "a")
	press(actions.Control, "c")
	press("End")
	press(actions.Control, "v")
	if got := inputValue(t, d); got != "newnew" {
		t.Errorf("Control+a, Control+c, End, Control+v: the field holds %q, want \"newnew\"", got)
	}
	press(actions.Control, "z")
	if got := inputValue(t, d); got != "new" {
		t.Errorf("Control+z after the paste: the field holds %q, want \"new\"", got)
	}
	press(actions.Control, "a")
	press(actions.Control, "x")
	if got := inputValue(t, d); got != "" {
		t.Errorf("Control+a, Control+x: the field holds %q, want it empty", got)
	}
}

func TestHoldKey(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	load(t, d, "events.html")
	focusInput(t, d)
	start := time.Now()
	do(t, d, actions.Action{Kind: actions.HoldKey, Keys: actions.Chord{actions.Shift}, Duration: 200 * time.Millisecond})
	if held := time.Since(start); held < 200*time.Millisecond {
		t.Errorf("Perform(hold Shift for 200ms) returned after %v", held)
	}
	want := []keyEvent{
		{Type: "keydown", Key: "Shift", Code: "ShiftLeft", Shift: true},
		{Type: "keyup", Key: "Shift", Code: "ShiftLeft"},
	}
	if diff := cmp.Diff(want, keyEvents(takeEvents(t, d))); diff != "" {
		t.Errorf("Perform(hold Shift) events (-want +got):\n%s", diff)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	err := d.Perform(ctx, screen.Mapped{Action: actions.Action{Kind: actions.HoldKey, Keys: actions.Chord{"a"}, Duration: time.Hour}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Perform(hold a for an hour) with a 100ms context = %v, want DeadlineExceeded", err)
	}
	got := keyEvents(takeEvents(t, d))
	if len(got) != 2 || got[1].Type != "keyup" {
		t.Errorf("after a canceled hold, events = %+v, want the key released", got)
	}
}

func TestNavigateHistory(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	urlA, urlB := testURL(t, "a.html"), testURL(t, "b.html")
	red, blue := color.RGBA{255, 0, 0, 255}, color.RGBA{0, 0, 255, 255}
	steps := []struct {
		action actions.Action
		url    string
		color  color.RGBA
	}{
		{actions.Action{Kind: actions.Navigate, URL: urlA}, urlA, red},
		{actions.Action{Kind: actions.Navigate, URL: urlB}, urlB, blue},
		{actions.Action{Kind: actions.GoBack}, urlA, red},
		{actions.Action{Kind: actions.GoForward}, urlB, blue},
	}
	for i, s := range steps {
		do(t, d, s.action)
		shot := capture(t, d, screen.CaptureOptions{})
		if shot.Frame.URL != s.url {
			t.Errorf("step %d, %v: Frame.URL = %q, want %q", i, s.action.LogValue(), shot.Frame.URL, s.url)
		}
		if c := decode(t, shot).At(600, 400); !near(c, s.color, 8) {
			t.Errorf("step %d, %v: pixel = %s, want %v", i, s.action.LogValue(), rgb(c), s.color)
		}
		if i > 0 && !slices.Contains(shot.Events, "the page is now at "+s.url) {
			t.Errorf("step %d, %v: Shot.Events = %q, want the new URL noted", i, s.action.LogValue(), shot.Events)
		}
	}
	err := d.Perform(t.Context(), screen.Mapped{Action: actions.Action{Kind: actions.GoForward}})
	if err == nil {
		t.Errorf("Perform(go_forward) at the end of the history = nil, want an error")
	}
	err = d.Perform(t.Context(), screen.Mapped{Action: actions.Action{Kind: actions.Navigate, URL: "http://127.0.0.1:1/"}})
	if err == nil || !strings.Contains(err.Error(), "net::ERR_") {
		t.Errorf("Perform(navigate to a closed port) = %v, want a net::ERR_ error", err)
	}
}

func TestClickLink(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	load(t, d, "a.html")
	c := eval[[]float64](t, d, `(r => [r.x + r.width/2, r.y + r.height/2])(document.getElementById("next").getBoundingClientRect())`)
	do(t, d, kind(actions.Click, at(c[0], c[1])))
	shot := capture(t, d, screen.CaptureOptions{})
	if want := testURL(t, "b.html"); shot.Frame.URL != want || shot.Frame.Settle.TimedOut {
		t.Errorf("Capture after clicking a link: URL %q, Settle %+v; want %q, settled", shot.Frame.URL, shot.Frame.Settle, want)
	}
	checkPixels(t, "Capture after clicking a link", shot, 8, []probe{{600, 400, blue}})
}

// quadrant colours of testdata/quadrants.html.
var (
	red    = color.RGBA{255, 0, 0, 255}
	green  = color.RGBA{0, 255, 0, 255}
	blue   = color.RGBA{0, 0, 255, 255}
	yellow = color.RGBA{255, 255, 0, 255}
)

type probe struct {
	x, y int
	want color.RGBA
}

func checkPixels(t *testing.T, what string, shot screen.Shot, tol int, probes []probe) {
	t.Helper()
	img := decode(t, shot)
	for _, p := range probes {
		if c := img.At(p.x, p.y); !near(c, p.want, tol) {
			t.Errorf("%s: pixel (%d,%d) = %s, want %v", what, p.x, p.y, rgb(c), p.want)
		}
	}
}

func TestCaptureScaled(t *testing.T) {
	d := newDisplay(t, DisplayConfig{Viewport: screen.Size{W: 1280, H: 800}, DPR: 2})
	load(t, d, "quadrants.html")
	size := screen.Size{W: 1024, H: 640}
	probes := []probe{
		{256, 160, red}, {768, 160, green}, {256, 480, blue}, {768, 480, yellow},
		// The quadrants meet at (512,320) in the scaled image.
		{508, 160, red}, {516, 160, green}, {256, 316, red}, {256, 324, blue},
		{0, 0, red}, {1023, 0, green}, {0, 639, blue}, {1023, 639, yellow},
	}
	for _, tt := range []struct {
		format screen.Format
		tol    int
	}{{screen.PNG, 6}, {screen.JPEG, 40}} {
		t.Run(string(tt.format), func(t *testing.T) {
			shot := capture(t, d, screen.CaptureOptions{Size: size, Format: tt.format})
			f := shot.Frame
			want := screen.Frame{
				Viewport: screen.Size{W: 1280, H: 800},
				DPR:      2,
				Clip:     actions.Rect{Max: actions.Pt(1280, 800)},
				Capture:  screen.Size{W: 2560, H: 1600},
				Sent:     size,
				Zoom:     1,
				Format:   tt.format,
				URL:      testURL(t, "quadrants.html"),
			}
			if diff := cmp.Diff(want, f, cmpopts.IgnoreFields(screen.Frame{}, "ID", "Time", "Settle")); diff != "" {
				t.Errorf("Capture(%v %s) frame (-want +got):\n%s", size, tt.format, diff)
			}
			if b := decode(t, shot).Bounds(); b.Dx() != size.W || b.Dy() != size.H {
				t.Errorf("Capture(%v %s) decodes to %v", size, tt.format, b)
			}
			checkPixels(t, fmt.Sprintf("Capture(%v %s)", size, tt.format), shot, tt.tol, probes)
		})
	}
	t.Run("scrolled", func(t *testing.T) {
		eval[float64](t, d, "scrollTo(0, 500), scrollY")
		shot := capture(t, d, screen.CaptureOptions{Size: size})
		if want := actions.Pt(0, 500); shot.Frame.Scroll != want {
			t.Errorf("Frame.Scroll = %v, want %v", shot.Frame.Scroll, want)
		}
		checkPixels(t, "Capture of a scrolled page", shot, 6, probes)
	})
	t.Run("ids", func(t *testing.T) {
		a := capture(t, d, screen.CaptureOptions{Size: size})
		b := capture(t, d, screen.CaptureOptions{Size: size})
		if a.Frame.ID >= b.Frame.ID || !strings.HasPrefix(a.Frame.ID, "f0") {
			t.Errorf("frame IDs %q then %q, want increasing f0001-style IDs", a.Frame.ID, b.Frame.ID)
		}
	})
}

func TestCaptureRegion(t *testing.T) {
	d := newDisplay(t, DisplayConfig{Viewport: screen.Size{W: 1280, H: 800}, DPR: 2})
	load(t, d, "quadrants.html")
	region := actions.Rect{Min: actions.Pt(600, 350), Max: actions.Pt(680, 450)}
	tests := []struct {
		size   screen.Size
		want   screen.Size
		probes []probe
	}{
		{screen.Size{W: 160, H: 200}, screen.Size{W: 160, H: 200}, []probe{
			{20, 25, red}, {140, 25, green}, {20, 175, blue}, {140, 175, yellow},
			{76, 25, red}, {84, 25, green}, {20, 96, red}, {20, 104, blue},
		}},
		{screen.Size{}, screen.Size{W: 80, H: 100}, []probe{
			{10, 12, red}, {70, 12, green}, {10, 88, blue}, {70, 88, yellow},
		}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%dx%d", tt.size.W, tt.size.H), func(t *testing.T) {
			shot := capture(t, d, screen.CaptureOptions{Region: region, Size: tt.size})
			if shot.Frame.Sent != tt.want || shot.Frame.Clip != region || shot.Frame.Capture != (screen.Size{W: 160, H: 200}) {
				t.Errorf("Capture(region %v, size %v) frame: Sent %v Clip %v Capture %v, want Sent %v Clip %v Capture 160x200",
					region, tt.size, shot.Frame.Sent, shot.Frame.Clip, shot.Frame.Capture, tt.want, region)
			}
			if !shot.Frame.Zoomed() {
				t.Errorf("Capture(region %v).Frame.Zoomed() = false", region)
			}
			checkPixels(t, fmt.Sprintf("Capture(region %v, size %v)", region, tt.size), shot, 6, tt.probes)
		})
	}
}

func TestSettleWaitsForFetch(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	grey := color.RGBA{128, 128, 128, 255}
	t.Run("load", func(t *testing.T) {
		do(t, d, actions.Action{Kind: actions.Navigate, URL: testURL(t, "slow.html")})
		shot := capture(t, d, screen.CaptureOptions{})
		if shot.Frame.Settle.TimedOut || shot.Frame.Settle.Waited < 200*time.Millisecond {
			t.Errorf("Capture after loading slow.html: Settle = %+v, want a wait for the 300ms fetch", shot.Frame.Settle)
		}
		checkPixels(t, "Capture after loading slow.html", shot, 6, []probe{{640, 400, green}})
	})
	t.Run("click", func(t *testing.T) {
		do(t, d, actions.Action{Kind: actions.Navigate, URL: testURL(t, "slow.html?click")})
		checkPixels(t, "Capture after loading slow.html?click", capture(t, d, screen.CaptureOptions{}), 6, []probe{{640, 400, grey}})
		do(t, d, kind(actions.Click, at(640, 400)))
		shot := capture(t, d, screen.CaptureOptions{})
		if shot.Frame.Settle.TimedOut {
			t.Errorf("Capture after a click that fetches: Settle = %+v", shot.Frame.Settle)
		}
		checkPixels(t, "Capture after a click that fetches", shot, 6, []probe{{640, 400, green}})
	})
}

func TestSettleTimesOut(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	tests := []struct {
		page   string
		reason string
	}{
		{"busy.html", "animation"},
		{"busy.html?network", "network request"},
	}
	for _, tt := range tests {
		t.Run(tt.page, func(t *testing.T) {
			do(t, d, actions.Action{Kind: actions.Navigate, URL: testURL(t, tt.page)})
			// Wait for the load to end: this test is about what never ends.
			for range 20 {
				shot := capture(t, d, screen.CaptureOptions{SettleTimeout: 200 * time.Millisecond})
				if !strings.Contains(shot.Frame.Settle.Reason, "loading") {
					break
				}
			}
			start := time.Now()
			shot := capture(t, d, screen.CaptureOptions{SettleTimeout: 500 * time.Millisecond})
			s := shot.Frame.Settle
			if took := time.Since(start); took > 10*time.Second || s.Waited > 2*time.Second {
				t.Errorf("Capture with a 500ms settle timeout took %v, of which %v settling", took, s.Waited)
			}
			if !s.TimedOut || !strings.Contains(s.Reason, tt.reason) {
				t.Errorf("Capture(%s).Frame.Settle = %+v, want TimedOut with a reason mentioning %q", tt.page, s, tt.reason)
			}
			if len(shot.Data) == 0 {
				t.Errorf("Capture(%s) timed out without an image", tt.page)
			}
		})
	}
}

func TestUnsupportedKinds(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	for _, k := range []actions.Kind{actions.Screenshot, actions.Wait, actions.Zoom, actions.CursorPosition, actions.KindInvalid} {
		err := d.Perform(t.Context(), screen.Mapped{Action: actions.Action{Kind: k}})
		if !errors.Is(err, screen.ErrUnsupported) {
			t.Errorf("Perform(%v) = %v, want ErrUnsupported", k, err)
		}
	}
}

func TestBrowserKilled(t *testing.T) {
	integration(t)
	d, err := Open(t.Context(), Config{Logger: testLogger(), Mode: testMode(t), CommandTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("Open() = %v", err)
	}
	defer d.Close(context.Background())
	load(t, d, "events.html")
	if err := d.browser.Process().Kill(); err != nil {
		t.Fatalf("kill the browser: %v", err)
	}
	start := time.Now()
	for _, step := range []struct {
		name string
		run  func() error
	}{
		{"Perform", func() error { return d.Perform(t.Context(), screen.Mapped{Action: kind(actions.Click, at(10, 10))}) }},
		{"Capture", func() error { _, err := d.Capture(t.Context(), screen.CaptureOptions{}); return err }},
	} {
		if err := step.run(); !errors.Is(err, screen.ErrGone) {
			t.Errorf("%s after the browser was killed = %v, want ErrGone", step.name, err)
		}
	}
	if took := time.Since(start); took > 6*time.Second {
		t.Errorf("Perform and Capture after the browser was killed took %v", took)
	}
	if err := d.Close(context.Background()); err != nil {
		t.Errorf("Close() of a display whose browser was killed = %v", err)
	}
}

func TestHungPage(t *testing.T) {
	integration(t)
	d, err := Open(t.Context(), Config{Logger: testLogger(), Mode: testMode(t), CommandTimeout: time.Second})
	if err != nil {
		t.Fatalf("Open() = %v", err)
	}
	load(t, d, "events.html")
	hang(t, d) // this test is about a page that is already hung
	start := time.Now()
	err = d.Perform(t.Context(), screen.Mapped{Action: kind(actions.Click, at(10, 10))})
	if !errors.Is(err, ErrUnresponsive) {
		t.Errorf("Perform(click) on a hung page = %v, want ErrUnresponsive", err)
	}
	_, err = d.Capture(t.Context(), screen.CaptureOptions{SettleTimeout: 200 * time.Millisecond})
	if !errors.Is(err, ErrUnresponsive) {
		t.Errorf("Capture() on a hung page = %v, want ErrUnresponsive", err)
	}
	if took := time.Since(start); took > 8*time.Second {
		t.Errorf("Perform and Capture on a hung page took %v", took)
	}
	start = time.Now()
	if err := d.Close(context.Background()); err != nil {
		t.Logf("Close() of a hung display = %v", err)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("Close() of a hung display took %v", took)
	}
}

func TestDisplaysAreIsolated(t *testing.T) {
	a := newDisplay(t, DisplayConfig{})
	b := newDisplay(t, DisplayConfig{})
	load(t, a, "a.html")
	load(t, b, "a.html")
	eval[string](t, a, "localStorage.setItem('k', 'a'), document.cookie = 'c=1', 'ok'")
	if got := eval[string](t, b, "String(localStorage.getItem('k')) + '|' + document.cookie"); got != "null|" {
		t.Errorf("display b sees storage %q of display a, want none", got)
	}
}

func TestCloseRemovesProfile(t *testing.T) {
	integration(t)
	b, err := Launch(t.Context(), Config{Logger: testLogger(), Mode: testMode(t)})
	if err != nil {
		t.Fatalf("Launch() = %v", err)
	}
	defer b.Close(context.Background())
	pid := chromedp.FromContext(b.ctx).Browser.Process().Pid
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatalf("read the browser's command line: %v", err)
	}
	var dir string
	for _, arg := range strings.Split(string(cmdline), "\x00") {
		if v, ok := strings.CutPrefix(arg, "--user-data-dir="); ok {
			dir = v
		}
	}
	if _, err := os.Stat(dir); dir == "" || err != nil {
		t.Fatalf("profile directory %q of a running browser: %v", dir, err)
	}
	d, err := b.NewDisplay(t.Context(), DisplayConfig{})
	if err != nil {
		t.Fatalf("NewDisplay() = %v", err)
	}
	if err := b.Close(t.Context()); err != nil {
		t.Errorf("Browser.Close() = %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Close, profile directory %s: %v, want it removed", dir, err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("after Close, signal 0 to the browser process = %v, want ESRCH", err)
	}
	if err := d.Perform(t.Context(), screen.Mapped{Action: kind(actions.Click, at(1, 1))}); !errors.Is(err, screen.ErrGone) {
		t.Errorf("Perform on a display of a closed browser = %v, want ErrGone", err)
	}
	if err := d.Close(t.Context()); err != nil {
		t.Errorf("Display.Close() after Browser.Close() = %v", err)
	}
}

func TestCaptureOddSizes(t *testing.T) {
	tests := []struct {
		viewport screen.Size
		dpr      float64
		size     screen.Size
	}{
		{screen.Size{W: 1366, H: 768}, 1, screen.Size{W: 1024, H: 576}},
		{screen.Size{W: 1366, H: 768}, 2, screen.Size{W: 1280, H: 720}},
		{screen.Size{W: 1440, H: 900}, 1.5, screen.Size{W: 1280, H: 800}},
		{screen.Size{W: 1280, H: 800}, 1, screen.Size{W: 1000, H: 625}},
		{screen.Size{W: 1280, H: 800}, 2, screen.Size{W: 1279, H: 799}},
		{screen.Size{W: 1001, H: 777}, 1.25, screen.Size{W: 733, H: 569}},
		{screen.Size{W: 800, H: 600}, 1, screen.Size{W: 1600, H: 1200}}, // upscaled
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%dx%d@%g->%dx%d", tt.viewport.W, tt.viewport.H, tt.dpr, tt.size.W, tt.size.H), func(t *testing.T) {
			d := newDisplay(t, DisplayConfig{Viewport: tt.viewport, DPR: tt.dpr})
			load(t, d, "quadrants.html")
			shot := capture(t, d, screen.CaptureOptions{Size: tt.size})
			got := shot.Frame.Sent
			if got.W > tt.size.W || got.H > tt.size.H || tt.size.W-got.W > 1 || tt.size.H-got.H > 1 {
				t.Errorf("Capture(size %v) of a %v viewport at DPR %g sent %v", tt.size, tt.viewport, tt.dpr, got)
			}
			t.Logf("sent %v", got)
			w, h := got.W, got.H
			checkPixels(t, "Capture", shot, 8, []probe{{w / 4, h / 4, red}, {3 * w / 4, h / 4, green}, {w / 4, 3 * h / 4, blue}, {3 * w / 4, 3 * h / 4, yellow}})
		})
	}
}

// TestInputAfterScaledCapture checks that clicks and wheel turns land
// where they should after captures at a model's size: in FrameControl
// mode the window is then scaled, and input coordinates with it.
func TestInputAfterScaledCapture(t *testing.T) {
	for _, dpr := range []float64{1, 2} {
		t.Run(fmt.Sprintf("dpr%g", dpr), func(t *testing.T) {
			d := newDisplay(t, DisplayConfig{DPR: dpr})
			load(t, d, "events.html")
			for i, size := range []screen.Size{{W: 1024, H: 640}, {W: 733, H: 458}, {W: 1024, H: 640}} {
				capture(t, d, screen.CaptureOptions{Size: size})
				takeEvents(t, d)
				p := actions.Pt(37+float64(i), 411)
				do(t, d, kind(actions.Click, at(p.X, p.Y)))
				got := only(takeEvents(t, d), "click")
				want := []event{{Type: "click", X: p.X, Y: p.Y, Detail: 1}}
				if diff := cmp.Diff(want, got, mouseFields); diff != "" {
					t.Errorf("after a %v capture, Perform(click at %v) events (-want +got):\n%s", size, p, diff)
				}

				capture(t, d, screen.CaptureOptions{Size: size})
				before := eval[float64](t, d, "document.getElementById('scroller').scrollTop")
				a := kind(actions.Scroll, at(750, 200)) // inside #scroller
				a.DeltaY = 100
				do(t, d, a)
				capture(t, d, screen.CaptureOptions{Size: size})
				wheels := only(takeEvents(t, d), "wheel")
				// Under an emulated device pixel ratio, Chromium (in either
				// mode) reports WheelEvent.deltaY divided by it, while the
				// page scrolls by the CSS px asked for.
				if len(wheels) != 1 || wheels[0].X != 750 || wheels[0].Y != 200 || wheels[0].DY != 100/dpr || wheels[0].Target != "inner" {
					t.Errorf("after a %v capture, wheel events = %+v, want one at (750,200) with deltaY %g on #inner", size, wheels, 100/dpr)
				}
				if got := eval[float64](t, d, "document.getElementById('scroller').scrollTop") - before; math.Abs(got-100) > 1 {
					t.Errorf("after a %v capture, a wheel turn of 100 px scrolled #scroller by %g px", size, got)
				}
			}
		})
	}
}
