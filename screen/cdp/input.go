package cdp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// Perform runs one mapped action: its coordinates are CSS pixels of the
// viewport. It returns once the browser has delivered the input to the page,
// not when the page has settled (Capture waits for that). Screenshot, Wait,
// Zoom and CursorPosition are the harness's own business and give an error
// wrapping screen.ErrUnsupported.
//
// While a JavaScript dialog blocks the page, only Dialog (which answers
// it) and the tab actions run; an action that opens a dialog succeeds, as
// its input was delivered, and the next capture tells the model about the
// dialog.
func (d *Display) Perform(ctx context.Context, m screen.Mapped) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.ready(ctx); err != nil {
		return fmt.Errorf("%s: %w", m.Kind, err)
	}
	dl, open, seen := d.state.currentDialog()
	if open && !worksBlocked(m.Kind) {
		return fmt.Errorf("%s: %s is open and blocks the page; answer it with the dialog action first", m.Kind, dl.String())
	}
	st, seenAny := d.state, d.dialogs.count()
	err := d.perform(ctx, m.Action)
	if !errors.Is(err, screen.ErrUnsupported) && !worksBlocked(m.Kind) {
		st.markInput() // even a failed action may have delivered some input
	}
	if errors.Is(err, errBlocked) {
		_, _, now := st.currentDialog()
		if now != seen || d.dialogs.count() != seenAny {
			// The action opened a dialog (here, or in a tab it opened),
			// which stopped the wait for the browser's answer: the
			// input was delivered.
			d.buttons = 0
			err = d.autoDismiss(ctx)
		}
	}
	if err != nil && errors.Is(err, screen.ErrGone) && !worksBlocked(m.Kind) && d.tabClosed() {
		// The page closed its own tab in answer to the input (a click
		// handler's window.close() can end the tab before the browser
		// answers the mouse release): the input was delivered, and the
		// display goes on with another tab, as after a capture.
		d.buttons = 0
		err = d.syncTabs(ctx)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", m.Kind, err)
	}
	return nil
}

// worksBlocked reports whether an action of kind k runs while a dialog
// blocks the page.
func worksBlocked(k actions.Kind) bool {
	switch k {
	case actions.Dialog, actions.ListTabs, actions.SwitchTab, actions.CloseTab:
		return true
	}
	return false
}

func (d *Display) perform(ctx context.Context, a actions.Action) error {
	switch a.Kind {
	case actions.Click, actions.DoubleClick, actions.TripleClick,
		actions.MouseDown, actions.MouseUp, actions.Move, actions.Drag, actions.Scroll:
		return d.pointerAction(ctx, a)
	case actions.Type:
		return d.withModifiers(ctx, a.Modifiers, func(mods int64) error {
			return d.typeText(ctx, a.Text, mods)
		})
	case actions.Keypress:
		if z, ok := screen.ZoomChord(a.Keys, d.zoom()); ok {
			return d.setZoom(ctx, z)
		}
		return d.chord(ctx, a.Keys, 0)
	case actions.HoldKey:
		return d.chord(ctx, a.Keys, a.Duration)
	case actions.Navigate:
		return d.navigate(ctx, a.URL)
	case actions.GoBack:
		return d.history(ctx, -1)
	case actions.GoForward:
		return d.history(ctx, +1)
	case actions.ListTabs:
		d.noteTabs(ctx)
		return nil
	case actions.SwitchTab:
		return d.switchTab(ctx, a.Tab)
	case actions.CloseTab:
		return d.closeTab(ctx, a.Tab)
	case actions.Dialog:
		return d.answerDialog(ctx, a)
	case actions.Upload:
		return d.upload(ctx, a.Files)
	}
	return screen.ErrUnsupported
}

// CDP modifier bits of input events.
const (
	modAlt   = 1
	modCtrl  = 2
	modMeta  = 4
	modShift = 8
)

func modifierBit(k actions.Key) int64 {
	switch k {
	case actions.Alt:
		return modAlt
	case actions.Control:
		return modCtrl
	case actions.Meta:
		return modMeta
	case actions.Shift:
		return modShift
	}
	return 0
}

