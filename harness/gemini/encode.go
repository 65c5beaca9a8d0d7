package gemini

import (
	"fmt"
	"reflect"
	"time"

	"github.com/spotter-harness/spotter/actions"
)

// EncodeCall is the inverse of DecodeCall for single actions: it writes a
// canonical action, in screen.Grid1000 coordinates, as the function call of
// set that performs it. Fake servers and scripts use it to write a model's
// turns from canonical actions. For every action a it accepts,
// DecodeCall(set, EncodeCall(set, a)) returns []actions.Action{a}.
//
// Actions the set cannot express exactly (modifiers held during a pointer
// action, HoldKey, Zoom, typing without a point in the legacy set, keys not
// in canonical form, ...) are an error wrapping actions.ErrInvalid.
func EncodeCall(set FunctionSet, a actions.Action) (name string, args map[string]any, err error) {
	switch set {
	case FunctionsLegacy:
		name, args = encodeLegacy(a)
	case Functions35:
		name, args = encode35(a)
	default:
		return "", nil, fmt.Errorf("%w: encode %v: no function set chosen", actions.ErrInvalid, a.Kind)
	}
	if args == nil {
		args = map[string]any{}
	}
	// The decoder is the definition: anything it would not give back
	// exactly (modifiers, a stray field, a key in another dialect) is not
	// expressible.
	if name != "" {
		got, err := DecodeCall(set, name, args)
		if err == nil && len(got) == 1 && reflect.DeepEqual(got[0], a) {
			return name, args, nil
		}
	}
	return "", nil, fmt.Errorf("%w: the %s functions cannot express this %v action", actions.ErrInvalid, set, a.Kind)
}

func encodeLegacy(a actions.Action) (string, map[string]any) {
	switch a.Kind {
	case actions.Screenshot:
		return "open_web_browser", nil
	case actions.Click:
		if a.HasAt && a.Button == actions.Left {
			return "click_at", xy(a.At)
		}
	case actions.Move:
		if a.HasAt {
			return "hover_at", xy(a.At)
		}
	case actions.Scroll:
		if m := scrollArgs(a); m != nil {
			return "scroll_at", m
		}
	case actions.Wait:
		if a.Duration == 5*time.Second {
			return "wait_5_seconds", nil
		}
	case actions.GoBack:
		return "go_back", nil
	case actions.GoForward:
		return "go_forward", nil
	case actions.Navigate:
		return "navigate", map[string]any{"url": a.URL}
	case actions.Keypress:
		if len(a.Keys) > 0 {
			return "key_combination", map[string]any{"keys": a.Keys.String()}
		}
	case actions.Drag:
		if m := dragArgs(a); m != nil {
			return "drag_and_drop", m
		}
	}
	return "", nil
}

func encode35(a actions.Action) (string, map[string]any) {
	switch a.Kind {
	case actions.Screenshot:
		return "take_screenshot", nil
	case actions.Click:
		if !a.HasAt {
			break
		}
		switch a.Button {
		case actions.Left:
			return "click", xy(a.At)
		case actions.Right:
			return "right_click", xy(a.At)
		case actions.Middle:
			return "middle_click", xy(a.At)
		}
	case actions.DoubleClick, actions.TripleClick, actions.Move:
		if a.HasAt && a.Button == actions.Left {
			return a.Kind.String(), xy(a.At)
		}
	case actions.MouseDown, actions.MouseUp:
		m := map[string]any{}
		if a.HasAt {
			m = xy(a.At)
		}
		if a.Button != actions.Left {
			m["button"] = a.Button.String()
		}
		return a.Kind.String(), m
	case actions.Type:
		return "type", map[string]any{"text": a.Text}
	case actions.Drag:
		if m := dragArgs(a); m != nil {
			return "drag_and_drop", m
		}
	case actions.Wait:
		if a.Duration >= 0 {
			return "wait", map[string]any{"seconds": a.Duration.Seconds()}
		}
	case actions.Keypress:
		switch len(a.Keys) {
		case 0:
		case 1:
			return "press_key", map[string]any{"key": string(a.Keys[0])}
		default:
			keys := make([]any, len(a.Keys))
			for i, k := range a.Keys {
				keys[i] = string(k)
			}
			return "hotkey", map[string]any{"keys": keys}
		}
	case actions.Scroll:
		if m := scrollArgs(a); m != nil {
			return "scroll", m
		}
	case actions.GoBack:
		return "go_back", nil
	case actions.GoForward:
		return "go_forward", nil
	case actions.Navigate:
		return "navigate", map[string]any{"url": a.URL}
	}
	return "", nil
}

func xy(p actions.Point) map[string]any { return map[string]any{"x": p.X, "y": p.Y} }

// scrollArgs writes a wheel action along exactly one axis as x, y,
// direction and magnitude, or returns nil.
func scrollArgs(a actions.Action) map[string]any {
	if !a.HasAt || (a.DeltaX != 0) == (a.DeltaY != 0) {
		return nil
	}
	m := xy(a.At)
	switch {
	case a.DeltaY < 0:
		m["direction"], m["magnitude"] = "up", -a.DeltaY
	case a.DeltaY > 0:
		m["direction"], m["magnitude"] = "down", a.DeltaY
	case a.DeltaX < 0:
		m["direction"], m["magnitude"] = "left", -a.DeltaX
	default:
		m["direction"], m["magnitude"] = "right", a.DeltaX
	}
	return m
}

func dragArgs(a actions.Action) map[string]any {
	if len(a.Path) != 2 || a.Button != actions.Left {
		return nil
	}
	m := xy(a.Path[0])
	m["destination_x"], m["destination_y"] = a.Path[1].X, a.Path[1].Y
	return m
}
