package playwright

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	pw "github.com/playwright-community/playwright-go"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// pointer is where the display last put the mouse, CSS px.
type pointer struct {
	at    actions.Point
	known bool
}

// Perform runs one mapped action: its coordinates are CSS pixels of the
// viewport. It returns once Playwright has delivered the input to the page,
// not when the page has settled (Capture waits for that), or once the
// action opened a JavaScript dialog. While a dialog blocks the page, only
// Dialog, which answers it, runs; other actions fail with words saying so.
// Upload answers the file chooser the page opened.
//
// A tab a page opens becomes the active one; ListTabs, SwitchTab and
// CloseTab list, switch and close tabs. Screenshot, Wait, Zoom and
// CursorPosition are the harness's own business: they give an error
// wrapping screen.ErrUnsupported that says so.
func (d *Display) Perform(ctx context.Context, m screen.Mapped) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	a := m.Action
	if a.Kind == actions.Dialog {
		if err := d.answerDialog(ctx, a); err != nil {
			return fmt.Errorf("%s: %w", a.Kind, err)
		}
		return nil
	}
	p, err := d.plan(a)
	if err != nil {
		return fmt.Errorf("%s: %w", a.Kind, err)
	}
	// Tabs that opened or closed since the last call, first: the action
	// goes to the tab the model was last shown.
	err = d.run(ctx, d.cfg.CommandTimeout, func(context.Context) error { return d.syncTabs() })
	if err != nil && !errors.Is(err, errBlocked) {
		return fmt.Errorf("%s: %w", a.Kind, err)
	}
	dl, _, seen := d.tab().state.currentDialog()
	if dl != nil {
		info, _ := d.Dialog()
		return fmt.Errorf("%s: %s is open and blocks the page; answer it with the dialog action first", a.Kind, info.String())
	}
	err = d.run(ctx, d.cfg.CommandTimeout+a.Duration+eventBudget*inputEvents(a), p)
	if errors.Is(err, errBlocked) {
		if _, _, now := d.tab().state.currentDialog(); now != seen {
			// The action opened a dialog, which answers nothing until it
			// is answered: the input was delivered. What is left of the
			// action (a key still to release) runs after the answer.
			err = nil
		}
	}
	if errors.Is(err, errTabClosed) {
		// The action closed its own tab (a button that calls
		// window.close() closes it between press and release, or before
		// Playwright hears of the click): the input was delivered, and
		// the next capture shows the tab that takes its place.
		err = nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", a.Kind, err)
	}
	return nil
}

// eventBudget is the time a Perform allows per input event, besides
// CommandTimeout, so that long texts and drags are not cut short.
const eventBudget = 20 * time.Millisecond

// inputEvents estimates how many input events performing a takes beyond a
// few: four per character typed (Shift down and up at most), and a move per
// interpolated step of a drag.
func inputEvents(a actions.Action) time.Duration {
	n := 4 * utf8.RuneCountInString(a.Text)
	if a.Kind == actions.Drag {
		n += dragMaxSteps * len(a.Path)
	}
	return time.Duration(n)
}

// plan checks a and returns the Playwright calls that perform it.
func (d *Display) plan(a actions.Action) (func(ctx context.Context) error, error) {
	switch a.Kind {
	case actions.Click, actions.DoubleClick, actions.TripleClick,
		actions.MouseDown, actions.MouseUp, actions.Move, actions.Drag, actions.Scroll:
		return d.planPointer(a)
	case actions.Type:
		mods, err := modifierKeys(a.Modifiers)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) error {
			return d.hold(mods, func() error { return d.typeText(ctx, a.Text, slices.Contains(mods, "Shift")) })
		}, nil
	case actions.Keypress, actions.HoldKey:
		if _, zoom := screen.ZoomChord(a.Keys, 1); zoom {
			// The keys would reach the page and zoom nothing.
			return nil, fmt.Errorf("%w: this browser (Playwright) has no page zoom, so %s would do nothing; "+
				"use the zoom action to see a part of the page at full resolution", screen.ErrUnsupported, a.Keys)
		}
		return d.planChord(a.Keys, a.Duration)
	case actions.Navigate:
		if a.URL == "" {
			return nil, fmt.Errorf("%w: no URL", actions.ErrInvalid)
		}
		return func(context.Context) error { return d.navigate(a.URL) }, nil
	case actions.GoBack:
		return func(context.Context) error { return d.history(-1) }, nil
	case actions.GoForward:
		return func(context.Context) error { return d.history(+1) }, nil
	case actions.Upload:
		if len(a.Files) == 0 {
			return nil, fmt.Errorf("%w: no files", actions.ErrInvalid)
		}
		return func(context.Context) error { return d.upload(a.Files) }, nil
	case actions.ListTabs:
		return func(context.Context) error { return d.listTabs() }, nil
	case actions.SwitchTab:
		return func(context.Context) error { return d.switchTab(a.Tab) }, nil
	case actions.CloseTab:
		return func(context.Context) error { return d.closeTab(a.Tab) }, nil
	case actions.Screenshot, actions.Wait, actions.Zoom, actions.CursorPosition:
		return nil, fmt.Errorf("%w: %s is the harness's own business, not a display's", screen.ErrUnsupported, a.Kind)
	}
	return nil, fmt.Errorf("%w: action kind %s", screen.ErrUnsupported, a.Kind)
}

