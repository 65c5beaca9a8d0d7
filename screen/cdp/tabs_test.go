package cdp

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// TestTabListOnce: the display notes the tab list once per tab action, in
// the next screenshot's events (an adapter that also sends a Result's
// Notes, where harness.Executor copies those events, must not say it
// twice; see the adapters' tests).
func TestTabListOnce(t *testing.T) {
	d := newDisplay(t, DisplayConfig{})
	load(t, d, "popup.html")
	do(t, d, kind(actions.Click, at(100, 50))) // target=_blank
	shoot(t, d)
	for _, a := range []actions.Action{{Kind: actions.ListTabs}, {Kind: actions.SwitchTab}} {
		do(t, d, a)
		shot := shoot(t, d)
		n := 0
		for _, e := range shot.Events {
			n += strings.Count(e, "Open tabs")
		}
		if n != 1 {
			t.Errorf("after %v: events %q list the tabs %d times, want once", a.Kind, shot.Events, n)
		}
		if shot := shoot(t, d); len(shot.Events) != 0 {
			t.Errorf("the screenshot after that: events %q, want none (each note is taken once)", shot.Events)
		}
	}
}

// A window that stopped drawing (errWedged) is replaced by a new window at
// the same URL, in the same place among the tabs; the old one closes and
// the model is told what was lost. Screencast mode has no such windows.
func TestReopenWedgedWindow(t *testing.T) {
	d := newDisplay(t, DisplayConfig{Viewport: screen.Size{W: 640, H: 400}})
	load(t, d, "popup.html")
	if !d.frames {
		d.mu.Lock()
		err := d.reopen(t.Context())
		d.mu.Unlock()
		if !errors.Is(err, screen.ErrUnsupported) {
			t.Fatalf("reopen() in Screencast mode = %v, want ErrUnsupported", err)
		}
		return
	}
	do(t, d, kind(actions.Click, at(100, 50))) // target=_blank: a second tab, active
	shoot(t, d)
	want := testURL(t, "quadrants.html")
	do(t, d, actions.Action{Kind: actions.Navigate, URL: want})
	shoot(t, d)
	d.mu.Lock()
	old, first := d.cur, d.tabs[0]
	err := d.reopen(t.Context())
	tabs, cur := slices.Clone(d.tabs), d.cur
	d.mu.Unlock()
	if err != nil {
		t.Fatalf("reopen() = %v", err)
	}
	if len(tabs) != 2 || tabs[0] != first || tabs[1] != cur || cur == old {
		t.Fatalf("after reopen: %d tabs, the first kept %v, the active one new and second %v; want 2, true, true",
			len(tabs), tabs[0] == first, cur != old && tabs[len(tabs)-1] == cur)
	}
	shot := capture(t, d, screen.CaptureOptions{Size: screen.Size{W: 640, H: 400}})
	if shot.Frame.URL != want {
		t.Errorf("after reopen: URL %q, want %q", shot.Frame.URL, want)
	}
	checkPixels(t, "after reopen", shot, 6, []probe{{160, 100, red}, {480, 100, green}, {160, 300, blue}, {480, 300, yellow}})
	if !slices.ContainsFunc(shot.Events, func(e string) bool { return strings.Contains(e, "stopped drawing") }) {
		t.Errorf("after reopen: events %q, want a note that the window was opened again", shot.Events)
	}
	targets, err := cdp.Call(t.Context(), d.browser, target.GetTargets, target.GetTargetsParams{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ti := range targets.TargetInfos {
		if ti.TargetID == old.id {
			t.Errorf("the wedged window's target %s is still open", old.id)
		}
	}
}

// Capture hands a wedged window to reopen; where there is no browser to
// open a new one in, the error says both.
func TestCaptureWedged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tab := &frameTab{t: t, empty: 1 << 20, size: screen.Size{W: 1024, H: 640}}
		d, f := frameDisplay(tab, 0.8)
		f.out.size = screen.Size{W: 1024, H: 640}
		_, err := d.Capture(t.Context(), screen.CaptureOptions{Size: screen.Size{W: 1024, H: 640}})
		if !errors.Is(err, errWedged) || !errors.Is(err, screen.ErrUnsupported) {
			t.Errorf("Capture of a wedged window without a browser = %v, want errWedged and ErrUnsupported", err)
		}
	})
}