// mouseButtons are the CDP names and "buttons" bits of the mouse buttons.
var mouseButtons = [...]struct {
	name input.MouseButton
	bit  int64
}{
	actions.Left:    {input.MouseButtonLeft, 1},
	actions.Right:   {input.MouseButtonRight, 2},
	actions.Middle:  {input.MouseButtonMiddle, 4},
	actions.Back:    {input.MouseButtonBack, 8},
	actions.Forward: {input.MouseButtonForward, 16},
}

func mouseButton(b actions.Button) (input.MouseButton, int64, error) {
	if int(b) >= len(mouseButtons) {
		return "", 0, fmt.Errorf("%w: mouse button %v", actions.ErrInvalid, b)
	}
	return mouseButtons[b].name, mouseButtons[b].bit, nil
}

// heldButton is the button that mouseMoved events report while buttons are
// held: the first one held, as Chromium reports it.
func heldButton(buttons int64) input.MouseButton {
	for _, b := range mouseButtons {
		if buttons&b.bit != 0 {
			return b.name
		}
	}
	return input.MouseButtonNone
}

// pointerAction performs a mouse action with a.Modifiers held.
func (d *Display) pointerAction(ctx context.Context, a actions.Action) error {
	button, bit, err := mouseButton(a.Button)
	if err != nil {
		return err
	}
	at := d.pointer // without At, an action acts where the pointer is
	if a.HasAt {
		at = a.At
	}
	if !finite(at.X, at.Y, a.DeltaX, a.DeltaY) {
		return fmt.Errorf("%w: point %v", actions.ErrInvalid, at)
	}
	if a.Kind == actions.Drag {
		if len(a.Path) < 2 {
			return fmt.Errorf("%w: a drag needs at least two points, got %d", actions.ErrInvalid, len(a.Path))
		}
		for _, p := range a.Path {
			if !finite(p.X, p.Y) {
				return fmt.Errorf("%w: point %v", actions.ErrInvalid, p)
			}
		}
	}
	return d.withModifiers(ctx, a.Modifiers, func(mods int64) error {
		switch a.Kind {
		case actions.Click, actions.DoubleClick, actions.TripleClick:
			if err := d.moveTo(ctx, at, mods); err != nil {
				return err
			}
			n := map[actions.Kind]int64{actions.Click: 1, actions.DoubleClick: 2, actions.TripleClick: 3}[a.Kind]
			for i := int64(1); i <= n; i++ {
				if err := d.press(ctx, at, button, bit, i, mods); err != nil {
					return err
				}
				if err := d.release(ctx, at, button, bit, i, mods); err != nil {
					return err
				}
			}
			return nil
		case actions.MouseDown:
			if err := d.moveTo(ctx, at, mods); err != nil {
				return err
			}
			return d.press(ctx, at, button, bit, 1, mods)
		case actions.MouseUp:
			if err := d.moveTo(ctx, at, mods); err != nil {
				return err
			}
			return d.release(ctx, at, button, bit, 1, mods)
		case actions.Move:
			return d.moveTo(ctx, at, mods)
		case actions.Scroll:
			if err := d.moveTo(ctx, at, mods); err != nil {
				return err
			}
			return d.wheel(ctx, at, a.DeltaX, a.DeltaY, mods)
		case actions.Drag:
			return d.drag(ctx, a.Path, button, bit, mods)
		}
		return screen.ErrUnsupported
	})
}

// mouse dispatches one mouse event with the buttons currently held, and
// remembers where the pointer is. p's coordinates are CSS px.
func (d *Display) mouse(ctx context.Context, p input.DispatchMouseEventParams) error {
	css := actions.Pt(p.X, p.Y)
	s, err := d.r.pointer(ctx, false)
	if err != nil {
		return err
	}
	p.X, p.Y = toWindow(css, s)
	p.Buttons = d.buttons
	p.PointerType = input.DispatchMouseEventPointerTypeMouse
	send := func(ctx context.Context) error {
		_, err := call(ctx, d, input.DispatchMouseEvent, p)
		return err
	}
	if p.Type == input.DispatchMouseEventTypeMouseMoved {
		// Chromium delivers moves with the next animation frame.
		err = d.r.framed(ctx, send)
	} else {
		err = send(ctx)
	}
	if err != nil {
		return err
	}
	d.pointer = css
	return nil
}

