package anthropic_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"image/color"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
)

func TestDecodeCall(t *testing.T) {
	raw := json.RawMessage(`{"type":"tool_use","id":"toolu_1","name":"computer","input":{"action":"left_click","coordinate":[10,20],"text":"ctrl"}}`)
	c, err := anthropic.DecodeCall(raw, display)
	if err != nil {
		t.Fatalf("DecodeCall(%s) error: %v", raw, err)
	}
	want := callView{ID: "toolu_1", Name: "computer",
		Actions: []actions.Action{{Kind: actions.Click, At: at(10, 20), HasAt: true, Modifiers: actions.Chord{actions.Control}}}}
	if diff := cmp.Diff([]callView{want}, callsOf([]harness.Call{c})); diff != "" {
		t.Errorf("DecodeCall(%s) (-want +got):\n%s", raw, diff)
	}
	if string(c.Raw) != string(raw) {
		t.Errorf("DecodeCall(%s).Raw = %s", raw, c.Raw)
	}
}

func TestDecodeCallErrors(t *testing.T) {
	for _, tt := range []struct {
		raw, id, want string
	}{
		{`nope`, "", "must be a JSON object"},
		{`[]`, "", "must be a JSON object"},
		{`{"type":"text","text":"hi"}`, "", `block type "text"`},
		{`{"type":"tool_use","name":"computer","input":{"action":"screenshot"}}`, "", `no "id"`},
		{`{"type":"tool_use","id":"t1","name":"bash","input":{}}`, "t1", "unknown tool"},
		{`{"type":"tool_use","id":"t1","name":"computer","input":{"action":"fly"}}`, "t1", `unknown action "fly"`},
		{`{"type":"tool_use","id":"t1","name":"computer"}`, "t1", "JSON object"},
		{`{"type":"tool_use","id":"t1","name":"computer","input":{"action":"left_click","coordinate":[1281,5]}}`, "t1", "outside the 1280x800 display"},
		{`{"type":"tool_use","id":"t1","name":"computer","input":{"action":"left_click_drag","coordinate":[1,5]}}`, "t1", "start_coordinate"},
	} {
		c, err := anthropic.DecodeCall(json.RawMessage(tt.raw), display)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("DecodeCall(%s) error = %v, want one containing %q", tt.raw, err, tt.want)
			continue
		}
		if !errors.Is(err, actions.ErrInvalid) && !errors.Is(err, anthropic.ErrUnknownTool) {
			t.Errorf("DecodeCall(%s) error = %v, want ErrInvalid or ErrUnknownTool", tt.raw, err)
		}
		if c.ID != tt.id || c.DecodeErr == nil {
			t.Errorf("DecodeCall(%s) = call %q with DecodeErr %v, want call %q with the error", tt.raw, c.ID, c.DecodeErr, tt.id)
		}
	}
}

