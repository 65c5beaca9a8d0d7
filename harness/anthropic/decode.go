package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/spotter-harness/spotter/actions"
)

// PixelsPerScrollClick is how far one click of scroll_amount scrolls, in
// pixels of the image the model was sent: the 53 px Chromium on Linux
// scrolls per wheel notch (its kWheelScrollAmount, the value GTK uses too).
// Like every distance a model gives, it is mapped to CSS pixels by the
// image's scale (screen.Frame.Map): a click is one notch only when the
// image has the viewport's CSS size. An Anthropic client is sent a smaller
// image whenever the viewport is larger than its size rule lets through
// (screen.RuleFor: a 1920x1080 viewport is sent at 1456x819) or it asks for
// one (an executor session's display.image); there a click scrolls
// 53 x 1920/1456 = 70 CSS px, 1.3 notches: the distance the model sees on
// its image.
const PixelsPerScrollClick = 53

// MaxScrollClicks bounds scroll_amount.
const MaxScrollClicks = 100

// MaxDuration bounds the duration of hold_key and wait, as Anthropic's
// reference implementation does.
const MaxDuration = 100 * time.Second

// DefaultWait is how long a wait without a duration waits.
const DefaultWait = time.Second

// actionSets lists the actions of each tool version.
var actionSets = map[ToolVersion][]string{
	Computer20241022: v1Actions,
	Computer20250124: v2Actions,
	Computer20251124: append(slices.Clip(v2Actions), "zoom"),
}

var (
	v1Actions = []string{"key", "type", "mouse_move", "left_click", "left_click_drag", "right_click",
		"middle_click", "double_click", "screenshot", "cursor_position"}
	v2Actions = append(slices.Clip(v1Actions), "left_mouse_down", "left_mouse_up", "scroll", "hold_key",
		"wait", "triple_click")
)

// A Decoder turns the input of computer tool calls into canonical actions in
// the sent image's pixels. The zero Decoder is not usable: set Version.
type Decoder struct {
	Version ToolVersion
	// NoZoom refuses zoom even in computer_20251124, for a tool declared
	// without enable_zoom.
	NoZoom bool
	// Cursor is the pointer position in image pixels, if known.
	// computer_20241022's left_click_drag starts there.
	Cursor *actions.Point
}

// Decode decodes the input object of one computer tool_use block, such as
// {"action":"left_click","coordinate":[512,300],"text":"shift"}. Most
// actions decode to one canonical action; "key" decodes to one Keypress per
// space-separated chord, as xdotool reads "ctrl+a BackSpace".
//
// The fields, by action (coordinates are [x, y] image pixels):
//
//	key              text: xdotool chords, "ctrl+s" or "ctrl+a BackSpace"
//	type             text
//	mouse_move       coordinate
//	left_click, right_click, middle_click, double_click, triple_click
//	                 coordinate? (absent: at the cursor; 20241022 always),
//	                 text? (modifiers held: "shift", "ctrl+alt")
//	left_mouse_down, left_mouse_up   coordinate?, text?
//	left_click_drag  coordinate (the end), start_coordinate? (absent: the
//	                 cursor, which must be known; 20241022 always)
//	scroll           scroll_direction (up, down, left or right),
//	                 scroll_amount (clicks, 1..MaxScrollClicks),
//	                 coordinate?, text?
//	hold_key         text (one chord), duration (seconds, > 0)
//	wait             duration? (seconds; absent: DefaultWait)
//	screenshot, cursor_position
//	zoom             region: [x1, y1, x2, y2], x1 < x2, y1 < y2
//
// An action outside the Version's set is an error, but optional fields are
// read leniently: a coordinate on a 20241022 click is used, and unknown
// fields are ignored. Every error wraps actions.ErrInvalid and names the
// action and field. Decode checks shape, not bounds: whether a point lies
// on the screenshot is for package screen to say.
func (d Decoder) Decode(input json.RawMessage) ([]actions.Action, error) {
	if err := d.Version.check(); err != nil {
		return nil, fmt.Errorf("%w: %v", actions.ErrInvalid, err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(input, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("%w: the input must be a JSON object with an \"action\"", actions.ErrInvalid)
	}
	f := fields(obj)
	name, ok, err := f.str("action")
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %v", actions.ErrInvalid, err)
	case !ok:
		return nil, fmt.Errorf("%w: missing \"action\" (want one of %s)", actions.ErrInvalid, strings.Join(actionSets[d.Version], ", "))
	case !slices.Contains(actionSets[d.Version], name) || name == "zoom" && d.NoZoom:
		return nil, fmt.Errorf("%w: unknown action %q for %s (want one of %s)", actions.ErrInvalid, clip(name), d.Version, strings.Join(d.actionNames(), ", "))
	}
	as, err := d.decode(name, f)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", actions.ErrInvalid, name, err)
	}
	return as, nil
}

