package cdp

import (
	"strings"
	"testing"

	"github.com/spotter-harness/spotter/actions"
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
