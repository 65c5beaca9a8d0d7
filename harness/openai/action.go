package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/spotter-harness/spotter/actions"
)

// DefaultWait is how long a "wait" action waits: OpenAI's wait carries no
// duration. The Spotter extension field "duration_ms" overrides it.
const DefaultWait = time.Second

// OpenAI's computer action types, in the order its documentation lists them.
var openAITypes = []string{"click", "double_click", "drag", "keypress", "move", "scroll", "type", "wait", "screenshot"}

// Spotter's extensions: canonical kinds that OpenAI's computer tool lacks,
// written in the same style so that scripts and fakes can use them.
var extensionTypes = []string{"triple_click", "mouse_down", "mouse_up", "hold_key", "zoom", "navigate", "go_back", "go_forward", "cursor_position"}

// Spotter's browser extensions: tabs, dialogs and file choosers. They are
// decoded like the other extensions (scripts and fakes use them), but no
// function schema declares them yet, so error messages do not offer them.
var browserTypes = []string{"list_tabs", "switch_tab", "close_tab", "dialog", "upload"}

// DecodeAction decodes one OpenAI computer action object, e.g.
// {"type":"click","x":512,"y":320,"button":"left"}, into a canonical action
// in the sent image's pixel space (screen.Image).
//
// OpenAI's types and their fields:
//
//	click        x, y, button? (left|right|wheel|back|forward; default left), keys? (modifiers held)
//	double_click x, y, keys?
//	drag         path: [{x, y}, ...] (two or more points), keys?
//	keypress     keys: one chord, e.g. ["CTRL", "C"]
//	move         x, y, keys?
//	scroll       x, y, scroll_x?, scroll_y? (PIXEL distances at (x, y), at least one), keys?
//	type         text
//	wait         (no duration: DefaultWait; extension: duration_ms?)
//	screenshot
//
// Spotter extensions, for the canonical kinds OpenAI lacks:
//
//	triple_click    x, y, button?, keys?
//	mouse_down      x?, y? (both or neither: the cursor), button?, keys?
//	mouse_up        x?, y?, button?, keys?
//	hold_key        keys, duration_ms (> 0)
//	zoom            x1, y1, x2, y2 (a region of the sent image, x1 < x2, y1 < y2)
//	navigate        url
//	go_back, go_forward, cursor_position
//	list_tabs
//	switch_tab      tab (0-based, as list_tabs numbers the tabs)
//	close_tab       tab? (default 0)
//	dialog          accept (true: OK, false: Cancel), text? (a prompt's answer)
//	upload          files: ["name", ...] (paths the session's policy makes available)
//
// Unknown fields are ignored, so that new optional fields OpenAI adds do not
// break decoding, and a JSON null counts as an absent field. Every error
// wraps actions.ErrInvalid and says which type and field was wrong, e.g.
// `click: missing "x"`. DecodeAction checks only the shape of the action:
// bounds are checked against the screenshot by the loop.
func DecodeAction(raw json.RawMessage) (actions.Action, error) {
	obj, err := object(raw)
	if err != nil {
		return actions.Action{}, fmt.Errorf("%w: action %v", actions.ErrInvalid, err)
	}
	f := fields{obj: obj}
	typ, ok, err := f.str("type")
	if err != nil {
		return actions.Action{}, fmt.Errorf("%w: action %v", actions.ErrInvalid, err)
	}
	if !ok {
		return actions.Action{}, fmt.Errorf("%w: action: missing \"type\" (want one of %s)", actions.ErrInvalid, validTypes())
	}
	if !slices.Contains(openAITypes, typ) && !slices.Contains(extensionTypes, typ) && !slices.Contains(browserTypes, typ) {
		return actions.Action{}, fmt.Errorf("%w: unknown action type %s (want one of %s)", actions.ErrInvalid, typeName(typ), validTypes())
	}
	return decodeTyped(typ, obj)
}

// decodeTyped decodes the fields of an action object of a known type; a
// "type" field among them is ignored.
func decodeTyped(typ string, obj map[string]json.RawMessage) (actions.Action, error) {
	a, err := decode(&fields{typ: typ, obj: obj})
	if err != nil {
		return actions.Action{}, fmt.Errorf("%w: %s: %v", actions.ErrInvalid, typ, err)
	}
	return a, nil
}