func (d Decoder) actionNames() []string {
	if d.NoZoom {
		return slices.DeleteFunc(slices.Clone(actionSets[d.Version]), func(s string) bool { return s == "zoom" })
	}
	return actionSets[d.Version]
}

func (d Decoder) decode(name string, f fields) ([]actions.Action, error) {
	one := func(a actions.Action, err error) ([]actions.Action, error) {
		if err != nil {
			return nil, err
		}
		return []actions.Action{a}, nil
	}
	switch name {
	case "screenshot":
		return one(actions.Action{Kind: actions.Screenshot}, nil)
	case "cursor_position":
		return one(actions.Action{Kind: actions.CursorPosition}, nil)
	case "mouse_move":
		return one(pointer(f, actions.Move, actions.Left, true))
	case "left_click":
		return one(pointer(f, actions.Click, actions.Left, false))
	case "right_click":
		return one(pointer(f, actions.Click, actions.Right, false))
	case "middle_click":
		return one(pointer(f, actions.Click, actions.Middle, false))
	case "double_click":
		return one(pointer(f, actions.DoubleClick, actions.Left, false))
	case "triple_click":
		return one(pointer(f, actions.TripleClick, actions.Left, false))
	case "left_mouse_down":
		return one(pointer(f, actions.MouseDown, actions.Left, false))
	case "left_mouse_up":
		return one(pointer(f, actions.MouseUp, actions.Left, false))
	case "left_click_drag":
		return one(d.drag(f))
	case "scroll":
		return one(scroll(f))
	case "key":
		return keys(f)
	case "type":
		text, ok, err := f.str("text")
		switch {
		case err != nil:
			return nil, err
		case !ok || text == "":
			return nil, errors.New(`"text" is required: the text to type`)
		}
		return one(actions.Action{Kind: actions.Type, Text: text}, nil)
	case "hold_key":
		return one(holdKey(f))
	case "wait":
		dur, ok, err := f.duration()
		switch {
		case err != nil:
			return nil, err
		case !ok:
			dur = DefaultWait
		}
		return one(actions.Action{Kind: actions.Wait, Duration: dur}, nil)
	case "zoom":
		return one(zoom(f))
	}
	return nil, fmt.Errorf("unknown action") // unreachable: Decode checked the name
}

// pointer decodes an action at an optional (or, if need, required)
// coordinate with optional modifiers in text.
func pointer(f fields, k actions.Kind, b actions.Button, need bool) (actions.Action, error) {
	a := actions.Action{Kind: k, Button: b}
	at, ok, err := f.point("coordinate")
	switch {
	case err != nil:
		return a, err
	case !ok && need:
		return a, errors.New(`"coordinate" is required: [x, y] in screenshot pixels`)
	case ok:
		a.At, a.HasAt = at, true
	}
	a.Modifiers, err = modifiers(f)
	return a, err
}