// inputNudge is how far, in CSS px, toWindow moves a point right and down
// when the window is scaled, so that the float32 arithmetic of the way
// back to CSS px never lands a hair to the left of or above a whole
// pixel, which pages would see as the pixel before (MouseEvent.clientX is
// whole pixels).
const inputNudge = 1.0 / 256

// toWindow converts a point in CSS px of the viewport to the coordinates
// of input events in a window of s pixels per CSS px.
func toWindow(p actions.Point, s float64) (x, y float64) {
	if s == 1 {
		return p.X, p.Y
	}
	return (p.X + inputNudge) * s, (p.Y + inputNudge) * s
}

// wheelParams are Input.dispatchMouseEvent's parameters for a wheel event.
// cdproto's struct omits zero deltas, and Chromium requires both.
type wheelParams struct {
	Type        input.DispatchMouseEventType        `json:"type"`
	X           float64                             `json:"x"`
	Y           float64                             `json:"y"`
	Modifiers   int64                               `json:"modifiers"`
	Buttons     int64                               `json:"buttons"`
	DeltaX      float64                             `json:"deltaX"`
	DeltaY      float64                             `json:"deltaY"`
	PointerType input.DispatchMouseEventPointerType `json:"pointerType"`
}

var dispatchWheel = cdp.Command[wheelParams, cdp.Empty]{Method: input.CommandDispatchMouseEvent}

// wheel turns the mouse wheel at a point, so that whatever is under the
// point scrolls (an inner scroll container, or the page). The point and
// deltas are CSS px.
func (d *Display) wheel(ctx context.Context, at actions.Point, dx, dy float64, mods int64) error {
	s, err := d.r.pointer(ctx, true)
	if err != nil {
		return err
	}
	x, y := toWindow(at, s)
	// In FrameControl mode, a wheel turn that scrolls a scroll box (not
	// the page) while the pointer rests on the box's content leaves
	// Chromium waiting, after the scroll, for a frame that updates what
	// the pointer hovers, which never comes: every later frame stays
	// unanswered. So the pointer leaves the window for the turn, and
	// comes back after it, which updates the hover as a move does. The
	// page sees the pointer leave and come back around the wheel event.
	away := d.frames && d.buttons == 0
	if away {
		if err := d.windowMove(ctx, -1, -1, mods); err != nil {
			return err
		}
	}
	err = d.r.framed(ctx, func(ctx context.Context) error {
		_, err := call(ctx, d, dispatchWheel, wheelParams{
			Type: input.DispatchMouseEventTypeMouseWheel, X: x, Y: y,
			Modifiers: mods, Buttons: d.buttons, DeltaX: dx * s, DeltaY: dy * s,
			PointerType: input.DispatchMouseEventPointerTypeMouse,
		})
		return err
	})
	if err != nil || !away {
		return err
	}
	return d.windowMove(ctx, x, y, mods)
}

// windowMove moves the pointer to a point in window pixels, with no button
// held, and runs frames until Chromium has delivered the move.
func (d *Display) windowMove(ctx context.Context, x, y float64, mods int64) error {
	return d.r.framed(ctx, func(ctx context.Context) error {
		_, err := call(ctx, d, input.DispatchMouseEvent, input.DispatchMouseEventParams{
			Type: input.DispatchMouseEventTypeMouseMoved, X: x, Y: y, Modifiers: mods,
			PointerType: input.DispatchMouseEventPointerTypeMouse,
		})
		return err
	})
}

// moveTo moves the pointer to at unless it is there already.
func (d *Display) moveTo(ctx context.Context, at actions.Point, mods int64) error {
	if at == d.pointer {
		return nil
	}
	return d.mouse(ctx, input.DispatchMouseEventParams{
		Type: input.DispatchMouseEventTypeMouseMoved, X: at.X, Y: at.Y,
		Modifiers: mods, Button: heldButton(d.buttons),
	})
}

func (d *Display) press(ctx context.Context, at actions.Point, b input.MouseButton, bit, clicks, mods int64) error {
	d.buttons |= bit
	err := d.mouse(ctx, input.DispatchMouseEventParams{
		Type: input.DispatchMouseEventTypeMousePressed, X: at.X, Y: at.Y,
		Modifiers: mods, Button: b, ClickCount: clicks,
	})
	if err != nil {
		d.buttons &^= bit
	}
	return err
}