// DecodeActions decodes the `actions` array of a GA computer_call: a batch
// to run in order. An empty batch is an error, and the index of a bad action
// is named: `actions[1]: click: missing "x"`.
func DecodeActions(raw json.RawMessage) ([]actions.Action, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return nil, fmt.Errorf("%w: actions must be a JSON array, got %s", actions.ErrInvalid, jsonType(raw))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("%w: actions: %v", actions.ErrInvalid, err)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%w: actions: empty batch", actions.ErrInvalid)
	}
	out := make([]actions.Action, 0, len(items))
	for i, item := range items {
		a, err := DecodeAction(item)
		if err != nil {
			return nil, fmt.Errorf("%w: actions[%d]: %s", actions.ErrInvalid, i, reason(err))
		}
		out = append(out, a)
	}
	return out, nil
}

// decode reads the fields of an action of type f.typ, which DecodeAction has
// checked, by the type's family: pointer, keyboard, screen or browser.
func decode(f *fields) (actions.Action, error) {
	switch f.typ {
	case "click", "double_click", "triple_click", "mouse_down", "mouse_up", "move", "drag", "scroll":
		return decodePointer(f)
	case "keypress", "hold_key", "type":
		return decodeKeyboard(f)
	case "wait", "zoom", "screenshot", "cursor_position":
		return decodeScreen(f)
	case "navigate", "go_back", "go_forward", "list_tabs", "switch_tab", "close_tab", "dialog", "upload":
		return decodeBrowser(f)
	}
	// unreachable: DecodeAction checked the type
	return actions.Action{}, fmt.Errorf("unknown action type")
}

// decodePointer decodes the mouse actions: clicks, button presses, moves,
// drags and scrolls.
func decodePointer(f *fields) (actions.Action, error) {
	var a actions.Action
	var err error
	switch f.typ {
	case "click":
		a.Kind = actions.Click
		err = f.pointer(&a, true, true)
	case "double_click":
		a.Kind = actions.DoubleClick
		err = f.pointer(&a, true, false)
	case "triple_click":
		a.Kind = actions.TripleClick
		err = f.pointer(&a, true, true)
	case "mouse_down", "mouse_up":
		a.Kind = actions.MouseDown
		if f.typ == "mouse_up" {
			a.Kind = actions.MouseUp
		}
		err = f.pointer(&a, false, true)
	case "move":
		a.Kind = actions.Move
		err = f.pointer(&a, true, false)
	case "drag":
		a.Kind = actions.Drag
		if a.Path, err = f.path("path"); err != nil {
			return a, err
		}
		a.Modifiers, err = f.modifiers()
	case "scroll":
		a.Kind = actions.Scroll
		err = f.scroll(&a)
	}
	return a, err
}

// scroll reads a scroll's point, modifiers and distances into a; at least
// one of "scroll_x" and "scroll_y" is required.
func (f *fields) scroll(a *actions.Action) error {
	if err := f.pointer(a, true, false); err != nil {
		return err
	}
	var okX, okY bool
	var err error
	if a.DeltaX, okX, err = f.num("scroll_x"); err != nil {
		return err
	}
	if a.DeltaY, okY, err = f.num("scroll_y"); err != nil {
		return err
	}
	if !okX && !okY {
		return fmt.Errorf(`missing "scroll_x" and "scroll_y"`)
	}
	return nil
}

// decodeKeyboard decodes the keyboard actions: key chords, held keys and
// typed text.
func decodeKeyboard(f *fields) (actions.Action, error) {
	var a actions.Action
	var err error
	var ok bool
	switch f.typ {
	case "keypress":
		a.Kind = actions.Keypress
		a.Keys, err = f.chord("keys")
	case "hold_key":
		a.Kind = actions.HoldKey
		if a.Keys, err = f.chord("keys"); err != nil {
			return a, err
		}
		a.Duration, ok, err = f.millis("duration_ms")
		if err == nil && !ok {
			err = fmt.Errorf(`missing "duration_ms"`)
		}
	case "type":
		a.Kind = actions.Type
		a.Text, ok, err = f.str("text")
		if err == nil && !ok {
			err = fmt.Errorf(`missing "text"`)
		}
	}
	return a, err
}

// decodeScreen decodes the actions that look at the screen or wait for it:
// wait, zoom, screenshot and cursor_position.
func decodeScreen(f *fields) (actions.Action, error) {
	var a actions.Action
	var err error
	switch f.typ {
	case "wait":
		a.Kind = actions.Wait
		var ok bool
		a.Duration, ok, err = f.millis("duration_ms")
		if !ok {
			a.Duration = DefaultWait
		}
	case "zoom":
		a.Kind = actions.Zoom
		a.Region, err = f.region()
	case "screenshot":
		a.Kind = actions.Screenshot
	case "cursor_position":
		a.Kind = actions.CursorPosition
	}
	return a, err
}