func (d Decoder) drag(f fields) (actions.Action, error) {
	end, ok, err := f.point("coordinate")
	switch {
	case err != nil:
		return actions.Action{}, err
	case !ok:
		return actions.Action{}, errors.New(`"coordinate" is required: where the drag ends, [x, y]`)
	}
	start, ok, err := f.point("start_coordinate")
	switch {
	case err != nil:
		return actions.Action{}, err
	case !ok && d.Cursor == nil:
		if d.Version == Computer20241022 {
			return actions.Action{}, errors.New("the drag starts at the cursor, whose position is unknown: move the mouse to the start with mouse_move first")
		}
		return actions.Action{}, errors.New(`"start_coordinate" is required: where the drag starts, [x, y]`)
	case !ok:
		start = *d.Cursor
	}
	mods, err := modifiers(f)
	if err != nil {
		return actions.Action{}, err
	}
	return actions.Action{Kind: actions.Drag, Path: []actions.Point{start, end}, Modifiers: mods}, nil
}

func scroll(f fields) (actions.Action, error) {
	a, err := pointer(f, actions.Scroll, actions.Left, false)
	if err != nil {
		return a, err
	}
	dir, ok, err := f.str("scroll_direction")
	switch {
	case err != nil:
		return a, err
	case !ok:
		return a, errors.New(`"scroll_direction" is required: up, down, left or right`)
	}
	n, ok, err := f.num("scroll_amount")
	switch {
	case err != nil:
		return a, err
	case !ok:
		return a, errors.New(`"scroll_amount" is required: a number of wheel clicks`)
	case n != math.Trunc(n) || n < 1 || n > MaxScrollClicks:
		return a, fmt.Errorf(`"scroll_amount" %g must be a whole number of clicks from 1 to %d`, n, MaxScrollClicks)
	}
	px := n * PixelsPerScrollClick
	switch dir {
	case "up":
		a.DeltaY = -px
	case "down":
		a.DeltaY = px
	case "left":
		a.DeltaX = -px
	case "right":
		a.DeltaX = px
	default:
		return a, fmt.Errorf(`"scroll_direction" %q must be up, down, left or right`, clip(dir))
	}
	return a, nil
}

// keys decodes xdotool's key argument: chords separated by spaces.
func keys(f fields) ([]actions.Action, error) {
	text, ok, err := f.str("text")
	switch {
	case err != nil:
		return nil, err
	case !ok || strings.TrimSpace(text) == "":
		return nil, errors.New(`"text" is required: the key or chord to press, such as "Return" or "ctrl+s"`)
	}
	var as []actions.Action
	for _, s := range strings.Fields(text) {
		c, err := actions.ParseChord(s)
		if err != nil {
			return nil, fmt.Errorf("text: %w", err)
		}
		as = append(as, actions.Action{Kind: actions.Keypress, Keys: c})
	}
	return as, nil
}

func holdKey(f fields) (actions.Action, error) {
	text, ok, err := f.str("text")
	switch {
	case err != nil:
		return actions.Action{}, err
	case !ok || strings.TrimSpace(text) == "":
		return actions.Action{}, errors.New(`"text" is required: the key or chord to hold`)
	}
	c, err := actions.ChordOf(strings.Fields(text))
	if err != nil {
		return actions.Action{}, fmt.Errorf("text: %w", err)
	}
	dur, ok, err := f.duration()
	switch {
	case err != nil:
		return actions.Action{}, err
	case !ok || dur == 0:
		return actions.Action{}, errors.New(`"duration" is required: seconds to hold the keys, more than 0`)
	}
	return actions.Action{Kind: actions.HoldKey, Keys: c, Duration: dur}, nil
}

func zoom(f fields) (actions.Action, error) {
	raw, ok := f.get("region")
	if !ok {
		return actions.Action{}, errors.New(`"region" is required: [x1, y1, x2, y2] in screenshot pixels`)
	}
	v, err := numbers(raw, 4)
	if err != nil {
		return actions.Action{}, fmt.Errorf(`"region" must be [x1, y1, x2, y2]: %v`, err)
	}
	r := actions.Rect{Min: actions.Pt(v[0], v[1]), Max: actions.Pt(v[2], v[3])}
	if r.Empty() {
		return actions.Action{}, fmt.Errorf(`"region" %v is empty: want x1 < x2 and y1 < y2`, v)
	}
	return actions.Action{Kind: actions.Zoom, Region: r}, nil
}

