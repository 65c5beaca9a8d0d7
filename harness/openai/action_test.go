package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
)

func TestDecodeAction(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want actions.Action
	}{
		{"click", `{"type":"click","x":512,"y":320,"button":"left"}`,
			actions.Action{Kind: actions.Click, At: actions.Pt(512, 320), HasAt: true}},
		{"click default button", `{"type":"click","x":1,"y":2}`,
			actions.Action{Kind: actions.Click, At: actions.Pt(1, 2), HasAt: true}},
		{"click right", `{"type":"click","x":1,"y":2,"button":"right"}`,
			actions.Action{Kind: actions.Click, At: actions.Pt(1, 2), HasAt: true, Button: actions.Right}},
		{"click wheel", `{"type":"click","x":1,"y":2,"button":"wheel"}`,
			actions.Action{Kind: actions.Click, At: actions.Pt(1, 2), HasAt: true, Button: actions.Middle}},
		{"click back", `{"type":"click","x":1,"y":2,"button":"back"}`,
			actions.Action{Kind: actions.Click, At: actions.Pt(1, 2), HasAt: true, Button: actions.Back}},
		{"click forward", `{"type":"click","x":1,"y":2,"button":"forward"}`,
			actions.Action{Kind: actions.Click, At: actions.Pt(1, 2), HasAt: true, Button: actions.Forward}},
		{"click with modifiers", `{"type":"click","x":1,"y":2,"button":"left","keys":["SHIFT","CTRL"]}`,
			actions.Action{Kind: actions.Click, At: actions.Pt(1, 2), HasAt: true, Modifiers: actions.Chord{"Control", "Shift"}}},
		{"click null keys", `{"type":"click","x":1,"y":2,"keys":null}`,
			actions.Action{Kind: actions.Click, At: actions.Pt(1, 2), HasAt: true}},
		{"click fractional", `{"type":"click","x":10.5,"y":2e2}`,
			actions.Action{Kind: actions.Click, At: actions.Pt(10.5, 200), HasAt: true}},
		{"click unknown field ignored", `{"type":"click","x":1,"y":2,"future":{"a":1}}`,
			actions.Action{Kind: actions.Click, At: actions.Pt(1, 2), HasAt: true}},
		{"double_click", `{"type":"double_click","x":3,"y":4,"keys":[]}`,
			actions.Action{Kind: actions.DoubleClick, At: actions.Pt(3, 4), HasAt: true}},
		{"drag", `{"type":"drag","path":[{"x":1,"y":2},{"x":3,"y":4},{"x":5,"y":6}]}`,
			actions.Action{Kind: actions.Drag, Path: []actions.Point{actions.Pt(1, 2), actions.Pt(3, 4), actions.Pt(5, 6)}}},
		{"drag with alt", `{"type":"drag","path":[{"x":1,"y":2},{"x":3,"y":4}],"keys":["ALT"]}`,
			actions.Action{Kind: actions.Drag, Path: []actions.Point{actions.Pt(1, 2), actions.Pt(3, 4)}, Modifiers: actions.Chord{"Alt"}}},
		{"keypress", `{"type":"keypress","keys":["CTRL","C"]}`,
			actions.Action{Kind: actions.Keypress, Keys: actions.Chord{"Control", "c"}}},
		{"keypress enter", `{"type":"keypress","keys":["ENTER"]}`,
			actions.Action{Kind: actions.Keypress, Keys: actions.Chord{"Enter"}}},
		{"move", `{"type":"move","x":7,"y":8}`,
			actions.Action{Kind: actions.Move, At: actions.Pt(7, 8), HasAt: true}},
		{"scroll", `{"type":"scroll","x":640,"y":400,"scroll_x":0,"scroll_y":-300}`,
			actions.Action{Kind: actions.Scroll, At: actions.Pt(640, 400), HasAt: true, DeltaY: -300}},
		{"scroll only y", `{"type":"scroll","x":640,"y":400,"scroll_y":120}`,
			actions.Action{Kind: actions.Scroll, At: actions.Pt(640, 400), HasAt: true, DeltaY: 120}},
		{"scroll with shift", `{"type":"scroll","x":1,"y":1,"scroll_x":50,"scroll_y":0,"keys":["shift"]}`,
			actions.Action{Kind: actions.Scroll, At: actions.Pt(1, 1), HasAt: true, DeltaX: 50, Modifiers: actions.Chord{"Shift"}}},
		{"type", `{"type":"type","text":"hello, world\n"}`,
			actions.Action{Kind: actions.Type, Text: "hello, world\n"}},
		{"type empty", `{"type":"type","text":""}`,
			actions.Action{Kind: actions.Type}},
		{"wait", `{"type":"wait"}`,
			actions.Action{Kind: actions.Wait, Duration: DefaultWait}},
		{"wait duration extension", `{"type":"wait","duration_ms":250}`,
			actions.Action{Kind: actions.Wait, Duration: 250 * time.Millisecond}},
		{"screenshot", `{"type":"screenshot"}`,
			actions.Action{Kind: actions.Screenshot}},
		{"whitespace", " \n{\"type\" : \"screenshot\"}\t",
			actions.Action{Kind: actions.Screenshot}},

		// Spotter extensions.
		{"triple_click", `{"type":"triple_click","x":5,"y":6}`,
			actions.Action{Kind: actions.TripleClick, At: actions.Pt(5, 6), HasAt: true}},
		{"mouse_down at cursor", `{"type":"mouse_down"}`,
			actions.Action{Kind: actions.MouseDown}},
		{"mouse_down at point", `{"type":"mouse_down","x":1,"y":2,"button":"right"}`,
			actions.Action{Kind: actions.MouseDown, At: actions.Pt(1, 2), HasAt: true, Button: actions.Right}},
		{"mouse_up", `{"type":"mouse_up","x":9,"y":9}`,
			actions.Action{Kind: actions.MouseUp, At: actions.Pt(9, 9), HasAt: true}},
		{"hold_key", `{"type":"hold_key","keys":["SHIFT"],"duration_ms":1500}`,
			actions.Action{Kind: actions.HoldKey, Keys: actions.Chord{"Shift"}, Duration: 1500 * time.Millisecond}},
		{"zoom", `{"type":"zoom","x1":10,"y1":20,"x2":110,"y2":70}`,
			actions.Action{Kind: actions.Zoom, Region: actions.Rect{Min: actions.Pt(10, 20), Max: actions.Pt(110, 70)}}},
		{"navigate", `{"type":"navigate","url":"https://example.com/a?b=c"}`,
			actions.Action{Kind: actions.Navigate, URL: "https://example.com/a?b=c"}},
		{"go_back", `{"type":"go_back"}`, actions.Action{Kind: actions.GoBack}},
		{"go_forward", `{"type":"go_forward"}`, actions.Action{Kind: actions.GoForward}},
		{"cursor_position", `{"type":"cursor_position"}`, actions.Action{Kind: actions.CursorPosition}},

		// Browser extensions.
		{"list_tabs", `{"type":"list_tabs"}`, actions.Action{Kind: actions.ListTabs}},
		{"switch_tab", `{"type":"switch_tab","tab":2}`, actions.Action{Kind: actions.SwitchTab, Tab: 2}},
		{"close_tab default", `{"type":"close_tab"}`, actions.Action{Kind: actions.CloseTab}},
		{"close_tab", `{"type":"close_tab","tab":1}`, actions.Action{Kind: actions.CloseTab, Tab: 1}},
		{"dialog accept", `{"type":"dialog","accept":true,"text":"Ada"}`,
			actions.Action{Kind: actions.Dialog, Accept: true, Text: "Ada"}},
		{"dialog dismiss", `{"type":"dialog","accept":false}`, actions.Action{Kind: actions.Dialog}},
		{"upload", `{"type":"upload","files":["report.pdf","b.txt"]}`,
			actions.Action{Kind: actions.Upload, Files: []string{"report.pdf", "b.txt"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeAction(json.RawMessage(tt.in))
			if err != nil {
				t.Fatalf("DecodeAction(%s) error: %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DecodeAction(%s) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestDecodeActionErrors(t *testing.T) {
	tests := []struct {
		in   string
		want string // the error text after "invalid action: "
	}{
		{``, `action must be a JSON object, got nothing`},
		{`[]`, `action must be a JSON object, got an array`},
		{`"click"`, `action must be a JSON object, got a string`},
		{`null`, `action must be a JSON object, got null`},
		{`{"type":"click"`, `action is not valid JSON: unexpected end of JSON input`},
		{`{}`, `action: missing "type" (want one of ` + validTypes() + `)`},
		{`{"type":7}`, `action "type" must be a string, got a number`},
		{`{"type":"tap","x":1,"y":2}`, `unknown action type "tap" (want one of ` + validTypes() + `)`},
		{`{"type":"CLICK","x":1,"y":2}`, `unknown action type "CLICK" (want one of ` + validTypes() + `)`},
		{`{"type":"click","y":2}`, `click: missing "x"`},
		{`{"type":"click","x":1}`, `click: missing "y"`},
		{`{"type":"click","x":null,"y":2}`, `click: missing "x"`},
		{`{"type":"click","x":"1","y":2}`, `click: "x" must be a number, got a string`},
		{`{"type":"click","x":1,"y":[2]}`, `click: "y" must be a number, got an array`},
		{`{"type":"click","x":1e999,"y":2}`, `click: "x" is out of range`},
		{`{"type":"switch_tab"}`, `switch_tab: missing "tab"`},
		{`{"type":"switch_tab","tab":-1}`, `switch_tab: "tab" must be a whole number from 0, got -1`},
		{`{"type":"close_tab","tab":1.5}`, `close_tab: "tab" must be a whole number from 0, got 1.5`},
		{`{"type":"dialog"}`, `dialog: missing "accept"`},
		{`{"type":"dialog","accept":"yes"}`, `dialog: "accept" must be a boolean, got a string`},
		{`{"type":"dialog","accept":true,"text":3}`, `dialog: "text" must be a string, got a number`},
		{`{"type":"upload"}`, `upload: missing "files"`},
		{`{"type":"upload","files":[]}`, `upload: missing "files"`},
		{`{"type":"upload","files":"a.txt"}`, `upload: "files" must be an array of strings, got a string`},
		{`{"type":"click","x":1,"y":2,"button":"middle-ish"}`, `click: "button": unknown button "middle-ish" (want left, right, wheel, back or forward)`},
		{`{"type":"click","x":1,"y":2,"button":1}`, `click: "button" must be a string, got a number`},
		{`{"type":"click","x":1,"y":2,"keys":"SHIFT"}`, `click: "keys" must be an array of strings, got a string`},
		{`{"type":"click","x":1,"y":2,"keys":[1]}`, `click: "keys"[0] must be a string, got a number`},
		{`{"type":"click","x":1,"y":2,"keys":["a"]}`, `click: "keys": "a" is not a modifier (want keys held during the action, such as "SHIFT" or "CTRL")`},
		{`{"type":"double_click","x":1}`, `double_click: missing "y"`},
		{`{"type":"move"}`, `move: missing "x"`},
		{`{"type":"drag"}`, `drag: missing "path"`},
		{`{"type":"drag","path":{"x":1,"y":2}}`, `drag: "path" must be an array of {x, y} points, got an object`},
		{`{"type":"drag","path":[{"x":1,"y":2}]}`, `drag: "path" needs at least 2 points, got 1`},
		{`{"type":"drag","path":[{"x":1,"y":2},[3,4]]}`, `drag: "path"[1] must be a JSON object, got an array`},
		{`{"type":"drag","path":[{"x":1,"y":2},{"x":3}]}`, `drag: "path"[1]: missing "y"`},
		{`{"type":"drag","path":[{"x":1,"y":2},{"x":true,"y":3}]}`, `drag: "path"[1]: "x" must be a number, got a boolean`},
		{`{"type":"keypress"}`, `keypress: missing "keys"`},
		{`{"type":"keypress","keys":[]}`, `keypress: missing "keys"`},
		{`{"type":"keypress","keys":"ctrl+c"}`, `keypress: "keys" must be an array of strings, got a string`},
		{`{"type":"scroll","x":1,"y":2}`, `scroll: missing "scroll_x" and "scroll_y"`},
		{`{"type":"scroll","x":1,"y":2,"scroll_y":"down"}`, `scroll: "scroll_y" must be a number, got a string`},
		{`{"type":"scroll","scroll_y":100}`, `scroll: missing "x"`},
		{`{"type":"type"}`, `type: missing "text"`},
		{`{"type":"type","text":42}`, `type: "text" must be a string, got a number`},
		{`{"type":"wait","duration_ms":-5}`, `wait: "duration_ms" must be between 0 and 8.64e+07 milliseconds, got -5`},
		{`{"type":"mouse_down","x":1}`, `mouse_down: missing "y"`},
		{`{"type":"hold_key","keys":["SHIFT"]}`, `hold_key: missing "duration_ms"`},
		{`{"type":"hold_key","duration_ms":100}`, `hold_key: missing "keys"`},
		{`{"type":"zoom","x1":0,"y1":0,"x2":10}`, `zoom: missing "y2"`},
		{`{"type":"zoom","x1":10,"y1":0,"x2":10,"y2":5}`, `zoom: region [(10,0)-(10,5)] is empty (want x1 < x2 and y1 < y2)`},
		{`{"type":"navigate"}`, `navigate: missing "url"`},
		{`{"type":"navigate","url":""}`, `navigate: missing "url"`},
	}
	for _, tt := range tests {
		_, err := DecodeAction(json.RawMessage(tt.in))
		if err == nil {
			t.Errorf("DecodeAction(%s) = nil error, want %q", tt.in, tt.want)
			continue
		}
		if !errors.Is(err, actions.ErrInvalid) {
			t.Errorf("DecodeAction(%s) = %v, want an error wrapping actions.ErrInvalid", tt.in, err)
		}
		if got := reason(err); got != tt.want {
			t.Errorf("DecodeAction(%s) error = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A key error comes from package actions; check only that it is named.
func TestDecodeActionUnknownKey(t *testing.T) {
	in := `{"type":"keypress","keys":["CTRL","NOSUCHKEY"]}`
	_, err := DecodeAction(json.RawMessage(in))
	if err == nil || !errors.Is(err, actions.ErrInvalid) || !strings.Contains(err.Error(), `keypress: "keys": `) || !strings.Contains(err.Error(), "NOSUCHKEY") {
		t.Errorf("DecodeAction(%s) = %v, want an ErrInvalid naming keypress, \"keys\" and NOSUCHKEY", in, err)
	}
}

func TestDecodeActions(t *testing.T) {
	in := `[{"type":"click","x":10,"y":20},{"type":"type","text":"hi"},{"type":"keypress","keys":["ENTER"]}]`
	got, err := DecodeActions(json.RawMessage(in))
	if err != nil {
		t.Fatalf("DecodeActions(%s) error: %v", in, err)
	}
	want := []actions.Action{
		{Kind: actions.Click, At: actions.Pt(10, 20), HasAt: true},
		{Kind: actions.Type, Text: "hi"},
		{Kind: actions.Keypress, Keys: actions.Chord{"Enter"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DecodeActions(%s) (-want +got):\n%s", in, diff)
	}
}

func TestDecodeActionsErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{`[]`, `actions: empty batch`},
		{`{"type":"click"}`, `actions must be a JSON array, got an object`},
		{`null`, `actions must be a JSON array, got null`},
		{`[{"type":"click","x":1,"y":2},{"type":"click","x":1}]`, `actions[1]: click: missing "y"`},
		{`[{"type":"screenshot"},"wait"]`, `actions[1]: action must be a JSON object, got a string`},
		{`[{"type":"screenshot"},]`, `actions: invalid character ']' looking for beginning of value`},
	}
	for _, tt := range tests {
		_, err := DecodeActions(json.RawMessage(tt.in))
		if err == nil {
			t.Errorf("DecodeActions(%s) = nil error, want %q", tt.in, tt.want)
			continue
		}
		if !errors.Is(err, actions.ErrInvalid) {
			t.Errorf("DecodeActions(%s) = %v, want an error wrapping actions.ErrInvalid", tt.in, err)
		}
		if got := reason(err); got != tt.want {
			t.Errorf("DecodeActions(%s) error = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestEncodeActionRoundTrip(t *testing.T) {
	in := []actions.Action{
		{Kind: actions.Click, At: actions.Pt(1, 2), HasAt: true, Button: actions.Middle, Modifiers: actions.Chord{"Control"}},
		{Kind: actions.DoubleClick, At: actions.Pt(1.5, 2), HasAt: true},
		{Kind: actions.TripleClick, At: actions.Pt(1, 2), HasAt: true, Button: actions.Right},
		{Kind: actions.MouseDown},
		{Kind: actions.MouseUp, At: actions.Pt(3, 4), HasAt: true, Button: actions.Back},
		{Kind: actions.Move, At: actions.Pt(3, 4), HasAt: true},
		{Kind: actions.Drag, Path: []actions.Point{actions.Pt(1, 2), actions.Pt(3, 4)}, Modifiers: actions.Chord{"Shift"}},
		{Kind: actions.Scroll, At: actions.Pt(5, 6), HasAt: true, DeltaX: -10, DeltaY: 300},
		{Kind: actions.Type, Text: "héllo \"quoted\"\n"},
		{Kind: actions.Keypress, Keys: actions.Chord{"Control", "Shift", "PageDown"}},
		{Kind: actions.HoldKey, Keys: actions.Chord{"Shift"}, Duration: 1234567 * time.Nanosecond},
		{Kind: actions.Wait, Duration: DefaultWait},
		{Kind: actions.Wait, Duration: 3 * time.Second},
		{Kind: actions.Zoom, Region: actions.Rect{Min: actions.Pt(0, 0), Max: actions.Pt(10, 10)}},
		{Kind: actions.Navigate, URL: "https://example.com/"},
		{Kind: actions.Screenshot},
		{Kind: actions.GoBack},
		{Kind: actions.GoForward},
		{Kind: actions.CursorPosition},
	}
	for _, a := range in {
		raw, err := EncodeAction(a)
		if err != nil {
			t.Errorf("EncodeAction(%+v) error: %v", a, err)
			continue
		}
		got, err := DecodeAction(raw)
		if err != nil {
			t.Errorf("DecodeAction(%s) error: %v", raw, err)
			continue
		}
		if diff := cmp.Diff(a, got); diff != "" {
			t.Errorf("DecodeAction(EncodeAction(%v)) = %s (-want +got):\n%s", a.Kind, raw, diff)
		}
	}
	if _, err := EncodeAction(actions.Action{}); !errors.Is(err, actions.ErrInvalid) {
		t.Errorf("EncodeAction(zero Action) = %v, want ErrInvalid", err)
	}
}

func FuzzDecodeAction(f *testing.F) {
	for _, s := range []string{
		`{"type":"click","x":512,"y":320,"button":"left"}`,
		`{"type":"click","x":1,"y":2,"button":"wheel","keys":["SHIFT"]}`,
		`{"type":"double_click","x":3,"y":4,"keys":null}`,
		`{"type":"drag","path":[{"x":1,"y":2},{"x":3,"y":4}]}`,
		`{"type":"keypress","keys":["CTRL","SHIFT","T"]}`,
		`{"type":"move","x":7,"y":8}`,
		`{"type":"scroll","x":640,"y":400,"scroll_x":0,"scroll_y":-300}`,
		`{"type":"type","text":"hi"}`,
		`{"type":"wait"}`,
		`{"type":"screenshot"}`,
		`{"type":"hold_key","keys":["a"],"duration_ms":10}`,
		`{"type":"zoom","x1":0,"y1":0,"x2":1,"y2":1}`,
		`{"type":"navigate","url":"about:blank"}`,
		`{"type":"mouse_up"}`,
		`{"type":"click","x":"1"}`,
		`[{"type":"wait"}]`,
		`{"type":"drag","path":[{"x":1e400,"y":2},{}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := DecodeAction(data)
		if err != nil {
			if !errors.Is(err, actions.ErrInvalid) {
				t.Fatalf("DecodeAction(%q) = %v, want an error wrapping actions.ErrInvalid", data, err)
			}
			return
		}
		if a.Kind == actions.KindInvalid || a.Kind.String() == fmt.Sprintf("kind(%d)", uint8(a.Kind)) {
			t.Fatalf("DecodeAction(%q) = kind %v, want a valid kind", data, a.Kind)
		}
		// What decodes must encode and decode to itself.
		raw, err := EncodeAction(a)
		if err != nil {
			t.Fatalf("EncodeAction(DecodeAction(%q)) error: %v", data, err)
		}
		b, err := DecodeAction(raw)
		if err != nil {
			t.Fatalf("DecodeAction(EncodeAction(DecodeAction(%q))) = %s: %v", data, raw, err)
		}
		if diff := cmp.Diff(a, b); diff != "" {
			t.Fatalf("round trip of %q through %s (-first +second):\n%s", data, raw, diff)
		}
		// And a batch of it too.
		if _, err := DecodeActions(json.RawMessage("[" + string(data) + "]")); err != nil {
			t.Fatalf("DecodeActions([%q]) error: %v, but DecodeAction accepted it", data, err)
		}
	})
}