func TestEncodeResult(t *testing.T) {
	c, err := anthropic.DecodeCall(json.RawMessage(`{"type":"tool_use","id":"toolu_9","name":"computer","input":{"action":"type","text":"hi"}}`), display)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		r    harness.Result
		want string
	}{
		{"ok", harness.Result{CallID: "toolu_9", Shot: shot(t, "f2", 2), Ran: 1},
			`{"tool_use_id":"toolu_9","content":[{"source":{"data":"` + base64.StdEncoding.EncodeToString(pngOf(t, color.Gray{Y: 2})) + `","media_type":"image/png","type":"base64"},"type":"image"}],"type":"tool_result"}`},
		{"refused", harness.Result{Shot: shot(t, "f2", 2), Err: errors.New("denied: not that field")},
			`{"tool_use_id":"toolu_9","is_error":true,"content":[{"text":"Error: denied: not that field","type":"text"}],"type":"tool_result"}`},
		// The screen may have changed: the screenshot goes with the error.
		{"outcome unknown", harness.Result{Shot: shot(t, "f2", 2), Err: harness.ResultErr(harness.ErrOutcomeUnknown.Error())},
			`{"tool_use_id":"toolu_9","is_error":true,"content":[{"text":"Error: ` + harness.ErrOutcomeUnknown.Error() +
				`","type":"text"},{"source":{"data":"` + base64.StdEncoding.EncodeToString(pngOf(t, color.Gray{Y: 2})) +
				`","media_type":"image/png","type":"base64"},"type":"image"}],"type":"tool_result"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := anthropic.EncodeResult(c, tt.r)
			if err != nil {
				t.Fatalf("EncodeResult error: %v", err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("EncodeResult (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := anthropic.EncodeResult(c, harness.Result{CallID: "other"}); err == nil {
		t.Errorf("EncodeResult(result for another call) = nil error")
	}
	if _, err := anthropic.EncodeResult(harness.Call{}, harness.Result{}); err == nil {
		t.Errorf("EncodeResult(call without id) = nil error")
	}
	client := harness.Call{ID: "toolu_c", Name: "lookup_booking", Input: json.RawMessage(`{}`)}
	got, err := anthropic.EncodeResult(client, harness.Result{Output: "booking 42"})
	if want := `{"tool_use_id":"toolu_c","content":[{"text":"booking 42","type":"text"}],"type":"tool_result"}`; err != nil || string(got) != want {
		t.Errorf("EncodeResult(client call) = %s, %v, want %s", got, err, want)
	}
}

// TestDecodeCallLikeModel: the executor reads every tool a Model declares
// with Config.Browser, the computer tool and the browser tool, exactly as
// that Model reads them in a turn from Claude: the same actions, and an
// error for the same blocks.
func TestDecodeCallLikeModel(t *testing.T) {
	blocks := []json.RawMessage{
		anthropictest.ToolUse("toolu_01", "computer", map[string]any{"action": "left_click", "coordinate": []int{10, 20}, "text": "shift"}),
		anthropictest.ToolUse("toolu_02", "computer", map[string]any{"action": "type", "text": "hello"}),
		anthropictest.ToolUse("toolu_03", "computer", map[string]any{"action": "key", "text": "ctrl+a"}),
		anthropictest.ToolUse("toolu_04", "computer", map[string]any{"action": "scroll", "coordinate": []int{5, 6}, "scroll_direction": "down", "scroll_amount": 3}),
		anthropictest.ToolUse("toolu_05", "computer", map[string]any{"action": "left_click_drag", "start_coordinate": []int{1, 2}, "coordinate": []int{30, 40}}),
		anthropictest.ToolUse("toolu_06", "computer", map[string]any{"action": "zoom", "region": []int{0, 0, 100, 50}}),
		anthropictest.ToolUse("toolu_07", "computer", map[string]any{"action": "wait", "duration": 1}),
		anthropictest.ToolUse("toolu_08", "computer", map[string]any{"action": "screenshot"}),
		anthropictest.ToolUse("toolu_09", "browser", map[string]any{"action": "list_tabs"}),
		anthropictest.ToolUse("toolu_10", "browser", map[string]any{"action": "switch_tab", "tab": 1}),
		anthropictest.ToolUse("toolu_11", "browser", map[string]any{"action": "close_tab", "tab": 1}),
		anthropictest.ToolUse("toolu_12", "browser", map[string]any{"action": "dialog", "accept": true, "text": "Ada"}),
		anthropictest.ToolUse("toolu_13", "browser", map[string]any{"action": "dialog", "accept": false}),
		anthropictest.ToolUse("toolu_14", "browser", map[string]any{"action": "upload", "files": []string{"/tmp/cv.pdf"}}),
		// Malformed: both read them as errors.
		anthropictest.ToolUse("toolu_15", "browser", map[string]any{"action": "dialog", "accept": "yes"}),
		anthropictest.ToolUse("toolu_16", "browser", map[string]any{"action": "upload", "files": "cv.pdf"}),
		anthropictest.ToolUse("toolu_17", "browser", map[string]any{"action": "fly"}),
		anthropictest.ToolUse("toolu_18", "computer", map[string]any{"action": "left_click", "coordinate": []string{"a", "b"}}),
		anthropictest.ToolUse("toolu_19", "computer", "left_click"),
		anthropictest.ToolUse("toolu_20", "bash", map[string]any{"command": "ls"}),
	}
	srv := anthropictest.NewServer(t, anthropictest.Reply{Content: blocks})
	m := newModel(t, srv, anthropic.ExecutorVersion, func(c *anthropic.Config) { c.Browser = true })
	turn := next(t, m, harness.Input{Task: "t", Shot: shot(t, "f1", 1)})
	if len(turn.Calls) != len(blocks) {
		t.Fatalf("the Model read %d calls, want %d", len(turn.Calls), len(blocks))
	}
	for i, raw := range blocks {
		want := turn.Calls[i]
		got, err := anthropic.DecodeCall(raw, display)
		if (err != nil) != (want.DecodeErr != nil) || (err != nil) != (got.DecodeErr != nil) {
			t.Errorf("DecodeCall(%s) error = %v (DecodeErr %v), the Model's DecodeErr = %v", raw, err, got.DecodeErr, want.DecodeErr)
			continue
		}
		if got.ID != want.ID || got.Name != want.Name {
			t.Errorf("DecodeCall(%s) = id %q name %q, the Model's = %q %q", raw, got.ID, got.Name, want.ID, want.Name)
		}
		if diff := cmp.Diff(want.Actions, got.Actions); diff != "" {
			t.Errorf("DecodeCall(%s) actions (-Model's +DecodeCall's):\n%s", raw, diff)
		}
		if err == nil {
			if _, err := anthropic.EncodeResult(got, harness.Result{CallID: got.ID, Shot: shot(t, "f2", 2), Ran: 1}); err != nil {
				t.Errorf("EncodeResult(DecodeCall(%s)) error: %v", raw, err)
			}
		}
	}
}

// TestDecodeCallMalformed: a block of the wrong shape gets an error that
// says which field is wrong in JSON's terms, never a Go type. A block
// with a usable id keeps it, so the error is answered as a tool_result; a
// block without one has none.
func TestDecodeCallMalformed(t *testing.T) {
	for _, tt := range []struct {
		raw, id, want string
	}{
		{`{"type":"tool_use","id":5,"name":"computer","input":{"action":"screenshot"}}`, "", `"id" must be a string, got a number`},
		{`{"type":"tool_use","id":"","name":"computer","input":{"action":"screenshot"}}`, "", `no "id"`},
		{`{"type":"tool_use","id":null,"name":"computer","input":{"action":"screenshot"}}`, "", `no "id"`},
		{`{"type":5,"id":"t1","name":"computer","input":{"action":"screenshot"}}`, "", `"type" must be a string, got a number`},
		{`{"type":"tool_use","id":"t1","name":["computer"],"input":{"action":"screenshot"}}`, "t1", `"name" must be a string, got an array`},
		{`{"type":"tool_use","id":"t1","name":"computer","input":"{\"action\":\"screenshot\"}"}`, "t1", "the input must be a JSON object"},
		{`{"type":"tool_use","id":"t1","name":"computer","input":{"action":"left_click","coordinate":{"x":1,"y":2}}}`, "t1", `"coordinate" must be [x, y]`},
		{`{"type":"tool_use","id":"t1","name":"computer","input":{"action":"scroll","coordinate":[1,2],"scroll_direction":"down","scroll_amount":"3"}}`, "t1", "scroll_amount"},
		{`{"type":"tool_use","id":"t1","name":"browser","input":{"action":"switch_tab","tab":"1"}}`, "t1", `"tab" must be a tab number`},
		{`{"type":"tool_use","id":"t1","name":"browser","input":[]}`, "t1", "browser: the input is not a JSON object"},
		{`{"type":"tool_use","id":"t1","name":"browser","input":{"action":"list_tabs"}} trailing`, "", "got text that is not JSON"},
		{`"tool_use"`, "", "got a string"},
	} {
		c, err := anthropic.DecodeCall(json.RawMessage(tt.raw), display)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, actions.ErrInvalid) {
			t.Errorf("DecodeCall(%s) error = %v, want ErrInvalid containing %q", tt.raw, err, tt.want)
			continue
		}
		if goish(err.Error()) {
			t.Errorf("DecodeCall(%s) error = %q, which speaks Go, not JSON", tt.raw, err)
		}
		if c.ID != tt.id || c.DecodeErr == nil || c.Actions != nil {
			t.Errorf("DecodeCall(%s) = call %q with DecodeErr %v and %d actions, want call %q with the error", tt.raw, c.ID, c.DecodeErr, len(c.Actions), tt.id)
		}
		if c.ID == "" {
			continue
		}
		out, err := anthropic.EncodeResult(c, harness.Result{CallID: c.ID, Err: c.DecodeErr})
		if err != nil || !strings.Contains(string(out), `"is_error":true`) || !strings.Contains(string(out), `"tool_use_id":"`+c.ID+`"`) {
			t.Errorf("EncodeResult(DecodeCall(%s)) = %s, %v, want an is_error tool_result for %s", tt.raw, out, err, c.ID)
		}
	}
}

// goish reports whether an error message shows Go types or values.
func goish(s string) bool {
	for _, g := range []string{"Go struct", "Go value", "map[", "interface {}", "struct {", "[]string", "[]interface", "float64", "json: cannot"} {
		if strings.Contains(s, g) {
			return true
		}
	}
	return false
}