func (d *Display) release(ctx context.Context, at actions.Point, b input.MouseButton, bit, clicks, mods int64) error {
	d.buttons &^= bit
	return d.mouse(ctx, input.DispatchMouseEventParams{
		Type: input.DispatchMouseEventTypeMouseReleased, X: at.X, Y: at.Y,
		Modifiers: mods, Button: b, ClickCount: clicks,
	})
}

// Drag interpolation: consecutive mouseMoved events are at most dragStep
// CSS px apart, with at most dragMaxSteps events per segment of the path.
const (
	dragStep     = 20
	dragMaxSteps = 25
)

// dragPoints returns the points a drag moves through after pressing at
// path[0]: every path point, with intermediate points on long segments.
func dragPoints(path []actions.Point) []actions.Point {
	var pts []actions.Point
	for i := 1; i < len(path); i++ {
		from, to := path[i-1], path[i]
		dist := math.Hypot(to.X-from.X, to.Y-from.Y)
		n := min(max(int(math.Ceil(dist/dragStep)), 1), dragMaxSteps)
		for s := 1; s < n; s++ {
			f := float64(s) / float64(n)
			pts = append(pts, actions.Pt(from.X+(to.X-from.X)*f, from.Y+(to.Y-from.Y)*f))
		}
		pts = append(pts, to)
	}
	return pts
}

// drag presses at path[0], moves through the path and releases at its end.
// If a move fails after the press, it still tries to release the button.
// A page that starts an HTML5 drag (dragstart) gets it as drag events
// (see dropIntercepted), as Chromium intercepts drags for the display.
func (d *Display) drag(ctx context.Context, path []actions.Point, b input.MouseButton, bit, mods int64) error {
	if err := d.moveTo(ctx, path[0], mods); err != nil {
		return err
	}
	if err := d.press(ctx, path[0], b, bit, 1, mods); err != nil {
		return err
	}
	d.state.takeDrag() // a stale one
	pts := dragPoints(path)
	for i, p := range pts {
		err := d.mouse(ctx, input.DispatchMouseEventParams{
			Type: input.DispatchMouseEventTypeMouseMoved, X: p.X, Y: p.Y,
			Modifiers: mods, Button: b,
		})
		if err != nil {
			return errors.Join(err, d.release(cleanup(ctx), d.pointer, b, bit, 1, mods))
		}
		if data := d.state.takeDrag(); data != nil {
			err := d.dropIntercepted(ctx, data, pts[i:], mods)
			return errors.Join(err, d.release(cleanup(ctx), d.pointer, b, bit, 1, mods))
		}
	}
	if data := d.state.takeDrag(); data != nil {
		err := d.dropIntercepted(ctx, data, pts[len(pts)-1:], mods)
		return errors.Join(err, d.release(cleanup(ctx), d.pointer, b, bit, 1, mods))
	}
	return d.release(ctx, path[len(path)-1], b, bit, 1, mods)
}

// dropIntercepted carries an HTML5 drag that the page started along pts
// (CSS px; the first is where it started) with Input.dispatchDragEvent:
// dragEnter at the first point, dragOver at each, and the drop at the
// last. Unlike mouse events, drag events take the page's CSS px in either
// mode, however the window is scaled.
func (d *Display) dropIntercepted(ctx context.Context, data *input.DragData, pts []actions.Point, mods int64) error {
	send := func(typ input.DispatchDragEventType, p actions.Point) error {
		x, y := toWindow(p, 1/d.zoom())
		err := d.r.framed(ctx, func(ctx context.Context) error {
			_, err := call(ctx, d, input.DispatchDragEvent, input.DispatchDragEventParams{Type: typ, X: x, Y: y, Data: data, Modifiers: mods})
			return err
		})
		if err == nil {
			d.pointer = p
		}
		return err
	}
	if err := send(input.DispatchDragEventTypeDragEnter, pts[0]); err != nil {
		return err
	}
	for _, p := range pts {
		if err := send(input.DispatchDragEventTypeDragOver, p); err != nil {
			return err
		}
	}
	return send(input.DispatchDragEventTypeDrop, pts[len(pts)-1])
}

