package gemini

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/spotter-harness/spotter/actions"
)

// FunctionSet names a family of Gemini's predefined computer-use functions.
type FunctionSet uint8

const (
	// FunctionsAuto picks the set from the model name (FunctionSetFor).
	FunctionsAuto FunctionSet = iota
	// FunctionsLegacy is the set of Gemini 2.5 Computer Use and Gemini 3
	// Flash: click_at, type_text_at, scroll_document, key_combination, ...
	FunctionsLegacy
	// Functions35 is the set of Gemini 3.5: click, type, hotkey, scroll, ...
	Functions35
)

func (s FunctionSet) String() string {
	switch s {
	case FunctionsAuto:
		return "auto"
	case FunctionsLegacy:
		return "legacy"
	case Functions35:
		return "3.5"
	}
	return fmt.Sprintf("FunctionSet(%d)", uint8(s))
}

var legacyNames = []string{
	"open_web_browser", "click_at", "hover_at", "type_text_at", "scroll_document", "scroll_at",
	"wait_5_seconds", "go_back", "go_forward", "search", "navigate", "key_combination", "drag_and_drop",
}

var names35 = []string{
	"click", "double_click", "triple_click", "middle_click", "right_click", "mouse_down", "mouse_up",
	"move", "type", "drag_and_drop", "wait", "press_key", "key_down", "key_up", "hotkey",
	"take_screenshot", "scroll", "go_back", "go_forward", "navigate",
}

// unsupported are predefined functions Spotter cannot perform. They are
// always excluded from the tool declaration.
var unsupported = map[string]string{
	"key_down": "keys cannot stay held between calls here; use hotkey with the whole chord (keys: [\"Shift\", \"a\"]) or press_key",
	"key_up":   "keys cannot stay held between calls here; use hotkey with the whole chord (keys: [\"Shift\", \"a\"]) or press_key",
}

// Names returns the predefined function names of s, in the order Gemini's
// documentation lists them, including the ones Spotter always excludes.
func (s FunctionSet) Names() []string {
	switch s {
	case FunctionsLegacy:
		return slices.Clone(legacyNames)
	case Functions35:
		return slices.Clone(names35)
	}
	return nil
}

// modelSets maps model-name prefixes to their function set; the longest
// matching prefix wins.
var modelSets = []struct {
	prefix string
	set    FunctionSet
}{
	{"gemini-2.5-", FunctionsLegacy},
	{"gemini-3-", FunctionsLegacy},
	{"gemini-3.0-", FunctionsLegacy},
	{"gemini-3.5-", Functions35},
}

// FunctionSetFor returns the predefined function set that model uses. A
// "models/" prefix is ignored. Models not in the table (newer ones) get
// Functions35; set Config.Functions to override.
func FunctionSetFor(model string) FunctionSet {
	model = strings.TrimPrefix(model, "models/")
	best, set := -1, Functions35
	for _, m := range modelSets {
		if strings.HasPrefix(model, m.prefix) && len(m.prefix) > best {
			best, set = len(m.prefix), m.set
		}
	}
	return set
}

// Defaults of the decoder.
const (
	// DefaultMagnitude is the scroll distance, in grid units, when a scroll
	// gives no magnitude; scroll_document always uses it.
	DefaultMagnitude = 800
	// DefaultWait is how long the 3.5 set's wait waits without seconds.
	DefaultWait = 5 * time.Second
	// DefaultSearchURL is where the legacy search function navigates.
	DefaultSearchURL = "https://www.google.com/"
	// maxWait bounds wait's seconds so the conversion cannot overflow;
	// actions.Action.Validate applies the real limit.
	maxWait = time.Hour
)

// gridCentre is the middle of the 1000x1000 grid, where scroll_document
// scrolls.
var gridCentre = actions.Pt(500, 500)

// DecodeCall decodes one predefined function call of set into canonical
// actions in screen.Grid1000 coordinates. Arguments it does not know (such
// as safety_decision and the 3.5 set's intent) are ignored; a missing or
// mistyped argument, an unknown function or one Spotter cannot perform is an
// error wrapping actions.ErrInvalid, written for the model to read. The
// legacy search function navigates to DefaultSearchURL.
func DecodeCall(set FunctionSet, name string, args map[string]any) ([]actions.Action, error) {
	return decodeCall(set, name, args, DefaultSearchURL)
}

