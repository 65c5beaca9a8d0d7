package anthropic

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/spotter-harness/spotter/actions"
)

// EncodeAction writes a canonical action as the input of a computer tool_use
// block of version v, the inverse of Decoder.Decode: decoding the result
// with Decoder{Version: v} (and, for a computer_20241022 drag, Cursor at the
// drag's start) gives a back. Keys are written by their canonical names,
// which Decode accepts. Fake servers and scripted tests use it to write a
// model's turns.
//
// Kinds the tool has no action for (Navigate, GoBack, GoForward), buttons
// other than left on double clicks, drags and mouse down/up, drags of more
// than two points, and scrolls that are not a whole number of clicks along
// one axis are errors wrapping actions.ErrInvalid.
func EncodeAction(v ToolVersion, a actions.Action) (json.RawMessage, error) {
	if err := v.check(); err != nil {
		return nil, fmt.Errorf("%w: %v", actions.ErrInvalid, err)
	}
	in, err := encode(a)
	if err != nil {
		return nil, fmt.Errorf("%w: encode %s: %v", actions.ErrInvalid, a.Kind, err)
	}
	if name := in["action"].(string); !slices.Contains(actionSets[v], name) {
		return nil, fmt.Errorf("%w: encode %s: %s has no %s action", actions.ErrInvalid, a.Kind, v, name)
	}
	if v == Computer20241022 && a.Kind == actions.Drag {
		delete(in, "start_coordinate") // the drag starts at the cursor
	}
	return json.Marshal(in)
}

func encode(a actions.Action) (map[string]any, error) {
	in := map[string]any{}
	at := func() {
		if a.HasAt {
			in["coordinate"] = []float64{a.At.X, a.At.Y}
		}
	}
	mods := func() {
		if len(a.Modifiers) > 0 {
			in["text"] = a.Modifiers.String()
		}
	}
	leftOnly := func(name string) error {
		if a.Button != actions.Left {
			return fmt.Errorf("%s takes the left button only, not %s", name, a.Button)
		}
		in["action"] = name
		return nil
	}
	switch a.Kind {
	case actions.Screenshot:
		in["action"] = "screenshot"
	case actions.CursorPosition:
		in["action"] = "cursor_position"
	case actions.Move:
		in["action"] = "mouse_move"
		at()
		mods()
	case actions.Click:
		switch a.Button {
		case actions.Left:
			in["action"] = "left_click"
		case actions.Right:
			in["action"] = "right_click"
		case actions.Middle:
			in["action"] = "middle_click"
		default:
			return nil, fmt.Errorf("no click action for the %s button", a.Button)
		}
		at()
		mods()
	case actions.DoubleClick, actions.TripleClick, actions.MouseDown, actions.MouseUp:
		name := map[actions.Kind]string{actions.DoubleClick: "double_click", actions.TripleClick: "triple_click",
			actions.MouseDown: "left_mouse_down", actions.MouseUp: "left_mouse_up"}[a.Kind]
		if err := leftOnly(name); err != nil {
			return nil, err
		}
		at()
		mods()
	case actions.Drag:
		if err := leftOnly("left_click_drag"); err != nil {
			return nil, err
		}
		if len(a.Path) != 2 {
			return nil, fmt.Errorf("a drag has 2 points, not %d", len(a.Path))
		}
		in["start_coordinate"] = []float64{a.Path[0].X, a.Path[0].Y}
		in["coordinate"] = []float64{a.Path[1].X, a.Path[1].Y}
		mods()
	case actions.Scroll:
		in["action"] = "scroll"
		var d float64
		switch {
		case a.DeltaX == 0 && a.DeltaY < 0:
			in["scroll_direction"], d = "up", -a.DeltaY
		case a.DeltaX == 0 && a.DeltaY > 0:
			in["scroll_direction"], d = "down", a.DeltaY
		case a.DeltaY == 0 && a.DeltaX < 0:
			in["scroll_direction"], d = "left", -a.DeltaX
		case a.DeltaY == 0 && a.DeltaX > 0:
			in["scroll_direction"], d = "right", a.DeltaX
		default:
			return nil, fmt.Errorf("scroll (%g,%g) is not along one axis", a.DeltaX, a.DeltaY)
		}
		n := d / PixelsPerScrollClick
		if n != math.Trunc(n) {
			return nil, fmt.Errorf("scroll of %g px is not a whole number of %d px clicks", d, PixelsPerScrollClick)
		}
		in["scroll_amount"] = n
		at()
		mods()
	case actions.Type:
		in["action"], in["text"] = "type", a.Text
	case actions.Keypress:
		in["action"], in["text"] = "key", a.Keys.String()
	case actions.HoldKey:
		in["action"], in["text"], in["duration"] = "hold_key", a.Keys.String(), a.Duration.Seconds()
	case actions.Wait:
		in["action"], in["duration"] = "wait", a.Duration.Seconds()
	case actions.Zoom:
		r := a.Region
		in["action"], in["region"] = "zoom", []float64{r.Min.X, r.Min.Y, r.Max.X, r.Max.Y}
	default:
		return nil, fmt.Errorf("the computer tool has no %s action", a.Kind)
	}
	return in, nil
}
