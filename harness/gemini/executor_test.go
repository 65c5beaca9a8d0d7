package gemini_test

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
	"github.com/spotter-harness/spotter/harness/gemini"
	"github.com/spotter-harness/spotter/screen"
)

func TestDecodePart(t *testing.T) {
	for _, tt := range []struct {
		raw  string
		set  gemini.FunctionSet
		id   string
		want []actions.Action
	}{
		{`{"functionCall":{"id":"fc_1","name":"click_at","args":{"x":500,"y":300}}}`, gemini.FunctionsAuto, "fc_1",
			[]actions.Action{{Kind: actions.Click, At: actions.Pt(500, 300), HasAt: true}}},
		{`{"functionCall":{"id":"fc_1","name":"click","args":{"x":5,"y":6}},"thoughtSignature":"c2ln"}`, gemini.FunctionsAuto, "fc_1",
			[]actions.Action{{Kind: actions.Click, At: actions.Pt(5, 6), HasAt: true}}},
		{`{"functionCall":{"name":"navigate","args":{"url":"https://a.test/"}}}`, gemini.FunctionsLegacy, "gemini-call-1",
			[]actions.Action{{Kind: actions.Navigate, URL: "https://a.test/"}}},
	} {
		c, err := gemini.DecodePart(json.RawMessage(tt.raw), tt.set)
		if err != nil {
			t.Errorf("DecodePart(%s, %v) error: %v", tt.raw, tt.set, err)
			continue
		}
		if c.ID != tt.id || c.Space != screen.Grid1000 || string(c.Raw) != tt.raw {
			t.Errorf("DecodePart(%s) = id %q, space %v, raw %s; want id %q", tt.raw, c.ID, c.Space, c.Raw, tt.id)
		}
		if diff := cmp.Diff(tt.want, c.Actions); diff != "" {
			t.Errorf("DecodePart(%s) actions (-want +got):\n%s", tt.raw, diff)
		}
	}
	c, err := gemini.DecodePart(json.RawMessage(`{"functionCall":{"id":"fc_9","name":"click_at","args":{"x":1,"y":2,"safety_decision":{"decision":"require_confirmation","explanation":"checkout"}}}}`), gemini.FunctionsAuto)
	if want := []harness.SafetyCheck{{ID: "fc_9", Code: "require_confirmation", Message: "checkout"}}; err != nil || !cmp.Equal(c.SafetyChecks, want) {
		t.Errorf("DecodePart(safety_decision) = %+v, %v, want checks %+v", c.SafetyChecks, err, want)
	}
}

func TestDecodePartErrors(t *testing.T) {
	for _, tt := range []struct {
		raw, id, want string
	}{
		{`x`, "", "must be a JSON object"},
		{`{"text":"hi"}`, "", `no "functionCall"`},
		{`{"functionCall":{"id":"f","args":{}}}`, "f", "no name"},
		{`{"functionCall":{"id":"f","name":"fly","args":{}}}`, "f", `unknown function "fly"`},
		{`{"functionCall":{"id":"f","name":"key_down","args":{"key":"a"}}}`, "f", "not supported"},
		{`{"functionCall":{"id":"f","name":"click_at","args":{"x":"left"}}}`, "f", "click_at"},
		{`{"functionCall":{"id":"f","name":"click","args":{"x":1,"y":2,"safety_decision":"yes"}}}`, "f", "safety_decision"},
	} {
		c, err := gemini.DecodePart(json.RawMessage(tt.raw), gemini.FunctionsAuto)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, actions.ErrInvalid) {
			t.Errorf("DecodePart(%s) error = %v, want ErrInvalid containing %q", tt.raw, err, tt.want)
			continue
		}
		if c.ID != tt.id || c.DecodeErr == nil || c.Actions != nil {
			t.Errorf("DecodePart(%s) = call %q with DecodeErr %v and %d actions, want call %q with the error", tt.raw, c.ID, c.DecodeErr, len(c.Actions), tt.id)
		}
	}
}

func TestEncodeResult(t *testing.T) {
	c, err := gemini.DecodePart(json.RawMessage(`{"functionCall":{"name":"click_at","args":{"x":1,"y":2,"safety_decision":{"decision":"require_confirmation"}}}}`), gemini.FunctionsAuto)
	if err != nil {
		t.Fatal(err)
	}
	s := shot(t, "https://a.test/", 7)
	png := base64.StdEncoding.EncodeToString(tinyPNG(t, color.Gray{Y: 7}))
	for _, tt := range []struct {
		name string
		r    harness.Result
		want string
	}{
		{"approved", harness.Result{CallID: c.ID, Shot: s, Ran: 1, Acknowledged: c.SafetyChecks},
			`{"functionResponse":{"name":"click_at","parts":[{"inlineData":{"data":"` + png + `","mimeType":"image/png"}}],"response":{"safety_acknowledgement":"true","url":"https://a.test/"}}}`},
		{"denied", harness.Result{Shot: s, Err: errors.New("denied: a human said no")},
			`{"functionResponse":{"name":"click_at","parts":[{"inlineData":{"data":"` + png + `","mimeType":"image/png"}}],"response":{"error":"denied: a human said no","url":"https://a.test/"}}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := gemini.EncodeResult(c, tt.r)
			if err != nil {
				t.Fatalf("EncodeResult error: %v", err)
			}
			if diff := cmp.Diff(jsonValue(t, tt.want), jsonValue(t, string(got))); diff != "" {
				t.Errorf("EncodeResult (-want +got):\n%s", diff)
			}
		})
	}
	withID, _ := gemini.DecodePart(json.RawMessage(`{"functionCall":{"id":"fc_3","name":"take_screenshot"}}`), gemini.FunctionsAuto)
	got, err := gemini.EncodeResult(withID, harness.Result{Shot: s})
	if err != nil || !strings.Contains(string(got), `"id":"fc_3","name":"take_screenshot",`) {
		t.Errorf("EncodeResult(call with id) = %s, %v", got, err)
	}
	if _, err := gemini.EncodeResult(c, harness.Result{CallID: "other"}); err == nil {
		t.Errorf("EncodeResult(result for another call) = nil error")
	}
	client := harness.Call{ID: "fc_c", Name: "lookup_booking", Input: json.RawMessage(`{}`)}
	got, err = gemini.EncodeResult(client, harness.Result{Output: "booking 42"})
	if want := `{"functionResponse":{"id":"fc_c","name":"lookup_booking","response":{"output":"booking 42"}}}`; err != nil || !cmp.Equal(jsonValue(t, want), jsonValue(t, string(got))) {
		t.Errorf("EncodeResult(client call) = %s, %v, want %s", got, err, want)
	}
}

// jsonValue decodes s, so that JSON texts compare whatever their key order.
func jsonValue(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}