func decodeCall(set FunctionSet, name string, args map[string]any, searchURL string) ([]actions.Action, error) {
	if set == FunctionsAuto {
		return nil, fmt.Errorf("%w: %s: no function set chosen", actions.ErrInvalid, name)
	}
	if !slices.Contains(set.Names(), name) {
		return nil, fmt.Errorf("%w: unknown function %q; the %s functions are %s", actions.ErrInvalid, name, set, strings.Join(supportedNames(set), ", "))
	}
	if why, ok := unsupported[name]; ok {
		return nil, fmt.Errorf("%w: %s is not supported: %s", actions.ErrInvalid, name, why)
	}
	a := argReader{fn: name, args: args}
	if set == FunctionsLegacy {
		return a.legacy(searchURL)
	}
	return a.v35()
}

// supportedNames returns the names of set that Spotter performs.
func supportedNames(set FunctionSet) []string {
	return slices.DeleteFunc(set.Names(), func(n string) bool {
		_, ok := unsupported[n]
		return ok
	})
}

func (a argReader) legacy(searchURL string) ([]actions.Action, error) {
	switch a.fn {
	case "open_web_browser":
		// The browser is already open: show the model where it is.
		return one(actions.Action{Kind: actions.Screenshot})
	case "click_at":
		return a.pointer(actions.Click, actions.Left)
	case "hover_at":
		return a.pointer(actions.Move, actions.Left)
	case "type_text_at":
		return a.typeTextAt()
	case "scroll_document":
		dir, err := a.direction()
		if err != nil {
			return nil, err
		}
		return one(scroll(gridCentre, dir, DefaultMagnitude))
	case "scroll_at":
		return a.scroll()
	case "wait_5_seconds":
		return one(actions.Action{Kind: actions.Wait, Duration: 5 * time.Second})
	case "go_back":
		return one(actions.Action{Kind: actions.GoBack})
	case "go_forward":
		return one(actions.Action{Kind: actions.GoForward})
	case "search":
		return one(actions.Action{Kind: actions.Navigate, URL: searchURL})
	case "navigate":
		return a.navigate()
	case "key_combination":
		return a.keys("keys")
	case "drag_and_drop":
		return a.drag()
	}
	return nil, fmt.Errorf("%w: %s: not implemented", actions.ErrInvalid, a.fn)
}

func (a argReader) v35() ([]actions.Action, error) {
	switch a.fn {
	case "click":
		return a.pointer(actions.Click, actions.Left)
	case "double_click":
		return a.pointer(actions.DoubleClick, actions.Left)
	case "triple_click":
		return a.pointer(actions.TripleClick, actions.Left)
	case "middle_click":
		return a.pointer(actions.Click, actions.Middle)
	case "right_click":
		return a.pointer(actions.Click, actions.Right)
	case "mouse_down":
		return a.press(actions.MouseDown)
	case "mouse_up":
		return a.press(actions.MouseUp)
	case "move":
		return a.pointer(actions.Move, actions.Left)
	case "type":
		text, err := a.str("text")
		if err != nil {
			return nil, err
		}
		enter, err := a.boolean("press_enter", false)
		if err != nil {
			return nil, err
		}
		return typing(text, enter)
	case "drag_and_drop":
		return a.drag()
	case "wait":
		d := DefaultWait
		if s, ok, err := a.optNum("seconds"); err != nil {
			return nil, err
		} else if ok {
			if s < 0 || s > maxWait.Seconds() {
				return nil, fmt.Errorf("%w: %s: seconds is %v, want 0 to %v", actions.ErrInvalid, a.fn, s, maxWait.Seconds())
			}
			d = time.Duration(s * float64(time.Second))
		}
		return one(actions.Action{Kind: actions.Wait, Duration: d})
	case "press_key":
		return a.keys("key")
	case "hotkey":
		return a.keys("keys")
	case "take_screenshot":
		return one(actions.Action{Kind: actions.Screenshot})
	case "scroll":
		return a.scroll()
	case "go_back":
		return one(actions.Action{Kind: actions.GoBack})
	case "go_forward":
		return one(actions.Action{Kind: actions.GoForward})
	case "navigate":
		return a.navigate()
	}
	return nil, fmt.Errorf("%w: %s: not implemented", actions.ErrInvalid, a.fn)
}

func one(a actions.Action) ([]actions.Action, error) { return []actions.Action{a}, nil }