// decodeBrowser decodes the browser actions: navigation, tabs, dialogs and
// uploads.
func decodeBrowser(f *fields) (actions.Action, error) {
	var a actions.Action
	var err error
	var ok bool
	switch f.typ {
	case "navigate":
		a.Kind = actions.Navigate
		a.URL, ok, err = f.str("url")
		if err == nil && (!ok || a.URL == "") {
			err = fmt.Errorf(`missing "url"`)
		}
	case "go_back":
		a.Kind = actions.GoBack
	case "go_forward":
		a.Kind = actions.GoForward
	case "list_tabs":
		a.Kind = actions.ListTabs
	case "switch_tab", "close_tab":
		a.Kind = actions.SwitchTab
		if f.typ == "close_tab" {
			a.Kind = actions.CloseTab
		}
		a.Tab, ok, err = f.index("tab")
		if err == nil && !ok && a.Kind == actions.SwitchTab {
			err = fmt.Errorf(`missing "tab"`)
		}
	case "dialog":
		a.Kind = actions.Dialog
		v, ok := f.get("accept")
		if !ok {
			return a, fmt.Errorf(`missing "accept"`)
		}
		if err := json.Unmarshal(v, &a.Accept); err != nil {
			return a, fmt.Errorf(`"accept" must be a boolean, got %s`, jsonType(v))
		}
		a.Text, _, err = f.str("text")
	case "upload":
		a.Kind = actions.Upload
		a.Files, ok, err = f.strs("files")
		if err == nil && (!ok || len(a.Files) == 0) {
			err = fmt.Errorf(`missing "files"`)
		}
	}
	return a, err
}

// reason is the text of an error that wraps actions.ErrInvalid, without the
// sentinel's own words, so that a message names the sentinel only once.
func reason(err error) string {
	return strings.TrimPrefix(err.Error(), actions.ErrInvalid.Error()+": ")
}

// validTypes lists the accepted types for error messages.
func validTypes() string {
	return strings.Join(openAITypes, ", ") + "; Spotter extensions: " + strings.Join(extensionTypes, ", ")
}

// typeName quotes a type for an error message, shortened so that a model's
// runaway output does not flood the log.
func typeName(s string) string {
	const max = 40
	if len(s) > max {
		s = s[:max] + "..."
	}
	return fmt.Sprintf("%q", s)
}

// object parses raw as a JSON object.
func object(raw json.RawMessage) (map[string]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("must be a JSON object, got %s", jsonType(raw))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("is not valid JSON: %v", err)
	}
	return obj, nil
}

// jsonType names the JSON type of raw for error messages.
func jsonType(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch c := raw[0]; {
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || c >= '0' && c <= '9':
		return "a number"
	}
	return "invalid JSON"
}

// fields reads typed fields of one action object. A null field is absent.
type fields struct {
	typ string
	obj map[string]json.RawMessage
}

func (f *fields) get(name string) (json.RawMessage, bool) {
	v, ok := f.obj[name]
	if !ok || string(bytes.TrimSpace(v)) == "null" {
		return nil, false
	}
	return v, true
}

func (f *fields) num(name string) (float64, bool, error) {
	v, ok := f.get(name)
	if !ok {
		return 0, false, nil
	}
	n, err := number(v)
	if err != nil {
		return 0, true, fmt.Errorf("%q %v", name, err)
	}
	return n, true, nil
}

func number(v json.RawMessage) (float64, error) {
	var n float64
	if err := json.Unmarshal(v, &n); err != nil {
		if jsonType(v) == "a number" {
			return 0, fmt.Errorf("is out of range")
		}
		return 0, fmt.Errorf("must be a number, got %s", jsonType(v))
	}
	if math.IsInf(n, 0) || math.IsNaN(n) {
		return 0, fmt.Errorf("is out of range")
	}
	return n, nil
}

func (f *fields) needNum(name string) (float64, error) {
	n, ok, err := f.num(name)
	if err == nil && !ok {
		err = fmt.Errorf("missing %q", name)
	}
	return n, err
}

func (f *fields) str(name string) (string, bool, error) {
	v, ok := f.get(name)
	if !ok {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", true, fmt.Errorf("%q must be a string, got %s", name, jsonType(v))
	}
	return s, true, nil
}

