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
