package gemini_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness/gemini"
)

func args(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad test args %s: %v", s, err)
	}
	return m
}

func TestDecodeCall(t *testing.T) {
	L, N := gemini.FunctionsLegacy, gemini.Functions35
	pt := actions.Pt
	kp := func(s string) actions.Action { return actions.Action{Kind: actions.Keypress, Keys: chord(t, s)} }
	tests := []struct {
		set  gemini.FunctionSet
		name string
		args string
		want []actions.Action
	}{
		// Legacy set.
		{L, "open_web_browser", `{}`, []actions.Action{{Kind: actions.Screenshot}}},
		{L, "click_at", `{"x": 0, "y": 999}`, []actions.Action{{Kind: actions.Click, At: pt(0, 999), HasAt: true}}},
		{L, "hover_at", `{"x": 12, "y": 34}`, []actions.Action{{Kind: actions.Move, At: pt(12, 34), HasAt: true}}},
		{L, "type_text_at", `{"x": 1, "y": 2, "text": "hi"}`, []actions.Action{
			{Kind: actions.Click, At: pt(1, 2), HasAt: true}, kp("Control+a"), kp("Delete"), {Kind: actions.Type, Text: "hi"},
		}},
		{L, "type_text_at", `{"x": 1, "y": 2, "text": "hi", "press_enter": true, "clear_before_typing": false}`, []actions.Action{
			{Kind: actions.Click, At: pt(1, 2), HasAt: true}, {Kind: actions.Type, Text: "hi"}, kp("Enter"),
		}},
		{L, "type_text_at", `{"x": 1, "y": 2, "text": "", "press_enter": "true", "clear_before_typing": "false"}`, []actions.Action{
			{Kind: actions.Click, At: pt(1, 2), HasAt: true}, {Kind: actions.Type, Text: ""}, kp("Enter"),
		}},
		{L, "scroll_document", `{"direction": "down"}`, []actions.Action{{Kind: actions.Scroll, At: pt(500, 500), HasAt: true, DeltaY: 800}}},
		{L, "scroll_document", `{"direction": "LEFT"}`, []actions.Action{{Kind: actions.Scroll, At: pt(500, 500), HasAt: true, DeltaX: -800}}},
		{L, "scroll_at", `{"x": 10, "y": 20, "direction": "up"}`, []actions.Action{{Kind: actions.Scroll, At: pt(10, 20), HasAt: true, DeltaY: -800}}},
		{L, "scroll_at", `{"x": 10, "y": 20, "direction": "right", "magnitude": 300}`, []actions.Action{{Kind: actions.Scroll, At: pt(10, 20), HasAt: true, DeltaX: 300}}},
		{L, "wait_5_seconds", `{}`, []actions.Action{{Kind: actions.Wait, Duration: 5 * time.Second}}},
		{L, "go_back", `{}`, []actions.Action{{Kind: actions.GoBack}}},
		{L, "go_forward", `{}`, []actions.Action{{Kind: actions.GoForward}}},
		{L, "search", `{}`, []actions.Action{{Kind: actions.Navigate, URL: gemini.DefaultSearchURL}}},
		{L, "navigate", `{"url": "https://go.dev/"}`, []actions.Action{{Kind: actions.Navigate, URL: "https://go.dev/"}}},
		{L, "key_combination", `{"keys": "Control+C"}`, []actions.Action{kp("Control+c")}},
		{L, "key_combination", `{"keys": "enter"}`, []actions.Action{kp("Enter")}},
		{L, "key_combination", `{"keys": ["Control", "Shift", "t"]}`, []actions.Action{kp("Control+Shift+t")}},
		{L, "drag_and_drop", `{"x": 1, "y": 2, "destination_x": 3, "destination_y": 4}`, []actions.Action{{Kind: actions.Drag, Path: []actions.Point{pt(1, 2), pt(3, 4)}}}},
		{L, "click_at", `{"x": 5, "y": 6, "safety_decision": {"decision": "require_confirmation"}}`, []actions.Action{{Kind: actions.Click, At: pt(5, 6), HasAt: true}}},

		// 3.5 set.
		{N, "click", `{"x": 1, "y": 2, "intent": "why"}`, []actions.Action{{Kind: actions.Click, At: pt(1, 2), HasAt: true}}},
		{N, "double_click", `{"x": 1, "y": 2}`, []actions.Action{{Kind: actions.DoubleClick, At: pt(1, 2), HasAt: true}}},
		{N, "triple_click", `{"x": 1, "y": 2}`, []actions.Action{{Kind: actions.TripleClick, At: pt(1, 2), HasAt: true}}},
		{N, "middle_click", `{"x": 1, "y": 2}`, []actions.Action{{Kind: actions.Click, At: pt(1, 2), HasAt: true, Button: actions.Middle}}},
		{N, "right_click", `{"x": 1, "y": 2}`, []actions.Action{{Kind: actions.Click, At: pt(1, 2), HasAt: true, Button: actions.Right}}},
		{N, "mouse_down", `{}`, []actions.Action{{Kind: actions.MouseDown}}},
		{N, "mouse_down", `{"x": 1, "y": 2, "button": "right"}`, []actions.Action{{Kind: actions.MouseDown, At: pt(1, 2), HasAt: true, Button: actions.Right}}},
		{N, "mouse_up", `{"x": 1.5, "y": 2}`, []actions.Action{{Kind: actions.MouseUp, At: pt(1.5, 2), HasAt: true}}},
		{N, "move", `{"x": 1, "y": 2}`, []actions.Action{{Kind: actions.Move, At: pt(1, 2), HasAt: true}}},
		{N, "type", `{"text": "a\nb"}`, []actions.Action{{Kind: actions.Type, Text: "a\nb"}}},
		{N, "type", `{"text": "q", "press_enter": true}`, []actions.Action{{Kind: actions.Type, Text: "q"}, kp("Enter")}},
		{N, "drag_and_drop", `{"x": 1, "y": 2, "destination_x": 3, "destination_y": 4}`, []actions.Action{{Kind: actions.Drag, Path: []actions.Point{pt(1, 2), pt(3, 4)}}}},
		{N, "wait", `{}`, []actions.Action{{Kind: actions.Wait, Duration: gemini.DefaultWait}}},
		{N, "wait", `{"seconds": 0.25}`, []actions.Action{{Kind: actions.Wait, Duration: 250 * time.Millisecond}}},
		{N, "press_key", `{"key": "Escape"}`, []actions.Action{kp("Escape")}},
		{N, "press_key", `{"key": "Control+L"}`, []actions.Action{kp("Control+l")}},
		{N, "hotkey", `{"keys": ["Control", "Shift", "Tab"]}`, []actions.Action{kp("Control+Shift+Tab")}},
		{N, "hotkey", `{"keys": "Alt+F4"}`, []actions.Action{kp("Alt+F4")}},
		{N, "take_screenshot", `{}`, []actions.Action{{Kind: actions.Screenshot}}},
		{N, "scroll", `{"x": 1, "y": 2, "direction": "down", "magnitude": 0}`, []actions.Action{{Kind: actions.Scroll, At: pt(1, 2), HasAt: true}}},
		{N, "go_back", `{}`, []actions.Action{{Kind: actions.GoBack}}},
		{N, "go_forward", `{}`, []actions.Action{{Kind: actions.GoForward}}},
		{N, "navigate", `{"url": "about:blank"}`, []actions.Action{{Kind: actions.Navigate, URL: "about:blank"}}},
	}
	for _, tt := range tests {
		got, err := gemini.DecodeCall(tt.set, tt.name, args(t, tt.args))
		if err != nil {
			t.Errorf("DecodeCall(%v, %s, %s) error: %v", tt.set, tt.name, tt.args, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("DecodeCall(%v, %s, %s) (-want +got):\n%s", tt.set, tt.name, tt.args, diff)
		}
	}
}

func TestDecodeCallErrors(t *testing.T) {
	L, N := gemini.FunctionsLegacy, gemini.Functions35
	tests := []struct {
		set  gemini.FunctionSet
		name string
		args string
		want string // in the error text
	}{
		{L, "click", `{"x": 1, "y": 2}`, `unknown function "click"; the legacy functions are open_web_browser`},
		{N, "click_at", `{"x": 1, "y": 2}`, `unknown function "click_at"`},
		{N, "", `{}`, `unknown function ""`},
		{N, "key_down", `{"key": "Shift"}`, "key_down is not supported"},
		{N, "key_up", `{"key": "Shift"}`, "key_up is not supported"},
		{gemini.FunctionsAuto, "click", `{"x": 1, "y": 2}`, "no function set"},
		{L, "click_at", `{"y": 2}`, `click_at: argument "x" is missing`},
		{L, "click_at", `{"x": "10", "y": 2}`, `click_at: x is the string "10", want a number`},
		{L, "click_at", `{"x": null, "y": 2}`, `argument "x" is missing`},
		{L, "click_at", `{"x": [1], "y": 2}`, "x is an array, want a number"},
		{L, "type_text_at", `{"x": 1, "y": 2}`, `type_text_at: argument "text" is missing`},
		{L, "type_text_at", `{"x": 1, "y": 2, "text": 5}`, "text is the number 5, want a string"},
		{L, "type_text_at", `{"x": 1, "y": 2, "text": "a", "press_enter": "yes"}`, `press_enter is the string "yes", want true or false`},
		{L, "scroll_document", `{}`, `argument "direction" is missing`},
		{L, "scroll_document", `{"direction": "sideways"}`, `direction is "sideways", want up, down, left or right`},
		{L, "scroll_at", `{"x": 1, "y": 2, "direction": "up", "magnitude": -5}`, "magnitude is -5, want a positive distance"},
		{L, "navigate", `{}`, `argument "url" is missing`},
		{L, "navigate", `{"url": "  "}`, "url is empty"},
		{L, "key_combination", `{}`, `argument "keys" is missing`},
		{L, "key_combination", `{"keys": "Control+Banana"}`, "unknown key"},
		{L, "key_combination", `{"keys": ["Control", 7]}`, "keys[1] is the number 7, want a key name"},
		{L, "key_combination", `{"keys": {"a": 1}}`, "keys is an object"},
		{L, "key_combination", `{"keys": []}`, "empty chord"},
		{L, "drag_and_drop", `{"x": 1, "y": 2, "destination_x": 3}`, `argument "destination_y" is missing`},
		{N, "mouse_down", `{"x": 1}`, `argument "y" is missing`},
		{N, "mouse_down", `{"button": "fourth"}`, "unknown mouse button"},
		{N, "wait", `{"seconds": -1}`, "seconds is -1, want 0 to 3600"},
		{N, "wait", `{"seconds": 1e300}`, "want 0 to 3600"},
		{N, "press_key", `{"key": "a+b"}`, "two main keys"},
		{N, "hotkey", `{"keys": [""]}`, "empty key name"},
	}
	for _, tt := range tests {
		_, err := gemini.DecodeCall(tt.set, tt.name, args(t, tt.args))
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, actions.ErrInvalid) {
			t.Errorf("DecodeCall(%v, %q, %s) error = %v, want ErrInvalid containing %q", tt.set, tt.name, tt.args, err, tt.want)
		}
	}
}

