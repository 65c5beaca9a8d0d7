package openai_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/openai"
	"github.com/spotter-harness/spotter/screen"
)

var display = screen.Size{W: 1280, H: 800}

func TestDecodeCall(t *testing.T) {
	for _, tt := range []struct {
		raw, name string
		want      []actions.Action
		checks    []harness.SafetyCheck
	}{
		{`{"type":"computer_call","id":"cu_1","call_id":"call_1","actions":[{"type":"click","x":10,"y":20},{"type":"type","text":"hi"}],"pending_safety_checks":[{"id":"sc_1","code":"irrelevant_domain","message":"off task"}],"status":"completed"}`,
			"computer", []actions.Action{{Kind: actions.Click, At: actions.Pt(10, 20), HasAt: true}, {Kind: actions.Type, Text: "hi"}},
			[]harness.SafetyCheck{{ID: "sc_1", Code: "irrelevant_domain", Message: "off task"}}},
		{`{"type":"computer_call","call_id":"call_1","action":{"type":"scroll","x":5,"y":6,"scroll_x":0,"scroll_y":300}}`,
			"computer_use_preview", []actions.Action{{Kind: actions.Scroll, At: actions.Pt(5, 6), HasAt: true, DeltaY: 300}}, nil},
	} {
		c, err := openai.DecodeCall(json.RawMessage(tt.raw), display)
		if err != nil {
			t.Errorf("DecodeCall(%s) error: %v", tt.raw, err)
			continue
		}
		if c.ID != "call_1" || c.Name != tt.name || c.Space != screen.Image || string(c.Raw) != tt.raw {
			t.Errorf("DecodeCall(%s) = id %q, name %q, space %v, raw %s", tt.raw, c.ID, c.Name, c.Space, c.Raw)
		}
		if diff := cmp.Diff(tt.want, c.Actions); diff != "" {
			t.Errorf("DecodeCall(%s) actions (-want +got):\n%s", tt.raw, diff)
		}
		if diff := cmp.Diff(tt.checks, c.SafetyChecks); diff != "" {
			t.Errorf("DecodeCall(%s) safety checks (-want +got):\n%s", tt.raw, diff)
		}
	}
}

func TestDecodeCallErrors(t *testing.T) {
	for _, tt := range []struct {
		raw, id, want string
	}{
		{`nope`, "", "must be a JSON object"},
		{`{"type":"message","call_id":"c1","actions":[]}`, "c1", `item type "message"`},
		{`{"type":"computer_call","actions":[{"type":"click","x":1,"y":2}]}`, "", `no "call_id"`},
		{`{"type":"computer_call","call_id":"c1"}`, "c1", `neither "actions" nor "action"`},
		{`{"type":"computer_call","call_id":"c1","actions":[{"type":"fly"}]}`, "c1", "fly"},
		{`{"type":"computer_call","call_id":"c1","actions":[{"type":"click","x":1,"y":900}]}`, "c1", "outside the 1280x800 display"},
		{`{"type":"computer_call","call_id":"c1","pending_safety_checks":"x","actions":[]}`, "c1", `"pending_safety_checks" must be an array of {"id", "code", "message"} strings, got a string`},
		{`{"type":"computer_call","call_id":"c1","pending_safety_checks":[{"id":5}],"actions":[]}`, "c1", `"pending_safety_checks" must be an array`},
		{`{"type":"computer_call","call_id":5,"actions":[{"type":"wait"}]}`, "", `"call_id" must be a string, got a number`},
		{`{"type":["computer_call"],"call_id":"c1","actions":[{"type":"wait"}]}`, "c1", `"type" must be a string, got an array`},
		{`{"type":"computer_call","call_id":"c1","actions":[{"type":"click","x":"1","y":2}]}`, "c1", `"x" must be a number, got a string`},
		{`[{"type":"computer_call"}]`, "", "must be a JSON object, got an array"},
	} {
		c, err := openai.DecodeCall(json.RawMessage(tt.raw), display)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, actions.ErrInvalid) {
			t.Errorf("DecodeCall(%s) error = %v, want ErrInvalid containing %q", tt.raw, err, tt.want)
			continue
		}
		if c.ID != tt.id || c.DecodeErr == nil || c.Actions != nil {
			t.Errorf("DecodeCall(%s) = call %q with DecodeErr %v and %d actions, want call %q with the error and none", tt.raw, c.ID, c.DecodeErr, len(c.Actions), tt.id)
		}
		if strings.Contains(err.Error(), "Go struct") || strings.Contains(err.Error(), "json: cannot") {
			t.Errorf("DecodeCall(%s) error = %q, which speaks Go, not JSON", tt.raw, err)
		}
	}
}

func TestEncodeResult(t *testing.T) {
	c, err := openai.DecodeCall(json.RawMessage(`{"type":"computer_call","call_id":"call_7","actions":[{"type":"click","x":1,"y":2}],"pending_safety_checks":[{"id":"sc_1","code":"c","message":"m"},{"id":"sc_2"}]}`), display)
	if err != nil {
		t.Fatal(err)
	}
	r := harness.Result{Shot: shot("f2", "https://a.test/"), Ran: 1, Acknowledged: []harness.SafetyCheck{{ID: "sc_1"}, {ID: "sc_9"}},
		Notes: []string{"A new tab opened."}}
	got, err := openai.EncodeResult(c, r)
	if err != nil {
		t.Fatalf("EncodeResult error: %v", err)
	}
	want := `{"call_id":"call_7","output":{"image_url":"data:image/png;base64,` + b64(tinyPNG) + `","type":"computer_screenshot","current_url":"https://a.test/"},"acknowledged_safety_checks":[{"id":"sc_1","code":"c","message":"m"}],"type":"computer_call_output"}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("EncodeResult (-want +got):\n%s", diff)
	}
	msg := string(openai.ResultMessage(c, r))
	if want := `{"content":"computer_call call_7: A new tab opened.","role":"user"}`; msg != want {
		t.Errorf("ResultMessage = %s, want %s", msg, want)
	}
	if m := openai.ResultMessage(c, harness.Result{Shot: r.Shot}); m != nil {
		t.Errorf("ResultMessage(nothing to say) = %s, want nil", m)
	}
	if _, err := openai.EncodeResult(c, harness.Result{}); err == nil || !strings.Contains(err.Error(), "needs a screenshot") {
		t.Errorf("EncodeResult(no screenshot) error = %v", err)
	}
	if _, err := openai.EncodeResult(c, harness.Result{CallID: "x", Shot: r.Shot}); err == nil {
		t.Errorf("EncodeResult(result for another call) = nil error")
	}
	client := harness.Call{ID: "call_c", Name: "lookup_booking", Input: json.RawMessage(`{}`)}
	got, err = openai.EncodeResult(client, harness.Result{Err: errors.New("no booking")})
	if want := `{"output":"Error: no booking","call_id":"call_c","type":"function_call_output"}`; err != nil || string(got) != want {
		t.Errorf("EncodeResult(client call) = %s, %v, want %s", got, err, want)
	}
}