// pointer decodes a call with required x and y.
func (a argReader) pointer(k actions.Kind, b actions.Button) ([]actions.Action, error) {
	at, err := a.point("x", "y")
	if err != nil {
		return nil, err
	}
	return one(actions.Action{Kind: k, At: at, HasAt: true, Button: b})
}

// press decodes mouse_down and mouse_up: x and y together or neither, and
// an optional button.
func (a argReader) press(k actions.Kind) ([]actions.Action, error) {
	act := actions.Action{Kind: k}
	_, hasX := a.args["x"]
	_, hasY := a.args["y"]
	if hasX || hasY {
		at, err := a.point("x", "y")
		if err != nil {
			return nil, err
		}
		act.At, act.HasAt = at, true
	}
	if s, ok, err := a.optStr("button"); err != nil {
		return nil, err
	} else if ok {
		b, err := actions.ParseButton(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a.fn, err)
		}
		act.Button = b
	}
	return one(act)
}

// typeTextAt decodes the legacy type_text_at into a batch: click the field,
// clear it (select all, Delete) unless clear_before_typing is false,
// type, and press Enter if press_enter is true.
func (a argReader) typeTextAt() ([]actions.Action, error) {
	at, err := a.point("x", "y")
	if err != nil {
		return nil, err
	}
	text, err := a.str("text")
	if err != nil {
		return nil, err
	}
	enter, err := a.boolean("press_enter", false)
	if err != nil {
		return nil, err
	}
	clear, err := a.boolean("clear_before_typing", true)
	if err != nil {
		return nil, err
	}
	batch := []actions.Action{{Kind: actions.Click, At: at, HasAt: true}}
	if clear {
		for _, k := range []string{"Control+a", "Delete"} {
			c, err := actions.ParseChord(k)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", a.fn, err)
			}
			batch = append(batch, actions.Action{Kind: actions.Keypress, Keys: c})
		}
	}
	rest, err := typing(text, enter)
	if err != nil {
		return nil, err
	}
	return append(batch, rest...), nil
}

// typing types text and then presses Enter if enter is set.
func typing(text string, enter bool) ([]actions.Action, error) {
	batch := []actions.Action{{Kind: actions.Type, Text: text}}
	if enter {
		c, err := actions.ParseChord("Enter")
		if err != nil {
			return nil, err
		}
		batch = append(batch, actions.Action{Kind: actions.Keypress, Keys: c})
	}
	return batch, nil
}

// scroll decodes scroll_at and scroll: x, y, direction, magnitude?.
func (a argReader) scroll() ([]actions.Action, error) {
	at, err := a.point("x", "y")
	if err != nil {
		return nil, err
	}
	dir, err := a.direction()
	if err != nil {
		return nil, err
	}
	mag := float64(DefaultMagnitude)
	if m, ok, err := a.optNum("magnitude"); err != nil {
		return nil, err
	} else if ok {
		if m < 0 {
			return nil, fmt.Errorf("%w: %s: magnitude is %v, want a positive distance (the direction gives the sign)", actions.ErrInvalid, a.fn, m)
		}
		mag = m
	}
	return one(scroll(at, dir, mag))
}

// scroll returns a wheel action at at moving mag grid units towards dir.
func scroll(at actions.Point, dir string, mag float64) actions.Action {
	act := actions.Action{Kind: actions.Scroll, At: at, HasAt: true}
	switch dir {
	case "up":
		act.DeltaY = -mag
	case "down":
		act.DeltaY = mag
	case "left":
		act.DeltaX = -mag
	case "right":
		act.DeltaX = mag
	}
	return act
}

func (a argReader) direction() (string, error) {
	d, err := a.str("direction")
	if err != nil {
		return "", err
	}
	switch d = strings.ToLower(d); d {
	case "up", "down", "left", "right":
		return d, nil
	}
	return "", fmt.Errorf("%w: %s: direction is %q, want up, down, left or right", actions.ErrInvalid, a.fn, d)
}

func (a argReader) navigate() ([]actions.Action, error) {
	u, err := a.str("url")
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(u) == "" {
		return nil, fmt.Errorf("%w: %s: url is empty", actions.ErrInvalid, a.fn)
	}
	return one(actions.Action{Kind: actions.Navigate, URL: u})
}