// planPointer plans a mouse action with a.Modifiers held.
func (d *Display) planPointer(a actions.Action) (func(ctx context.Context) error, error) {
	button, err := mouseButton(a.Button)
	if err != nil {
		return nil, err
	}
	mods, err := modifierKeys(a.Modifiers)
	if err != nil {
		return nil, err
	}
	if !finite(a.At.X, a.At.Y, a.DeltaX, a.DeltaY) {
		return nil, fmt.Errorf("%w: point %v", actions.ErrInvalid, a.At)
	}
	if a.Kind == actions.Drag {
		if len(a.Path) < 2 {
			return nil, fmt.Errorf("%w: a drag needs at least two points, got %d", actions.ErrInvalid, len(a.Path))
		}
		for _, p := range a.Path {
			if !finite(p.X, p.Y) {
				return nil, fmt.Errorf("%w: point %v", actions.ErrInvalid, p)
			}
		}
	}
	return func(context.Context) error {
		mouse := d.tab().page.Mouse()
		at := d.pointer.at
		if a.HasAt || a.Kind == actions.Move || a.Kind == actions.Scroll {
			at = a.At
		}
		return d.hold(mods, func() error {
			switch a.Kind {
			case actions.Click, actions.DoubleClick, actions.TripleClick:
				n := map[actions.Kind]int{actions.Click: 1, actions.DoubleClick: 2, actions.TripleClick: 3}[a.Kind]
				d.pointer = pointer{at, true}
				return mouse.Click(at.X, at.Y, pw.MouseClickOptions{Button: button, ClickCount: new(n)})
			case actions.MouseDown:
				if err := d.moveTo(at); err != nil {
					return err
				}
				return mouse.Down(pw.MouseDownOptions{Button: button})
			case actions.MouseUp:
				if err := d.moveTo(at); err != nil {
					return err
				}
				return mouse.Up(pw.MouseUpOptions{Button: button})
			case actions.Move:
				d.pointer = pointer{at, true}
				return mouse.Move(at.X, at.Y)
			case actions.Scroll:
				if err := d.moveTo(at); err != nil {
					return err
				}
				return mouse.Wheel(a.DeltaX, a.DeltaY)
			case actions.Drag:
				return d.drag(a.Path, button)
			}
			return screen.ErrUnsupported
		})
	}, nil
}

// moveTo moves the mouse to at unless it is there already.
func (d *Display) moveTo(at actions.Point) error {
	if d.pointer.known && d.pointer.at == at {
		return nil
	}
	d.pointer = pointer{at, true}
	return d.tab().page.Mouse().Move(at.X, at.Y)
}

// Drag interpolation: consecutive moves are at most dragStep CSS px apart,
// with at most dragMaxSteps moves per segment of the path.
const (
	dragStep     = 20
	dragMaxSteps = 25
)

