package gemini

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"

	"google.golang.org/genai"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
)

// FuzzDecodeCall feeds the decoder arbitrary function names and argument
// objects. It must never panic; what it accepts must be well formed and in
// finite grid coordinates; what it rejects must say so with ErrInvalid; and
// a single decoded action that EncodeCall accepts must survive the round trip.
func FuzzDecodeCall(f *testing.F) {
	seeds := []struct {
		set  uint8
		name string
		args string
	}{
		{1, "click_at", `{"x": 500, "y": 500}`},
		{1, "type_text_at", `{"x": 1, "y": 2, "text": "hi", "press_enter": true, "clear_before_typing": false}`},
		{1, "scroll_document", `{"direction": "down"}`},
		{1, "scroll_at", `{"x": 1, "y": 2, "direction": "left", "magnitude": 300}`},
		{1, "key_combination", `{"keys": "Control+Shift+T"}`},
		{1, "drag_and_drop", `{"x": 1, "y": 2, "destination_x": 3, "destination_y": 4}`},
		{1, "navigate", `{"url": "https://example.com/", "safety_decision": {"decision": "require_confirmation", "explanation": "x"}}`},
		{2, "hotkey", `{"keys": ["Control", "c"]}`},
		{2, "press_key", `{"key": "Page_Down"}`},
		{2, "wait", `{"seconds": 2.5}`},
		{2, "mouse_down", `{"x": 1, "y": 2, "button": "middle"}`},
		{2, "scroll", `{"x": 999, "y": 0, "direction": "up", "magnitude": 1e308}`},
		{2, "key_down", `{"key": "Shift"}`},
		{2, "type", `{"text": "\u0000\uffff", "press_enter": "true"}`},
		{0, "click", `{}`},
		{2, "click", `{"x": -1e-300, "y": 1e400}`},
	}
	for _, s := range seeds {
		f.Add(s.set, s.name, []byte(s.args))
	}
	f.Fuzz(func(t *testing.T, setN uint8, name string, raw []byte) {
		var args map[string]any
		if json.Unmarshal(raw, &args) != nil {
			return
		}
		set := FunctionSet(setN % 4)
		acts, err := decodeCall(set, name, args, DefaultSearchURL)
		if err != nil {
			if !errors.Is(err, actions.ErrInvalid) {
				t.Fatalf("decodeCall(%v, %q, %s) error %v does not wrap ErrInvalid", set, name, raw, err)
			}
			return
		}
		if len(acts) == 0 {
			t.Fatalf("decodeCall(%v, %q, %s) = no actions and no error", set, name, raw)
		}
		for i, a := range acts {
			checkAction(t, a)
			if t.Failed() {
				t.Fatalf("decodeCall(%v, %q, %s) action %d = %+v", set, name, raw, i, a)
			}
		}
		if len(acts) != 1 {
			return
		}
		n, m, err := EncodeCall(set, acts[0])
		if err != nil {
			return
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("EncodeCall(%+v) args do not marshal: %v", acts[0], err)
		}
		var back map[string]any
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		again, err := DecodeCall(set, n, back)
		if err != nil || len(again) != 1 || !reflect.DeepEqual(again[0], acts[0]) {
			t.Fatalf("round trip of %+v through %s %s = %+v, %v", acts[0], n, b, again, err)
		}
	})
}

func checkAction(t *testing.T, a actions.Action) {
	t.Helper()
	finite := func(vs ...float64) {
		for _, v := range vs {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("non-finite number %v", v)
			}
		}
	}
	finite(a.At.X, a.At.Y, a.DeltaX, a.DeltaY)
	for _, p := range a.Path {
		finite(p.X, p.Y)
	}
	switch a.Kind {
	case actions.Click, actions.DoubleClick, actions.TripleClick, actions.Move, actions.Scroll:
		if !a.HasAt {
			t.Errorf("%v without a point", a.Kind)
		}
	case actions.Drag:
		if len(a.Path) != 2 {
			t.Errorf("drag with %d points", len(a.Path))
		}
	case actions.Keypress:
		if len(a.Keys) == 0 {
			t.Errorf("keypress without keys")
		}
	case actions.Wait:
		if a.Duration < 0 || a.Duration > maxWait {
			t.Errorf("wait of %v", a.Duration)
		}
	case actions.Navigate:
		if a.URL == "" {
			t.Errorf("navigate without a URL")
		}
	case actions.Screenshot, actions.Type, actions.MouseDown, actions.MouseUp, actions.GoBack, actions.GoForward:
	default:
		t.Errorf("unexpected kind %v", a.Kind)
	}
}

// FuzzParseResponse feeds Model.parse arbitrary generateContent responses:
// it must not panic, and every call it returns must be answerable (an id,
// Grid1000, actions or a DecodeErr).
func FuzzParseResponse(f *testing.F) {
	f.Add([]byte(`{"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"id": "1", "name": "click", "args": {"x": 1, "y": 2}}, "thoughtSignature": "c2ln"}]}, "finishReason": "STOP"}]}`))
	f.Add([]byte(`{"candidates": [{"content": {"parts": [null, {"text": "hi"}, {"functionCall": {"name": "nope"}}]}, "finishReason": "MALFORMED_FUNCTION_CALL"}]}`))
	f.Add([]byte(`{"candidates": [{"content": {"parts": [{"functionCall": {"name": "type", "args": {"text": "x", "safety_decision": "yes"}}}]}}]}`))
	f.Add([]byte(`{"promptFeedback": {"blockReason": "OTHER"}}`))
	f.Add([]byte(`{"candidates": [null]}`))
	m, err := New(Config{APIKey: "k", Model: "gemini-3.5-flash"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var resp genai.GenerateContentResponse
		if json.Unmarshal(body, &resp) != nil {
			return
		}
		r, err := m.parse(&resp)
		if err != nil || r.malformed != "" {
			return
		}
		if len(r.pending) != len(r.turn.Calls) {
			t.Fatalf("parse(%s): %d pending for %d calls", body, len(r.pending), len(r.turn.Calls))
		}
		for i, c := range r.turn.Calls {
			if c.ID == "" || c.Space != screen.Grid1000 || (c.DecodeErr == nil) == (len(c.Actions) == 0) {
				t.Fatalf("parse(%s) call %d = %+v: want an id, Grid1000, and actions xor DecodeErr", body, i, c)
			}
			if r.pending[i].id != c.ID {
				t.Fatalf("parse(%s) call %d: pending id %q, call id %q", body, i, r.pending[i].id, c.ID)
			}
		}
		switch r.turn.Stop {
		case harness.StopToolUse, harness.StopEndTurn, harness.StopMaxTokens, harness.StopRefusal:
		default:
			t.Fatalf("parse(%s) stop = %q", body, r.turn.Stop)
		}
	})
}
