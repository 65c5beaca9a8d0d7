package anthropic

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
)

func TestDecode(t *testing.T) {
	cursor := &actions.Point{X: 5, Y: 6}
	all := ToolVersions
	since2 := []ToolVersion{Computer20250124, Computer20251124}
	tests := []struct {
		name     string
		versions []ToolVersion
		cursor   *actions.Point
		in       string
		want     []actions.Action
	}{
		{"screenshot", all, nil, `{"action":"screenshot"}`,
			[]actions.Action{{Kind: actions.Screenshot}}},
		{"cursor_position", all, nil, `{"action":"cursor_position"}`,
			[]actions.Action{{Kind: actions.CursorPosition}}},
		{"mouse_move", all, nil, `{"action":"mouse_move","coordinate":[100,200]}`,
			[]actions.Action{{Kind: actions.Move, At: actions.Pt(100, 200), HasAt: true}}},
		{"coordinate as a string", all, nil, `{"action":"mouse_move","coordinate":"[100, 200]"}`,
			[]actions.Action{{Kind: actions.Move, At: actions.Pt(100, 200), HasAt: true}}},
		{"left_click at the cursor (20241022)", all, nil, `{"action":"left_click"}`,
			[]actions.Action{{Kind: actions.Click}}},
		{"left_click at a point", since2, nil, `{"action":"left_click","coordinate":[10,20]}`,
			[]actions.Action{{Kind: actions.Click, At: actions.Pt(10, 20), HasAt: true}}},
		{"20241022 click with a coordinate is read leniently", all, nil, `{"action":"left_click","coordinate":[10,20]}`,
			[]actions.Action{{Kind: actions.Click, At: actions.Pt(10, 20), HasAt: true}}},
		{"right_click", all, nil, `{"action":"right_click","coordinate":[1,2]}`,
			[]actions.Action{{Kind: actions.Click, Button: actions.Right, At: actions.Pt(1, 2), HasAt: true}}},
		{"middle_click", all, nil, `{"action":"middle_click"}`,
			[]actions.Action{{Kind: actions.Click, Button: actions.Middle}}},
		{"double_click", all, nil, `{"action":"double_click","coordinate":[3,4]}`,
			[]actions.Action{{Kind: actions.DoubleClick, At: actions.Pt(3, 4), HasAt: true}}},
		{"triple_click", since2, nil, `{"action":"triple_click","coordinate":[3,4]}`,
			[]actions.Action{{Kind: actions.TripleClick, At: actions.Pt(3, 4), HasAt: true}}},
		{"shift+click: modifiers come from text", since2, nil,
			`{"action":"left_click","coordinate":[3,4],"text":"shift"}`,
			[]actions.Action{{Kind: actions.Click, At: actions.Pt(3, 4), HasAt: true, Modifiers: actions.Chord{actions.Shift}}}},
		{"ctrl+shift click", since2, nil, `{"action":"left_click","coordinate":[3,4],"text":"shift+ctrl"}`,
			[]actions.Action{{Kind: actions.Click, At: actions.Pt(3, 4), HasAt: true, Modifiers: actions.Chord{actions.Control, actions.Shift}}}},
		{"space-separated modifiers", since2, nil, `{"action":"left_click","text":"ctrl super"}`,
			[]actions.Action{{Kind: actions.Click, Modifiers: actions.Chord{actions.Control, actions.Meta}}}},
		{"a key field is not text: ignored", since2, nil, `{"action":"left_click","coordinate":[3,4],"key":"shift"}`,
			[]actions.Action{{Kind: actions.Click, At: actions.Pt(3, 4), HasAt: true}}},
		{"left_mouse_down at the cursor", since2, nil, `{"action":"left_mouse_down"}`,
			[]actions.Action{{Kind: actions.MouseDown}}},
		{"left_mouse_up at a point", since2, nil, `{"action":"left_mouse_up","coordinate":[7,8]}`,
			[]actions.Action{{Kind: actions.MouseUp, At: actions.Pt(7, 8), HasAt: true}}},
		{"drag from start_coordinate", since2, nil,
			`{"action":"left_click_drag","start_coordinate":[1,2],"coordinate":[30,40]}`,
			[]actions.Action{{Kind: actions.Drag, Path: []actions.Point{{X: 1, Y: 2}, {X: 30, Y: 40}}}}},
		{"drag from the known cursor", all, cursor, `{"action":"left_click_drag","coordinate":[30,40]}`,
			[]actions.Action{{Kind: actions.Drag, Path: []actions.Point{*cursor, {X: 30, Y: 40}}}}},
		{"scroll down at a point", since2, nil,
			`{"action":"scroll","coordinate":[50,60],"scroll_direction":"down","scroll_amount":3}`,
			[]actions.Action{{Kind: actions.Scroll, At: actions.Pt(50, 60), HasAt: true, DeltaY: 3 * PixelsPerScrollClick}}},
		{"scroll up", since2, nil, `{"action":"scroll","scroll_direction":"up","scroll_amount":1}`,
			[]actions.Action{{Kind: actions.Scroll, DeltaY: -PixelsPerScrollClick}}},
		{"scroll left with shift", since2, nil,
			`{"action":"scroll","coordinate":[5,5],"scroll_direction":"left","scroll_amount":2,"text":"shift"}`,
			[]actions.Action{{Kind: actions.Scroll, At: actions.Pt(5, 5), HasAt: true, DeltaX: -2 * PixelsPerScrollClick, Modifiers: actions.Chord{actions.Shift}}}},
		{"scroll right", since2, nil, `{"action":"scroll","scroll_direction":"right","scroll_amount":10}`,
			[]actions.Action{{Kind: actions.Scroll, DeltaX: 10 * PixelsPerScrollClick}}},
		{"key: xdotool chord", all, nil, `{"action":"key","text":"ctrl+s"}`,
			[]actions.Action{{Kind: actions.Keypress, Keys: actions.Chord{actions.Control, "s"}}}},
		{"key: xdotool names", all, nil, `{"action":"key","text":"Return"}`,
			[]actions.Action{{Kind: actions.Keypress, Keys: actions.Chord{"Enter"}}}},
		{"key: a sequence", all, nil, `{"action":"key","text":"ctrl+a BackSpace"}`,
			[]actions.Action{
				{Kind: actions.Keypress, Keys: actions.Chord{actions.Control, "a"}},
				{Kind: actions.Keypress, Keys: actions.Chord{"Backspace"}},
			}},
		{"key: keypad and Page_Down", all, nil, `{"action":"key","text":"KP_0 shift+Page_Down"}`,
			[]actions.Action{
				{Kind: actions.Keypress, Keys: actions.Chord{"Numpad0"}},
				{Kind: actions.Keypress, Keys: actions.Chord{actions.Shift, "PageDown"}},
			}},
		{"type", all, nil, `{"action":"type","text":"Hello, world\n"}`,
			[]actions.Action{{Kind: actions.Type, Text: "Hello, world\n"}}},
		{"hold_key", since2, nil, `{"action":"hold_key","text":"shift","duration":1.5}`,
			[]actions.Action{{Kind: actions.HoldKey, Keys: actions.Chord{actions.Shift}, Duration: 1500 * time.Millisecond}}},
		{"hold_key chord", since2, nil, `{"action":"hold_key","text":"ctrl+a","duration":2}`,
			[]actions.Action{{Kind: actions.HoldKey, Keys: actions.Chord{actions.Control, "a"}, Duration: 2 * time.Second}}},
		{"wait", since2, nil, `{"action":"wait","duration":2}`,
			[]actions.Action{{Kind: actions.Wait, Duration: 2 * time.Second}}},
		{"wait without duration", since2, nil, `{"action":"wait"}`,
			[]actions.Action{{Kind: actions.Wait, Duration: DefaultWait}}},
		{"zoom", []ToolVersion{Computer20251124}, nil, `{"action":"zoom","region":[10,20,110,70]}`,
			[]actions.Action{{Kind: actions.Zoom, Region: actions.Rect{Min: actions.Pt(10, 20), Max: actions.Pt(110, 70)}}}},
		{"null fields are absent", all, nil, `{"action":"left_click","coordinate":null,"text":null}`,
			[]actions.Action{{Kind: actions.Click}}},
		{"unknown fields are ignored", all, nil, `{"action":"screenshot","reason":"look"}`,
			[]actions.Action{{Kind: actions.Screenshot}}},
	}
	for _, tt := range tests {
		for _, v := range tt.versions {
			t.Run(string(v)+"/"+tt.name, func(t *testing.T) {
				d := Decoder{Version: v, Cursor: tt.cursor}
				got, err := d.Decode(json.RawMessage(tt.in))
				if err != nil {
					t.Fatalf("Decode(%s) error: %v", tt.in, err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("Decode(%s) (-want +got):\n%s", tt.in, diff)
				}
				if err := actions.ValidateBatch(got, generous); err != nil {
					t.Errorf("Decode(%s) = %v, which does not validate: %v", tt.in, got, err)
				}
			})
		}
	}
}

// generous are limits no decoded action should exceed.
var generous = actions.Limits{MaxText: 1 << 30, MaxBatch: 1 << 20, MaxDuration: MaxDuration, MaxPath: 2}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		v    ToolVersion
		in   string
		want string // a phrase the message must have, for the model to act on
	}{
		{"not JSON", Computer20250124, `{"action":`, "JSON object"},
		{"null", Computer20250124, `null`, "JSON object"},
		{"array", Computer20250124, `[]`, "JSON object"},
		{"no action", Computer20250124, `{"coordinate":[1,2]}`, `missing "action"`},
		{"action not a string", Computer20250124, `{"action":7}`, "must be a string"},
		{"unknown action", Computer20250124, `{"action":"fly"}`, `unknown action "fly"`},
		{"scroll is not in 20241022", Computer20241022, `{"action":"scroll","scroll_direction":"up","scroll_amount":1}`, "unknown action"},
		{"zoom is not in 20250124", Computer20250124, `{"action":"zoom","region":[0,0,1,1]}`, "unknown action"},
		{"triple_click is not in 20241022", Computer20241022, `{"action":"triple_click"}`, "unknown action"},
		{"mouse_move without coordinate", Computer20250124, `{"action":"mouse_move"}`, `"coordinate" is required`},
		{"coordinate of 3", Computer20250124, `{"action":"left_click","coordinate":[1,2,3]}`, "got 3 numbers"},
		{"coordinate of strings", Computer20250124, `{"action":"left_click","coordinate":["a","b"]}`, "want a number"},
		{"coordinate an object", Computer20250124, `{"action":"left_click","coordinate":{"x":1}}`, "[x, y]"},
		{"huge coordinate", Computer20250124, `{"action":"left_click","coordinate":[1e999,1]}`, "want a number"},
		{"click modifiers not modifiers", Computer20250124, `{"action":"left_click","text":"a"}`, "not a modifier"},
		{"click modifiers unknown", Computer20250124, `{"action":"left_click","text":"hyperdrive"}`, "unknown key"},
		{"20241022 drag from an unknown cursor", Computer20241022, `{"action":"left_click_drag","coordinate":[1,2]}`, "mouse_move first"},
		{"drag without start", Computer20250124, `{"action":"left_click_drag","coordinate":[1,2]}`, `"start_coordinate" is required`},
		{"drag without end", Computer20250124, `{"action":"left_click_drag","start_coordinate":[1,2]}`, `"coordinate" is required`},
		{"scroll without direction", Computer20250124, `{"action":"scroll","scroll_amount":3}`, `"scroll_direction" is required`},
		{"scroll bad direction", Computer20250124, `{"action":"scroll","scroll_direction":"sideways","scroll_amount":3}`, "up, down, left or right"},
		{"scroll without amount", Computer20250124, `{"action":"scroll","scroll_direction":"down"}`, `"scroll_amount" is required`},
		{"scroll zero", Computer20250124, `{"action":"scroll","scroll_direction":"down","scroll_amount":0}`, "from 1 to"},
		{"scroll fraction", Computer20250124, `{"action":"scroll","scroll_direction":"down","scroll_amount":1.5}`, "whole number"},
		{"scroll huge", Computer20250124, `{"action":"scroll","scroll_direction":"down","scroll_amount":1000000}`, "from 1 to"},
		{"key without text", Computer20250124, `{"action":"key"}`, `"text" is required`},
		{"key blank", Computer20250124, `{"action":"key","text":"  "}`, `"text" is required`},
		{"key unknown", Computer20250124, `{"action":"key","text":"ctrl+hyperdrive"}`, "unknown key"},
		{"type without text", Computer20250124, `{"action":"type"}`, `"text" is required`},
		{"type empty", Computer20250124, `{"action":"type","text":""}`, `"text" is required`},
		{"hold_key without duration", Computer20250124, `{"action":"hold_key","text":"shift"}`, `"duration" is required`},
		{"hold_key zero duration", Computer20250124, `{"action":"hold_key","text":"shift","duration":0}`, `"duration" is required`},
		{"hold_key negative", Computer20250124, `{"action":"hold_key","text":"shift","duration":-1}`, "from 0 to 100"},
		{"hold_key two main keys", Computer20250124, `{"action":"hold_key","text":"a b","duration":1}`, "two main keys"},
		{"wait too long", Computer20250124, `{"action":"wait","duration":1000}`, "from 0 to 100"},
		{"wait duration a string", Computer20250124, `{"action":"wait","duration":"2s"}`, "want a number"},
		{"zoom without region", Computer20251124, `{"action":"zoom"}`, `"region" is required`},
		{"zoom region of 2", Computer20251124, `{"action":"zoom","region":[1,2]}`, "[x1, y1, x2, y2]"},
		{"zoom empty region", Computer20251124, `{"action":"zoom","region":[10,10,5,20]}`, "empty"},
		{"unknown version", "computer_1999", `{"action":"screenshot"}`, "unknown computer tool version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decoder{Version: tt.v}.Decode(json.RawMessage(tt.in))
			if err == nil {
				t.Fatalf("Decode(%s) = %v, want an error", tt.in, got)
			}
			if !errors.Is(err, actions.ErrInvalid) {
				t.Errorf("Decode(%s) error %v does not wrap actions.ErrInvalid", tt.in, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Decode(%s) error %q, want it to say %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestDecodeNoZoom(t *testing.T) {
	d := Decoder{Version: Computer20251124, NoZoom: true}
	_, err := d.Decode(json.RawMessage(`{"action":"zoom","region":[0,0,10,10]}`))
	if !errors.Is(err, actions.ErrInvalid) || strings.Contains(err.Error(), "zoom)") {
		t.Errorf("Decode(zoom) with NoZoom = %v, want an unknown action error not offering zoom", err)
	}
}

func TestEncodeActionRoundTrip(t *testing.T) {
	tests := []struct {
		v ToolVersion
		a actions.Action
	}{
		{Computer20241022, actions.Action{Kind: actions.Screenshot}},
		{Computer20241022, actions.Action{Kind: actions.Click}},
		{Computer20241022, actions.Action{Kind: actions.Click, Button: actions.Right}},
		{Computer20241022, actions.Action{Kind: actions.Move, At: actions.Pt(3, 4), HasAt: true}},
		{Computer20241022, actions.Action{Kind: actions.Drag, Path: []actions.Point{{X: 1, Y: 2}, {X: 3, Y: 4}}}},
		{Computer20241022, actions.Action{Kind: actions.Keypress, Keys: actions.Chord{actions.Control, actions.Shift, "PageDown"}}},
		{Computer20241022, actions.Action{Kind: actions.Keypress, Keys: actions.Chord{actions.Control, "+"}}},
		{Computer20241022, actions.Action{Kind: actions.Type, Text: "two words\n"}},
		{Computer20250124, actions.Action{Kind: actions.Click, Button: actions.Middle, At: actions.Pt(3, 4), HasAt: true, Modifiers: actions.Chord{actions.Alt}}},
		{Computer20250124, actions.Action{Kind: actions.TripleClick, At: actions.Pt(3, 4), HasAt: true}},
		{Computer20250124, actions.Action{Kind: actions.MouseDown}},
		{Computer20250124, actions.Action{Kind: actions.MouseUp, At: actions.Pt(1, 1), HasAt: true}},
		{Computer20250124, actions.Action{Kind: actions.Drag, Path: []actions.Point{{X: 1, Y: 2}, {X: 3, Y: 4}}, Modifiers: actions.Chord{actions.Shift}}},
		{Computer20250124, actions.Action{Kind: actions.Scroll, At: actions.Pt(9, 9), HasAt: true, DeltaY: -3 * PixelsPerScrollClick}},
		{Computer20250124, actions.Action{Kind: actions.Scroll, DeltaX: 2 * PixelsPerScrollClick, Modifiers: actions.Chord{actions.Shift}}},
		{Computer20250124, actions.Action{Kind: actions.HoldKey, Keys: actions.Chord{actions.Shift}, Duration: 1500 * time.Millisecond}},
		{Computer20250124, actions.Action{Kind: actions.Wait, Duration: 2 * time.Second}},
		{Computer20251124, actions.Action{Kind: actions.Zoom, Region: actions.Rect{Min: actions.Pt(1, 2), Max: actions.Pt(30, 40)}}},
		{Computer20251124, actions.Action{Kind: actions.CursorPosition}},
	}
	for _, tt := range tests {
		raw, err := EncodeAction(tt.v, tt.a)
		if err != nil {
			t.Errorf("EncodeAction(%s, %v) error: %v", tt.v, tt.a, err)
			continue
		}
		d := Decoder{Version: tt.v}
		if tt.a.Kind == actions.Drag {
			d.Cursor = &tt.a.Path[0]
		}
		got, err := d.Decode(raw)
		if err != nil {
			t.Errorf("Decode(EncodeAction(%s, %v) = %s) error: %v", tt.v, tt.a, raw, err)
			continue
		}
		if diff := cmp.Diff([]actions.Action{tt.a}, got); diff != "" {
			t.Errorf("Decode(EncodeAction(%s, %v) = %s) (-want +got):\n%s", tt.v, tt.a, raw, diff)
		}
	}
}

func TestEncodeActionErrors(t *testing.T) {
	tests := []struct {
		v ToolVersion
		a actions.Action
	}{
		{Computer20250124, actions.Action{Kind: actions.Navigate, URL: "https://example.com"}},
		{Computer20250124, actions.Action{Kind: actions.Click, Button: actions.Back}},
		{Computer20250124, actions.Action{Kind: actions.DoubleClick, Button: actions.Right}},
		{Computer20250124, actions.Action{Kind: actions.Drag, Path: []actions.Point{{}, {X: 1}, {X: 2}}}},
		{Computer20250124, actions.Action{Kind: actions.Scroll, DeltaX: 53, DeltaY: 53}},
		{Computer20250124, actions.Action{Kind: actions.Scroll, DeltaY: 10}},
		{Computer20241022, actions.Action{Kind: actions.TripleClick}},
		{Computer20250124, actions.Action{Kind: actions.Zoom, Region: actions.Rect{Max: actions.Pt(1, 1)}}},
		{"computer_1999", actions.Action{Kind: actions.Screenshot}},
	}
	for _, tt := range tests {
		if raw, err := EncodeAction(tt.v, tt.a); !errors.Is(err, actions.ErrInvalid) {
			t.Errorf("EncodeAction(%s, %v) = %s, %v, want an error wrapping actions.ErrInvalid", tt.v, tt.a, raw, err)
		}
	}
}

func TestToolVersionFor(t *testing.T) {
	tests := []struct {
		model string
		want  ToolVersion
	}{
		{"claude-opus-4-5-20251101", Computer20251124},
		{"claude-opus-4-5", Computer20251124},
		{"claude-opus-4-6", Computer20251124},
		{"claude-sonnet-4-6", Computer20251124},
		{"claude-sonnet-4-5-20250929", Computer20250124},
		{"claude-sonnet-4-5", Computer20250124},
		{"claude-haiku-4-5-20251001", Computer20250124},
		{"claude-opus-4-1-20250805", Computer20250124},
		{"claude-opus-4-20250514", Computer20250124},
		{"claude-sonnet-4-20250514", Computer20250124},
		{"claude-3-7-sonnet-20250219", Computer20250124},
		{"claude-3-7-sonnet-latest", Computer20250124},
		{"claude-3-5-sonnet-20241022", Computer20241022},
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", Computer20250124},
		{"anthropic.claude-3-5-sonnet-20241022-v2:0", Computer20241022},
		{"claude-opus-4-5@20251101", Computer20251124},
		{"Claude-Sonnet-4-5", Computer20250124},
		{"claude-opus-5", Computer20251124}, // unknown: the newest
		{"", Computer20251124},
	}
	for _, tt := range tests {
		if got := ToolVersionFor(tt.model); got != tt.want {
			t.Errorf("ToolVersionFor(%q) = %s, want %s", tt.model, got, tt.want)
		}
	}
	for _, v := range ToolVersions {
		if v.Beta() == "" {
			t.Errorf("%s.Beta() is empty", v)
		}
	}
}

func TestPointerAfter(t *testing.T) {
	p := func(x, y float64) *actions.Point { return &actions.Point{X: x, Y: y} }
	tests := []struct {
		in   []actions.Action
		want *actions.Point
	}{
		{[]actions.Action{{Kind: actions.Screenshot}}, nil},
		{[]actions.Action{{Kind: actions.Keypress, Keys: actions.Chord{"a"}}}, nil},
		{[]actions.Action{{Kind: actions.Click}}, nil},
		{[]actions.Action{{Kind: actions.Move, At: actions.Pt(1, 2), HasAt: true}}, p(1, 2)},
		{[]actions.Action{{Kind: actions.Move, At: actions.Pt(1, 2), HasAt: true}, {Kind: actions.Click}}, p(1, 2)},
		{[]actions.Action{{Kind: actions.Drag, Path: []actions.Point{{X: 1, Y: 2}, {X: 3, Y: 4}}}}, p(3, 4)},
	}
	for _, tt := range tests {
		if got := pointerAfter(tt.in); !cmp.Equal(got, tt.want) {
			t.Errorf("pointerAfter(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"action":"left_click","coordinate":[10,20],"text":"shift"}`,
		`{"action":"left_click_drag","start_coordinate":[1,2],"coordinate":[3,4]}`,
		`{"action":"left_click_drag","coordinate":[3,4]}`,
		`{"action":"scroll","coordinate":[5,5],"scroll_direction":"down","scroll_amount":3}`,
		`{"action":"key","text":"ctrl+a BackSpace"}`,
		`{"action":"hold_key","text":"shift","duration":1}`,
		`{"action":"type","text":"hi"}`,
		`{"action":"wait","duration":0.5}`,
		`{"action":"zoom","region":[0,0,100,50]}`,
		`{"action":"mouse_move","coordinate":"[1, 2]"}`,
		`{"action":"cursor_position"}`,
		`{}`, `null`, `[]`, `{"action":null}`,
	} {
		for v := range byte(len(ToolVersions)) {
			f.Add(v, false, []byte(s))
			f.Add(v, true, []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, v byte, known bool, in []byte) {
		d := Decoder{Version: ToolVersions[int(v)%len(ToolVersions)]}
		if known {
			d.Cursor = &actions.Point{X: 10, Y: 10}
		}
		got, err := d.Decode(json.RawMessage(in))
		if err != nil {
			if !errors.Is(err, actions.ErrInvalid) {
				t.Fatalf("Decode(%q) error %v does not wrap actions.ErrInvalid", in, err)
			}
			if got != nil {
				t.Fatalf("Decode(%q) = %v with error %v, want no actions", in, got, err)
			}
			return
		}
		if len(got) == 0 {
			t.Fatalf("Decode(%q) = no actions and no error", in)
		}
		if err := actions.ValidateBatch(got, generous); err != nil {
			t.Fatalf("Decode(%q) = %v, which does not validate: %v", in, got, err)
		}
		// Every single decoded action encodes back (key sequences are one
		// tool call of several chords, so they are checked one by one).
		for _, a := range got {
			raw, err := EncodeAction(d.Version, a)
			if err != nil {
				t.Fatalf("EncodeAction(%v) from Decode(%q) error: %v", a, in, err)
			}
			dd := d
			if a.Kind == actions.Drag {
				dd.Cursor = &a.Path[0]
			}
			back, err := dd.Decode(raw)
			if err != nil {
				t.Fatalf("Decode(EncodeAction(%v) = %s) error: %v", a, raw, err)
			}
			if diff := cmp.Diff([]actions.Action{a}, back); diff != "" && !slices.EqualFunc(back, []actions.Action{a}, sameText) {
				t.Fatalf("Decode(EncodeAction(%v) = %s) (-want +got):\n%s", a, raw, diff)
			}
		}
	})
}

// sameText is true for two Type actions whose texts differ only as JSON
// re-encoding changes them (invalid UTF-8 becomes U+FFFD).
func sameText(a, b actions.Action) bool {
	return a.Kind == actions.Type && b.Kind == actions.Type && strings.ToValidUTF8(a.Text, "\uFFFD") == strings.ToValidUTF8(b.Text, "\uFFFD")
}