func (f *fields) strs(name string) ([]string, bool, error) {
	v, ok := f.get(name)
	if !ok {
		return nil, false, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(v, &items); err != nil {
		return nil, true, fmt.Errorf("%q must be an array of strings, got %s", name, jsonType(v))
	}
	out := make([]string, len(items))
	for i, item := range items {
		if err := json.Unmarshal(item, &out[i]); err != nil {
			return nil, true, fmt.Errorf("%q[%d] must be a string, got %s", name, i, jsonType(item))
		}
	}
	return out, true, nil
}

// index reads a whole, non-negative number such as a tab's index.
func (f *fields) index(name string) (int, bool, error) {
	n, ok, err := f.num(name)
	if err != nil || !ok {
		return 0, ok, err
	}
	if n < 0 || n > 1e6 || n != math.Trunc(n) {
		return 0, true, fmt.Errorf("%q must be a whole number from 0, got %g", name, n)
	}
	return int(n), true, nil
}

// millis reads a duration in milliseconds; it must be positive.
func (f *fields) millis(name string) (time.Duration, bool, error) {
	ms, ok, err := f.num(name)
	if err != nil || !ok {
		return 0, ok, err
	}
	const maxMillis = float64(24 * time.Hour / time.Millisecond)
	if ms <= 0 || ms > maxMillis {
		return 0, true, fmt.Errorf("%q must be between 0 and %g milliseconds, got %g", name, maxMillis, ms)
	}
	return time.Duration(math.Round(ms * float64(time.Millisecond))), true, nil
}

// chord reads a required, non-empty key chord.
func (f *fields) chord(name string) (actions.Chord, error) {
	keys, ok, err := f.strs(name)
	if err != nil {
		return nil, err
	}
	if !ok || len(keys) == 0 {
		return nil, fmt.Errorf("missing %q", name)
	}
	c, err := actions.ChordOf(keys)
	if err != nil {
		return nil, fmt.Errorf("%q: %s", name, reason(err))
	}
	return c, nil
}

// modifiers reads the optional "keys" held during a pointer action. Each must
// be a modifier.
func (f *fields) modifiers() (actions.Chord, error) {
	keys, ok, err := f.strs("keys")
	if err != nil || !ok || len(keys) == 0 {
		return nil, err
	}
	c, err := actions.ChordOf(keys)
	if err != nil {
		return nil, fmt.Errorf(`"keys": %s`, reason(err))
	}
	for _, k := range c {
		if !k.IsModifier() {
			return nil, fmt.Errorf(`"keys": %q is not a modifier (want keys held during the action, such as "SHIFT" or "CTRL")`, string(k))
		}
	}
	return c, nil
}

// pointer reads x and y (required if needAt, else both or neither), the
// button if withButton, and the modifier keys.
func (f *fields) pointer(a *actions.Action, needAt, withButton bool) error {
	_, hasX := f.get("x")
	_, hasY := f.get("y")
	if needAt || hasX || hasY {
		x, err := f.needNum("x")
		if err != nil {
			return err
		}
		y, err := f.needNum("y")
		if err != nil {
			return err
		}
		a.At, a.HasAt = actions.Pt(x, y), true
	}
	if withButton {
		b, ok, err := f.str("button")
		if err != nil {
			return err
		}
		if ok {
			if a.Button, err = actions.ParseButton(b); err != nil {
				return fmt.Errorf(`"button": unknown button %s (want left, right, wheel, back or forward)`, typeName(b))
			}
		}
	}
	var err error
	a.Modifiers, err = f.modifiers()
	return err
}

// path reads a drag path of two or more {x, y} points.
func (f *fields) path(name string) ([]actions.Point, error) {
	v, ok := f.get(name)
	if !ok {
		return nil, fmt.Errorf("missing %q", name)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(v, &items); err != nil {
		return nil, fmt.Errorf("%q must be an array of {x, y} points, got %s", name, jsonType(v))
	}
	if len(items) < 2 {
		return nil, fmt.Errorf("%q needs at least 2 points, got %d", name, len(items))
	}
	pts := make([]actions.Point, len(items))
	for i, item := range items {
		obj, err := object(item)
		if err != nil {
			return nil, fmt.Errorf("%q[%d] %v", name, i, err)
		}
		p := fields{typ: f.typ, obj: obj}
		x, err := p.needNum("x")
		if err != nil {
			return nil, fmt.Errorf("%q[%d]: %v", name, i, err)
		}
		y, err := p.needNum("y")
		if err != nil {
			return nil, fmt.Errorf("%q[%d]: %v", name, i, err)
		}
		pts[i] = actions.Pt(x, y)
	}
	return pts, nil
}

// region reads a zoom region x1, y1, x2, y2.
func (f *fields) region() (actions.Rect, error) {
	var v [4]float64
	for i, name := range []string{"x1", "y1", "x2", "y2"} {
		n, err := f.needNum(name)
		if err != nil {
			return actions.Rect{}, err
		}
		v[i] = n
	}
	r := actions.Rect{Min: actions.Pt(v[0], v[1]), Max: actions.Pt(v[2], v[3])}
	if r.Empty() {
		return actions.Rect{}, fmt.Errorf("region %v is empty (want x1 < x2 and y1 < y2)", r)
	}
	return r, nil
}
