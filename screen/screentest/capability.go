package screentest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// A Capability is a group of actions that a display declares it performs.
// A set of capabilities is their bitwise or:
//
//	screentest.Run(t, screentest.Pages|screentest.Pointer|screentest.Keys, open)
//
// Run checks every declared capability, and a declared capability that does
// not work fails the suite, whatever the error (screen.ErrUnsupported too).
// It checks that the display refuses each action of an undeclared capability
// with an error wrapping screen.ErrUnsupported, so a declaration can neither
// hide a lost capability nor leave out one the display has.
type Capability uint

const (
	// Pages: Navigate loads web pages and the display shows them. Only
	// then can the suite see what input does (the pages report their
	// events); on a display without Pages, a declared input capability is
	// checked for being performed without an error, not for its effect.
	Pages Capability = 1 << iota
	// Pointer: Click, DoubleClick, TripleClick, MouseDown, Move, MouseUp
	// and Drag with the left, right and middle buttons, with modifiers
	// held.
	Pointer
	// BackForward: the back and forward mouse buttons.
	BackForward
	// Keys: Keypress and HoldKey of chords and of the keys of the main
	// keyboard, function and navigation keys included.
	Keys
	// Keypad: the numeric keypad's keys, sent as keypad keys (DOM location
	// 3).
	Keypad
	// Typing: Type, of any text (newlines and characters no US key types
	// included).
	Typing
	// Scroll: the mouse wheel.
	Scroll
	// PixelRatio: the display opens at device pixel ratios other than 1.
	// Without it the suite opens a display at DPR 1 only.
	PixelRatio

	numCapabilities = iota
)

var capabilityNames = [numCapabilities]string{"Pages", "Pointer", "BackForward", "Keys", "Keypad", "Typing", "Scroll", "PixelRatio"}

// String names the capabilities of c as their constants, joined by "|".
func (c Capability) String() string {
	var names []string
	for i, name := range capabilityNames {
		if c&(1<<i) != 0 {
			names = append(names, name)
		}
	}
	if rest := c &^ (1<<numCapabilities - 1); rest != 0 {
		names = append(names, fmt.Sprintf("%#x", uint(rest)))
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "|")
}

// capabilityOf returns the capability that a needs.
func capabilityOf(a actions.Action) Capability {
	switch a.Kind {
	case actions.Navigate, actions.GoBack, actions.GoForward:
		return Pages
	case actions.Click, actions.DoubleClick, actions.TripleClick,
		actions.MouseDown, actions.MouseUp, actions.Move, actions.Drag:
		if a.Button == actions.Back || a.Button == actions.Forward {
			return BackForward
		}
		return Pointer
	case actions.Keypress, actions.HoldKey:
		for _, k := range a.Keys {
			if info, ok := actions.LookupKey(k); ok && info.Location == 3 {
				return Keypad
			}
		}
		return Keys
	case actions.Type:
		return Typing
	case actions.Scroll:
		return Scroll
	}
	return 0
}

// probes returns the actions that stand for capability k where the suite
// cannot watch their effect: the display must refuse each of them if it
// does not declare k, and perform each of them without an error if it
// declares k but has no Pages.
func (c *checker) probes(k Capability) []actions.Action {
	vp := c.o.Viewport
	mid := actions.Pt(float64(vp.W)/2, float64(vp.H)/2)
	near := actions.Pt(mid.X+40, mid.Y+30)
	button := func(b actions.Button) actions.Action {
		a := click(mid)
		a.Button = b
		return a
	}
	key := func(keys ...actions.Key) actions.Action {
		return actions.Action{Kind: actions.Keypress, Keys: keys}
	}
	switch k {
	case Pages:
		return []actions.Action{{Kind: actions.Navigate, URL: c.o.Pages + "/pattern.html"}, {Kind: actions.GoBack}, {Kind: actions.GoForward}}
	case Pointer:
		held := click(near)
		held.Modifiers = actions.Chord{actions.Control, actions.Shift}
		// Right and middle first: on a desktop they may open a menu,
		// which the left clicks after them close.
		return []actions.Action{
			button(actions.Right),
			button(actions.Middle),
			click(mid),
			{Kind: actions.DoubleClick, At: near, HasAt: true},
			{Kind: actions.TripleClick, At: mid, HasAt: true},
			held,
			{Kind: actions.MouseDown, At: mid, HasAt: true},
			{Kind: actions.Move, At: near, HasAt: true},
			{Kind: actions.MouseUp},
			{Kind: actions.Drag, Path: []actions.Point{mid, near, mid}},
		}
	case BackForward:
		return []actions.Action{button(actions.Back), button(actions.Forward)}
	case Keys:
		return []actions.Action{
			key(actions.Shift, "1"),
			key("Escape"),
			key("F2"),
			key("a"),
			{Kind: actions.HoldKey, Keys: actions.Chord{actions.Shift}, Duration: 50 * time.Millisecond},
		}
	case Keypad:
		return []actions.Action{key("Numpad5"), key("NumpadAdd")}
	case Typing:
		return []actions.Action{{Kind: actions.Type, Text: "Hello, World! ~{}|<>?_+\nline 2 café ✓"}}
	case Scroll:
		return []actions.Action{
			{Kind: actions.Scroll, At: mid, HasAt: true, DeltaY: 100},
			{Kind: actions.Scroll, At: mid, HasAt: true, DeltaX: 100},
		}
	}
	return nil
}

// needs reports whether the display declares k. If it does not, needs
// checks that the display refuses each of probes (k's own probes if none
// are given) with an error wrapping screen.ErrUnsupported, and reports
// false: the check that needed k has nothing more to do.
func (c *checker) needs(t *testing.T, k Capability, probes ...actions.Action) bool {
	t.Helper()
	if c.caps&k == k {
		return true
	}
	if len(probes) == 0 {
		probes = c.probes(k)
	}
	refused := 0
	for _, a := range probes {
		if c.refuses(t, a) {
			refused++
		}
	}
	if refused == len(probes) {
		t.Logf("the display does not declare %s, and refuses its %d probes with screen.ErrUnsupported", k, refused)
	}
	return false
}

// refuses checks that the display refuses a, an action of a capability it
// does not declare, with an error wrapping screen.ErrUnsupported, and
// reports whether it did.
func (c *checker) refuses(t *testing.T, a actions.Action) bool {
	t.Helper()
	err := c.d.Perform(t.Context(), screen.Mapped{Action: a})
	if err != nil && c.refusal == "" {
		c.refusal = err.Error()
	}
	if !errors.Is(err, screen.ErrUnsupported) {
		t.Errorf("Perform(%s) = %v, want an error wrapping screen.ErrUnsupported: the display does not declare %s (declare it if the display performs it)",
			describe(a), err, capabilityOf(a))
		return false
	}
	return true
}

// unsupportedHint explains a failure of a, which the suite performed
// because its capability is declared, or because a check needs it.
func (c *checker) unsupportedHint(a actions.Action, err error) string {
	if !errors.Is(err, screen.ErrUnsupported) {
		return ""
	}
	k := capabilityOf(a)
	if c.caps&k == k {
		return fmt.Sprintf(" (the display declares %s, so it must perform it)", k)
	}
	return fmt.Sprintf(" (this check needs %s, which the display does not declare)", k)
}