// cleanup returns a context for undoing input (releasing keys and buttons)
// that works even after ctx is canceled.
func cleanup(ctx context.Context) context.Context {
	return context.WithoutCancel(ctx)
}

// withModifiers holds the modifier keys of c down while f runs, passing f
// the CDP modifier bitmask, and releases them afterwards even if f failed.
func (d *Display) withModifiers(ctx context.Context, c actions.Chord, f func(mods int64) error) error {
	infos := make([]actions.KeyInfo, 0, len(c))
	for _, k := range c {
		if !k.IsModifier() {
			return fmt.Errorf("%w: %q is not a modifier key", actions.ErrInvalid, k)
		}
		info, ok := actions.LookupKey(k)
		if !ok {
			return fmt.Errorf("%w: unknown key %q", actions.ErrInvalid, k)
		}
		infos = append(infos, info)
	}
	return d.holdKeys(ctx, infos, 0, f)
}

// holdKeys presses keys in order, runs f with the resulting modifier
// bitmask, and releases the keys in reverse order, even if f or a press
// failed.
func (d *Display) holdKeys(ctx context.Context, keys []actions.KeyInfo, mods int64, f func(mods int64) error) (err error) {
	var down []actions.KeyInfo
	defer func() {
		for i := len(down) - 1; i >= 0; i-- {
			mods &^= modifierBit(down[i].Key)
			if rerr := d.key(cleanup(ctx), input.DispatchKeyEventTypeKeyUp, down[i], mods); rerr != nil && err == nil {
				err = rerr
			}
		}
	}()
	for _, k := range keys {
		mods |= modifierBit(k.Key)
		if err := d.key(ctx, input.DispatchKeyEventTypeKeyDown, k, mods); err != nil {
			return err
		}
		down = append(down, k)
	}
	return f(mods)
}