// drag presses at path[0], moves through the path and releases at its end.
// If a move fails after the press, it still tries to release the button.
func (d *Display) drag(path []actions.Point, button *pw.MouseButton) error {
	mouse := d.tab().page.Mouse()
	if err := d.moveTo(path[0]); err != nil {
		return err
	}
	if err := mouse.Down(pw.MouseDownOptions{Button: button}); err != nil {
		return err
	}
	for i := 1; i < len(path); i++ {
		from, to := path[i-1], path[i]
		steps := min(max(int(math.Ceil(math.Hypot(to.X-from.X, to.Y-from.Y)/dragStep)), 1), dragMaxSteps)
		d.pointer = pointer{to, true}
		if err := mouse.Move(to.X, to.Y, pw.MouseMoveOptions{Steps: new(steps)}); err != nil {
			return errors.Join(err, mouse.Up(pw.MouseUpOptions{Button: button}))
		}
	}
	return mouse.Up(pw.MouseUpOptions{Button: button})
}

// mouseButton returns Playwright's name of b. Playwright has no back and
// forward buttons.
func mouseButton(b actions.Button) (*pw.MouseButton, error) {
	switch b {
	case actions.Left:
		return pw.MouseButtonLeft, nil
	case actions.Right:
		return pw.MouseButtonRight, nil
	case actions.Middle:
		return pw.MouseButtonMiddle, nil
	case actions.Back, actions.Forward:
		return nil, fmt.Errorf("%w: Playwright has no %s mouse button", screen.ErrUnsupported, b)
	}
	return nil, fmt.Errorf("%w: mouse button %v", actions.ErrInvalid, b)
}

// modifierKeys returns Playwright's names of the modifier keys of c.
func modifierKeys(c actions.Chord) ([]string, error) {
	names := make([]string, 0, len(c))
	for _, k := range c {
		if !k.IsModifier() {
			return nil, fmt.Errorf("%w: %q is not a modifier key", actions.ErrInvalid, k)
		}
		names = append(names, string(k))
	}
	return names, nil
}

// hold presses keys in order, runs f, and releases the keys in reverse
// order, even if f or a press failed.
func (d *Display) hold(keys []string, f func() error) (err error) {
	kb := d.tab().page.Keyboard()
	var down []string
	defer func() {
		for i := len(down) - 1; i >= 0; i-- {
			if uerr := kb.Up(down[i]); uerr != nil && err == nil {
				err = uerr
			}
		}
	}()
	for _, k := range keys {
		if err := kb.Down(k); err != nil {
			return err
		}
		down = append(down, k)
	}
	return f()
}

// unsupportedKeys are canonical keys that Playwright's keyboard lacks, or
// sends differently from what package actions says they are: none of the
// numeric keypad's keys works as on a real keypad.
var unsupportedKeys = func() map[actions.Key]string {
	m := map[actions.Key]string{}
	for n := 13; n <= 24; n++ {
		m[actions.Key(fmt.Sprint("F", n))] = "Playwright has no key %s"
	}
	for _, k := range []actions.Key{"AudioVolumeMute", "AudioVolumeDown", "AudioVolumeUp",
		"MediaTrackNext", "MediaTrackPrevious", "MediaStop", "MediaPlayPause"} {
		m[k] = "Playwright has no key %s"
	}
	for d := range 10 {
		m[actions.Key(fmt.Sprint("Numpad", d))] = "Playwright types %s as with Num Lock off (press the digit instead)"
	}
	m["NumpadDecimal"] = "Playwright types %s as with Num Lock off (press the period instead)"
	// Playwright 1.52 sends the keyup of a keypad key without isKeypad,
	// so the page sees it released at another location than pressed.
	for _, k := range []actions.Key{"NumpadAdd", "NumpadSubtract", "NumpadMultiply", "NumpadDivide", "NumpadEnter"} {
		m[k] = "Playwright does not send %s as a keypad key (press the main keyboard's key instead)"
	}
	return m
}()

// playwrightKey returns the key info of k and the name to give Playwright
// for it, or an error. The name is the key's DOM code ("KeyA", "Digit1",
// "ControlLeft", "Enter"): Playwright applies Shift to a key named by its
// code ("Digit1" with Shift held is "!"), but not to a key named by its
// character.
func playwrightKey(k actions.Key) (actions.KeyInfo, string, error) {
	info, ok := actions.LookupKey(k)
	if !ok {
		return info, "", fmt.Errorf("%w: unknown key %q", actions.ErrInvalid, k)
	}
	if why, ok := unsupportedKeys[k]; ok {
		return info, "", fmt.Errorf("%w: "+why, screen.ErrUnsupported, k)
	}
	return info, info.Code, nil
}