// modifiers reads the keys held during a pointer action from "text", in
// xdotool's spelling: "shift", "ctrl+shift" or "ctrl shift".
func modifiers(f fields) (actions.Chord, error) {
	text, ok, err := f.str("text")
	if err != nil || !ok || strings.TrimSpace(text) == "" {
		return nil, err
	}
	c, err := actions.ChordOf(strings.Fields(text))
	if err != nil {
		return nil, fmt.Errorf("text (modifier keys held during the action): %w", err)
	}
	for _, k := range c {
		if !k.IsModifier() {
			return nil, fmt.Errorf("text %q: %s is not a modifier key (want shift, ctrl, alt or super)", clip(text), k)
		}
	}
	return c, nil
}

// fields is a tool input object. A JSON null counts as an absent field.
type fields map[string]json.RawMessage

func (f fields) get(name string) (json.RawMessage, bool) {
	raw, ok := f[name]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, false
	}
	return raw, true
}

func (f fields) str(name string) (string, bool, error) {
	raw, ok := f.get(name)
	if !ok {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false, fmt.Errorf("%q must be a string, got %s", name, clip(string(raw)))
	}
	return s, true, nil
}

func (f fields) num(name string) (float64, bool, error) {
	raw, ok := f.get(name)
	if !ok {
		return 0, false, nil
	}
	v, err := number(raw)
	if err != nil {
		return 0, false, fmt.Errorf("%q: %v", name, err)
	}
	return v, true, nil
}

// point reads [x, y]. A string holding that array ("[10, 20]"), as some
// models write it, is accepted too.
func (f fields) point(name string) (actions.Point, bool, error) {
	raw, ok := f.get(name)
	if !ok {
		return actions.Point{}, false, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = json.RawMessage(s)
	}
	v, err := numbers(raw, 2)
	if err != nil {
		return actions.Point{}, false, fmt.Errorf("%q must be [x, y] in screenshot pixels: %v", name, err)
	}
	return actions.Pt(v[0], v[1]), true, nil
}

// duration reads "duration" in seconds, from 0 to MaxDuration.
func (f fields) duration() (time.Duration, bool, error) {
	s, ok, err := f.num("duration")
	switch {
	case err != nil || !ok:
		return 0, ok, err
	case s < 0 || s > MaxDuration.Seconds():
		return 0, false, fmt.Errorf(`"duration" %g must be from 0 to %g seconds`, s, MaxDuration.Seconds())
	}
	return time.Duration(s * float64(time.Second)), true, nil
}

func number(raw json.RawMessage) (float64, error) {
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, fmt.Errorf("want a number, got %s", clip(string(raw)))
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("want a finite number, got %s", clip(string(raw)))
	}
	return v, nil
}

// numbers reads an array of exactly n numbers.
func numbers(raw json.RawMessage, n int) ([]float64, error) {
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, fmt.Errorf("got %s", clip(string(raw)))
	}
	if len(elems) != n {
		return nil, fmt.Errorf("got %d numbers, want %d", len(elems), n)
	}
	v := make([]float64, n)
	for i, e := range elems {
		x, err := number(e)
		if err != nil {
			return nil, err
		}
		v[i] = x
	}
	return v, nil
}

// clip shortens s for an error message that goes back to the model.
func clip(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	r := []rune(s[:n])
	return string(r[:len(r)-1]) + "…"
}

// pointerAfter returns where as leave the pointer, if they move it to a
// known point.
func pointerAfter(as []actions.Action) *actions.Point {
	var end *actions.Point
	for _, a := range as {
		switch {
		case !a.Kind.IsPointer():
		case a.Kind == actions.Drag && len(a.Path) > 0:
			p := a.Path[len(a.Path)-1]
			end = &p
		case a.HasAt:
			p := a.At
			end = &p
		}
	}
	return end
}
