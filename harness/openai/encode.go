package openai

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spotter-harness/spotter/actions"
)

// EncodeAction is the inverse of DecodeAction: it writes a canonical action
// as an OpenAI computer action object, using Spotter's extension types for
// the kinds OpenAI lacks. Keys are written by their canonical names, which
// DecodeAction accepts. For every action a that DecodeAction returns,
// DecodeAction(EncodeAction(a)) returns a again.
//
// Fake servers and scripts use it to write a model's turns from canonical
// actions.
func EncodeAction(a actions.Action) (json.RawMessage, error) {
	m := map[string]any{"type": a.Kind.String()}
	at := func() {
		if a.HasAt {
			m["x"], m["y"] = a.At.X, a.At.Y
		}
	}
	button := func() {
		switch a.Button {
		case actions.Left:
		case actions.Middle:
			m["button"] = "wheel"
		default:
			m["button"] = a.Button.String()
		}
	}
	mods := func() {
		if len(a.Modifiers) > 0 {
			m["keys"] = keyNames(a.Modifiers)
		}
	}
	switch a.Kind {
	case actions.Click, actions.TripleClick, actions.MouseDown, actions.MouseUp:
		at()
		button()
		mods()
	case actions.DoubleClick, actions.Move:
		at()
		mods()
	case actions.Scroll:
		at()
		m["scroll_x"], m["scroll_y"] = a.DeltaX, a.DeltaY
		mods()
	case actions.Drag:
		path := make([]map[string]float64, len(a.Path))
		for i, p := range a.Path {
			path[i] = map[string]float64{"x": p.X, "y": p.Y}
		}
		m["path"] = path
		mods()
	case actions.Keypress:
		m["keys"] = keyNames(a.Keys)
	case actions.HoldKey:
		m["keys"] = keyNames(a.Keys)
		m["duration_ms"] = float64(a.Duration) / float64(time.Millisecond)
	case actions.Type:
		m["text"] = a.Text
	case actions.Wait:
		if a.Duration != DefaultWait {
			m["duration_ms"] = float64(a.Duration) / float64(time.Millisecond)
		}
	case actions.Zoom:
		m["x1"], m["y1"], m["x2"], m["y2"] = a.Region.Min.X, a.Region.Min.Y, a.Region.Max.X, a.Region.Max.Y
	case actions.Navigate:
		m["url"] = a.URL
	case actions.Screenshot, actions.GoBack, actions.GoForward, actions.CursorPosition:
	default:
		return nil, fmt.Errorf("%w: encode: unknown kind %v", actions.ErrInvalid, a.Kind)
	}
	return json.Marshal(m)
}

func keyNames(c actions.Chord) []string {
	s := make([]string, len(c))
	for i, k := range c {
		s[i] = string(k)
	}
	return s
}