// chord presses a Keypress chord: modifiers down, the main key down and up
// (after hold, for HoldKey), modifiers up.
func (d *Display) chord(ctx context.Context, c actions.Chord, hold time.Duration) error {
	if len(c) == 0 {
		return fmt.Errorf("%w: no keys", actions.ErrInvalid)
	}
	infos := make([]actions.KeyInfo, 0, len(c))
	var mods int64
	for i, k := range c {
		info, ok := actions.LookupKey(k)
		if !ok {
			return fmt.Errorf("%w: unknown key %q", actions.ErrInvalid, k)
		}
		if k.IsModifier() {
			mods |= modifierBit(k)
		} else if i != len(c)-1 {
			return fmt.Errorf("%w: chord %v: only the last key may be a non-modifier", actions.ErrInvalid, c)
		} else if mods&modShift != 0 {
			info = shifted(info) // Shift+a types "A", as a keyboard does
		}
		infos = append(infos, info)
	}
	return d.holdKeys(ctx, infos, 0, func(int64) error {
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
}

// shifted returns the key that the physical key of k types with Shift on
// a US layout ("A" for "a", "!" for "1"), or k if there is none.
func shifted(k actions.KeyInfo) actions.KeyInfo {
	if k.Shift || len(k.Text) != 1 {
		return k
	}
	for r := rune('!'); r <= '~'; r++ {
		if s, ok := actions.KeyForRune(r); ok && s.Shift && s.Code == k.Code {
			return s
		}
	}
	return k
}

// typeText types text key by key, so that key handlers fire. Runes no key
// of a US keyboard types are inserted as text (Input.insertText), as an
// input method would. mods are the modifiers held by the caller.
func (d *Display) typeText(ctx context.Context, text string, mods int64) error {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	var pending strings.Builder
	flush := func() error {
		if pending.Len() == 0 {
			return nil
		}
		_, err := call(ctx, d, input.InsertText, input.InsertTextParams{Text: pending.String()})
		pending.Reset()
		return err
	}
	for _, r := range text {
		info, ok := actions.KeyForRune(r)
		if !ok {
			pending.WriteRune(r)
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		var err error
		if info.Shift && mods&modShift == 0 {
			shift, _ := actions.LookupKey(actions.Shift)
			err = d.holdKeys(ctx, []actions.KeyInfo{shift}, mods, func(m int64) error {
				return d.tap(ctx, info, m)
			})
		} else {
			err = d.tap(ctx, info, mods)
		}
		if err != nil {
			return err
		}
	}
	return flush()
}

// tap presses and releases one key.
func (d *Display) tap(ctx context.Context, k actions.KeyInfo, mods int64) error {
	if err := d.key(ctx, input.DispatchKeyEventTypeKeyDown, k, mods); err != nil {
		return err
	}
	return d.key(ctx, input.DispatchKeyEventTypeKeyUp, k, mods)
}

// key dispatches one key event. A keyDown of a key that types text while no
// Control, Alt or Meta is held carries the text (so the page gets keypress
// and input events); otherwise it is a rawKeyDown. Editing shortcuts carry
// their editing command (see editCommand).
func (d *Display) key(ctx context.Context, typ input.DispatchKeyEventType, k actions.KeyInfo, mods int64) error {
	p := input.DispatchKeyEventParams{
		Type:                  typ,
		Modifiers:             mods,
		Key:                   k.DOMKey,
		Code:                  k.Code,
		WindowsVirtualKeyCode: int64(k.KeyCode),
		NativeVirtualKeyCode:  int64(k.KeyCode),
		Location:              int64(k.Location),
	}
	if k.Location == 3 {
		p.IsKeypad = new(true)
	}
	if typ == input.DispatchKeyEventTypeKeyDown {
		if k.Text != "" && mods&(modCtrl|modAlt|modMeta) == 0 {
			p.Text, p.UnmodifiedText = k.Text, k.Text
		} else {
			p.Type = input.DispatchKeyEventTypeRawKeyDown
		}
		if c := editCommand(k, mods); c != "" {
			p.Commands = []string{c}
		}
	}
	_, err := call(ctx, d, input.DispatchKeyEvent, p)
	return err
}

// editCommand returns the editing command of a shortcut (Control+A is
// "selectAll"), or "". Chromium on Linux maps these shortcuts itself; on
// macOS a synthetic key event edits only if it carries the command. A key
// event with commands runs them instead of the key map, not in addition
// (TestEditingShortcuts checks that one Control+Z undoes one step).
func editCommand(k actions.KeyInfo, mods int64) string {
	if mods&(modCtrl|modMeta) == 0 || mods&modAlt != 0 {
		return ""
	}
	shift := mods&modShift != 0
	switch strings.ToLower(k.Code) {
	case "keya":
		return "selectAll"
	case "keyc":
		return "copy"
	case "keyx":
		return "cut"
	case "keyv":
		return "paste"
	case "keyz":
		if shift {
			return "redo"
		}
		return "undo"
	case "keyy":
		return "redo"
	}
	return ""
}

// navigate loads url in the tab. A URL the browser cannot load (an unknown
// host, a refused connection) is an error naming the browser's net::ERR_ code.
func (d *Display) navigate(ctx context.Context, url string) error {
	if url == "" {
		return fmt.Errorf("%w: no URL", actions.ErrInvalid)
	}
	// Page.navigate answers when the response has arrived, which a slow
	// server can delay well beyond an input event's bound.
	res, err := callWithin(ctx, d, max(d.cfg.CommandTimeout, navigateTimeout), page.Navigate, page.NavigateParams{URL: url})
	if err != nil {
		return err
	}
	if res.ErrorText != "" {
		return fmt.Errorf("load %s: %s", url, res.ErrorText)
	}
	return nil
}

// navigateTimeout bounds Page.navigate.
const navigateTimeout = 30 * time.Second

// history goes delta steps through the tab's history.
func (d *Display) history(ctx context.Context, delta int64) error {
	h, err := call(ctx, d, page.GetNavigationHistory, cdp.Empty{})
	if err != nil {
		return err
	}
	i := h.CurrentIndex + delta
	if i < 0 || i >= int64(len(h.Entries)) {
		if delta < 0 {
			return errors.New("there is no previous page in this tab's history")
		}
		return errors.New("there is no next page in this tab's history")
	}
	_, err = call(ctx, d, page.NavigateToHistoryEntry, page.NavigateToHistoryEntryParams{EntryID: h.Entries[i].ID})
	return err
}