func TestEncodeCallRoundTrip(t *testing.T) {
	pt := actions.Pt
	kp := func(s string) actions.Action { return actions.Action{Kind: actions.Keypress, Keys: chord(t, s)} }
	common := []actions.Action{
		{Kind: actions.Click, At: pt(10, 20), HasAt: true},
		{Kind: actions.Move, At: pt(999, 0), HasAt: true},
		{Kind: actions.Scroll, At: pt(5, 6), HasAt: true, DeltaY: -120},
		{Kind: actions.Scroll, At: pt(5, 6), HasAt: true, DeltaX: 40.5},
		{Kind: actions.GoBack},
		{Kind: actions.GoForward},
		{Kind: actions.Navigate, URL: "https://example.com/"},
		kp("Control+Shift+t"),
		kp("Enter"),
		{Kind: actions.Drag, Path: []actions.Point{pt(1, 2), pt(3, 4)}},
		{Kind: actions.Screenshot},
	}
	tests := []struct {
		set  gemini.FunctionSet
		acts []actions.Action
		bad  []actions.Action // not expressible
	}{
		{gemini.FunctionsLegacy, append(common,
			actions.Action{Kind: actions.Wait, Duration: 5 * time.Second},
		), []actions.Action{
			{Kind: actions.Type, Text: "x"},
			{Kind: actions.DoubleClick, At: pt(1, 1), HasAt: true},
			{Kind: actions.Click, At: pt(1, 1), HasAt: true, Button: actions.Right},
			{Kind: actions.Wait, Duration: time.Second},
		}},
		{gemini.Functions35, append(common,
			actions.Action{Kind: actions.Click, At: pt(1, 1), HasAt: true, Button: actions.Right},
			actions.Action{Kind: actions.Click, At: pt(1, 1), HasAt: true, Button: actions.Middle},
			actions.Action{Kind: actions.DoubleClick, At: pt(1, 1), HasAt: true},
			actions.Action{Kind: actions.TripleClick, At: pt(1, 1), HasAt: true},
			actions.Action{Kind: actions.MouseDown},
			actions.Action{Kind: actions.MouseUp, At: pt(1, 1), HasAt: true, Button: actions.Right},
			actions.Action{Kind: actions.Type, Text: "hello\n"},
			actions.Action{Kind: actions.Wait, Duration: 1500 * time.Millisecond},
		), []actions.Action{
			{Kind: actions.Click},
			{Kind: actions.Click, At: pt(1, 1), HasAt: true, Button: actions.Back},
			{Kind: actions.Scroll, At: pt(1, 1), HasAt: true, DeltaX: 1, DeltaY: 1},
			{Kind: actions.Drag, Path: []actions.Point{pt(1, 2), pt(3, 4), pt(5, 6)}},
		}},
	}
	universal := []actions.Action{
		{Kind: actions.Click, At: pt(1, 1), HasAt: true, Modifiers: actions.Chord{actions.Key("Shift")}},
		{Kind: actions.HoldKey, Keys: chord(t, "Shift"), Duration: time.Second},
		{Kind: actions.Zoom, Region: actions.Rect{Max: pt(10, 10)}},
		{Kind: actions.CursorPosition},
		{Kind: actions.Keypress, Keys: actions.Chord{"ctrl", "c"}}, // not canonical
		{Kind: actions.Navigate},
		{Kind: actions.KindInvalid},
	}
	for _, tt := range tests {
		for _, a := range tt.acts {
			name, m, err := gemini.EncodeCall(tt.set, a)
			if err != nil {
				t.Errorf("EncodeCall(%v, %v) error: %v", tt.set, a.LogValue(), err)
				continue
			}
			// Through JSON, as the wire carries it.
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			got, err := gemini.DecodeCall(tt.set, name, args(t, string(b)))
			if err != nil {
				t.Errorf("DecodeCall(%v, %s, %s) error: %v", tt.set, name, b, err)
				continue
			}
			if diff := cmp.Diff([]actions.Action{a}, got); diff != "" {
				t.Errorf("DecodeCall(EncodeCall(%v, %v)) = %s %s (-want +got):\n%s", tt.set, a.LogValue(), name, b, diff)
			}
		}
		for _, a := range append(tt.bad, universal...) {
			if name, m, err := gemini.EncodeCall(tt.set, a); err == nil || !errors.Is(err, actions.ErrInvalid) {
				t.Errorf("EncodeCall(%v, %v) = %s %v, %v; want ErrInvalid", tt.set, a.LogValue(), name, m, err)
			}
		}
	}
}