func (a argReader) drag() ([]actions.Action, error) {
	from, err := a.point("x", "y")
	if err != nil {
		return nil, err
	}
	to, err := a.point("destination_x", "destination_y")
	if err != nil {
		return nil, err
	}
	return one(actions.Action{Kind: actions.Drag, Path: []actions.Point{from, to}})
}

// keys decodes one chord from the argument name: a '+'-joined string
// ("Control+C") or an array of key names (["Control", "C"]).
func (a argReader) keys(name string) ([]actions.Action, error) {
	v, ok := a.args[name]
	if !ok || v == nil {
		return nil, fmt.Errorf("%w: %s: argument %q is missing", actions.ErrInvalid, a.fn, name)
	}
	var c actions.Chord
	var err error
	switch v := v.(type) {
	case string:
		c, err = actions.ParseChord(v)
	case []any:
		ks := make([]string, len(v))
		for i, k := range v {
			s, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("%w: %s: %s[%d] is %s, want a key name", actions.ErrInvalid, a.fn, name, i, typeName(k))
			}
			ks[i] = s
		}
		c, err = actions.ChordOf(ks)
	case []string:
		c, err = actions.ChordOf(v)
	default:
		return nil, fmt.Errorf("%w: %s: %s is %s, want a key name or an array of key names", actions.ErrInvalid, a.fn, name, typeName(v))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", a.fn, err)
	}
	if len(c) == 0 {
		return nil, fmt.Errorf("%w: %s: %s names no key", actions.ErrInvalid, a.fn, name)
	}
	return one(actions.Action{Kind: actions.Keypress, Keys: c})
}

// argReader reads the arguments of one function call, naming the function
// in its errors.
type argReader struct {
	fn   string
	args map[string]any
}

func (a argReader) point(xName, yName string) (actions.Point, error) {
	x, err := a.num(xName)
	if err != nil {
		return actions.Point{}, err
	}
	y, err := a.num(yName)
	if err != nil {
		return actions.Point{}, err
	}
	return actions.Pt(x, y), nil
}

func (a argReader) num(name string) (float64, error) {
	v, ok, err := a.optNum(name)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("%w: %s: argument %q is missing", actions.ErrInvalid, a.fn, name)
	}
	return v, nil
}

// optNum returns the number name, whether it was given, and an error if
// it is not a finite number.
func (a argReader) optNum(name string) (float64, bool, error) {
	v, ok := a.args[name]
	if !ok || v == nil {
		return 0, false, nil
	}
	var f float64
	switch v := v.(type) {
	case float64:
		f = v
	case float32:
		f = float64(v)
	case int:
		f = float64(v)
	case int32:
		f = float64(v)
	case int64:
		f = float64(v)
	case json.Number:
		var err error
		if f, err = v.Float64(); err != nil {
			return 0, false, fmt.Errorf("%w: %s: %s is %q, want a number", actions.ErrInvalid, a.fn, name, v.String())
		}
	default:
		return 0, false, fmt.Errorf("%w: %s: %s is %s, want a number", actions.ErrInvalid, a.fn, name, typeName(v))
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false, fmt.Errorf("%w: %s: %s is %v, want a finite number", actions.ErrInvalid, a.fn, name, f)
	}
	return f, true, nil
}

func (a argReader) str(name string) (string, error) {
	s, ok, err := a.optStr(name)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("%w: %s: argument %q is missing", actions.ErrInvalid, a.fn, name)
	}
	return s, nil
}

func (a argReader) optStr(name string) (string, bool, error) {
	v, ok := a.args[name]
	if !ok || v == nil {
		return "", false, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", false, fmt.Errorf("%w: %s: %s is %s, want a string", actions.ErrInvalid, a.fn, name, typeName(v))
	}
	return s, true, nil
}

func (a argReader) boolean(name string, def bool) (bool, error) {
	v, ok := a.args[name]
	if !ok || v == nil {
		return def, nil
	}
	switch v := v.(type) {
	case bool:
		return v, nil
	case string:
		// Models sometimes quote booleans.
		switch strings.ToLower(v) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
	}
	return false, fmt.Errorf("%w: %s: %s is %s, want true or false", actions.ErrInvalid, a.fn, name, typeName(v))
}

// typeName names the JSON type of v for error messages.
func typeName(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		return fmt.Sprintf("the string %q", v)
	case bool:
		return fmt.Sprintf("the boolean %v", v)
	case float64, float32, int, int32, int64, json.Number:
		return fmt.Sprintf("the number %v", v)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}