// planChord plans a Keypress (hold 0) or HoldKey: modifiers down, the main
// key down, up (after hold) and modifiers up. A main key that needs Shift
// on a US keyboard ("A", "!") gets it.
func (d *Display) planChord(c actions.Chord, hold time.Duration) (func(ctx context.Context) error, error) {
	if len(c) == 0 {
		return nil, fmt.Errorf("%w: no keys", actions.ErrInvalid)
	}
	var keys []string
	for i, k := range c {
		info, name, err := playwrightKey(k)
		if err != nil {
			return nil, err
		}
		if !k.IsModifier() {
			if i != len(c)-1 {
				return nil, fmt.Errorf("%w: chord %v: only the last key may be a non-modifier", actions.ErrInvalid, c)
			}
			if info.Shift && !slices.Contains(c, actions.Shift) {
				keys = append(keys, "Shift")
			}
		}
		keys = append(keys, name)
	}
	return func(ctx context.Context) error {
		return d.hold(keys, func() error {
			if hold <= 0 {
				return nil
			}
			t := time.NewTimer(hold)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-t.C:
				return nil
			}
		})
	}, nil
}

// typeText types text key by key, so that key handlers fire, holding Shift
// for the characters that need it (unless shiftHeld). Runes no key of a US
// keyboard types are inserted as text, as an input method would. It stops
// between keys once ctx ends: when a key opened a JavaScript dialog, the
// rest is not typed after the dialog is answered, and a note says so.
func (d *Display) typeText(ctx context.Context, text string, shiftHeld bool) error {
	kb := d.tab().page.Keyboard()
	text = strings.ReplaceAll(text, "\r\n", "\n")
	var pending strings.Builder
	flush := func() error {
		if pending.Len() == 0 {
			return nil
		}
		err := kb.InsertText(pending.String())
		pending.Reset()
		return err
	}
	total := utf8.RuneCountInString(text)
	typed := 0
	for _, r := range text {
		info, ok := actions.KeyForRune(r)
		if !ok {
			pending.WriteRune(r)
			typed++
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		if ctx.Err() != nil {
			d.tab().state.note("typing stopped after %d of %d characters: the type action ended first (a dialog opened, or it was canceled or timed out), and the rest was not typed", typed, total)
			return context.Cause(ctx)
		}
		typed++
		_, name, err := playwrightKey(info.Key)
		if err != nil {
			return err
		}
		var shift []string
		if info.Shift && !shiftHeld {
			shift = []string{"Shift"}
		}
		err = d.hold(shift, func() error {
			if err := kb.Down(name); err != nil {
				return err
			}
			return kb.Up(name)
		})
		if err != nil {
			return err
		}
	}
	return flush()
}

// navigate starts loading url and returns when the browser has committed
// to the new document; Capture waits for the rest.
func (d *Display) navigate(url string) error {
	_, err := d.tab().page.Goto(url, pw.PageGotoOptions{
		WaitUntil: pw.WaitUntilStateCommit,
		Timeout:   new(float64(d.cfg.CommandTimeout.Milliseconds())),
	})
	if err != nil {
		return fmt.Errorf("load %s: %w", url, err)
	}
	return nil
}

// history goes one step back (delta -1) or forward (+1) in the page's
// history.
func (d *Display) history(delta int) error {
	before := d.tab().page.URL()
	var (
		resp pw.Response
		err  error
	)
	timeout := new(float64(d.cfg.CommandTimeout.Milliseconds()))
	if delta < 0 {
		resp, err = d.tab().page.GoBack(pw.PageGoBackOptions{WaitUntil: pw.WaitUntilStateCommit, Timeout: timeout})
	} else {
		resp, err = d.tab().page.GoForward(pw.PageGoForwardOptions{WaitUntil: pw.WaitUntilStateCommit, Timeout: timeout})
	}
	if err != nil {
		return err
	}
	if resp == nil && d.tab().page.URL() == before {
		if delta < 0 {
			return errors.New("there is no previous page in this tab's history")
		}
		return errors.New("there is no next page in this tab's history")
	}
	return nil
}
