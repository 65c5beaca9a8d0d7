package openai_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
	"github.com/spotter-harness/spotter/harness/openai"
	"github.com/spotter-harness/spotter/harness/openai/openaitest"
	"github.com/spotter-harness/spotter/screen"
)

var _ harness.Stateful = (*openai.Model)(nil)

var lookup = harness.ToolSpec{
	Name:        "lookup_booking",
	Description: "Find a booking by its reference.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"ref":{"type":"string"}},"required":["ref"]}`),
}

// clientScript has a mixed parallel turn (a client call, a computer call
// with a safety check, another client call), a failed client call, and an
// end.
func clientScript() []openaitest.Reply {
	return []openaitest.Reply{
		{Output: []json.RawMessage{
			openaitest.Reasoning("rs_1", ""),
			openaitest.FunctionCall("call_1", "lookup_booking", `{"ref":"AB12"}`),
			openaitest.Call{ID: "call_2", Actions: []string{`{"type":"click","x":1,"y":2}`},
				Checks: []harness.SafetyCheck{{ID: "sc_1", Code: "malicious_instructions", Message: "careful"}}}.Item(),
			openaitest.FunctionCall("call_3", "lookup_booking", `{"ref":"CD34"}`),
		}},
		{Output: []json.RawMessage{openaitest.FunctionCall("call_4", "lookup_booking", ``)}},
		{Output: []json.RawMessage{openaitest.Message("Done.")}},
	}
}

func clientInputs() []harness.Input {
	return []harness.Input{
		{Task: "Check in passenger Ada.", Shot: shot("f1", "https://a.test/")},
		{Results: []harness.Result{
			{CallID: "call_1", Output: "booking 42"},
			{CallID: "call_2", Shot: shot("f2", "https://a.test/2"), Ran: 1, Acknowledged: []harness.SafetyCheck{{ID: "sc_1"}}},
			{CallID: "call_3", Output: ""},
		}},
		{Results: []harness.Result{{CallID: "call_4", Err: errors.New("no booking")}}},
	}
}

var screen4x3 = screen.Size{W: 4, H: 3}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

var clientConfig = openai.Config{Tools: []harness.ToolSpec{lookup}, Functions: []string{"navigate"}}

func TestClientTools(t *testing.T) {
	srv := openaitest.NewServer(t, clientScript()...)
	m := newModel(t, srv, clientConfig)
	in := clientInputs()
	turn := next(t, m, in[0])
	type view struct {
		ID, Name, Input string
		Actions         []actions.Action
		Checks          []harness.SafetyCheck
	}
	var got []view
	for _, c := range turn.Calls {
		if c.DecodeErr != nil {
			t.Errorf("call %s: DecodeErr %v", c.ID, c.DecodeErr)
		}
		got = append(got, view{c.ID, c.Name, string(c.Input), c.Actions, c.SafetyChecks})
	}
	want := []view{
		{ID: "call_1", Name: "lookup_booking", Input: `{"ref":"AB12"}`},
		{ID: "call_2", Name: "computer", Actions: []actions.Action{{Kind: actions.Click, At: actions.Pt(1, 2), HasAt: true}},
			Checks: []harness.SafetyCheck{{ID: "sc_1", Code: "malicious_instructions", Message: "careful"}}},
		{ID: "call_3", Name: "lookup_booking", Input: `{"ref":"CD34"}`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("first turn calls (-want +got):\n%s", diff)
	}
	if turn := next(t, m, in[1]); string(turn.Calls[0].Input) != "{}" {
		t.Errorf("call with empty arguments: Input = %s, want {}", turn.Calls[0].Input)
	}
	next(t, m, in[2])

	reqs := srv.Requests()
	var body struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	wantTool := `{"strict":false,"parameters":{"properties":{"ref":{"type":"string"}},"required":["ref"],"type":"object"},"name":"lookup_booking","description":"Find a booking by its reference.","type":"function"}`
	if len(body.Tools) != 3 || string(body.Tools[2]) != wantTool {
		t.Errorf("request 0 tools = %s\nwant the computer tool, navigate, then %s", body.Tools, wantTool)
	}
	img := "data:image/png;base64," + b64(tinyPNG)
	for i, want := range [][]openaitest.Output{
		nil,
		{
			{Type: "function_call_output", CallID: "call_1", Text: "booking 42"},
			{Type: "computer_call_output", CallID: "call_2", Image: img, Acknowledged: []string{"sc_1"}},
			{Type: "function_call_output", CallID: "call_3"},
		},
		{
			{Type: "function_call_output", CallID: "call_1", Text: "booking 42"},
			{Type: "computer_call_output", CallID: "call_2", Image: img, Acknowledged: []string{"sc_1"}},
			{Type: "function_call_output", CallID: "call_3"},
			{Type: "function_call_output", CallID: "call_4", Text: "Error: no booking"},
		},
	} {
		got, err := openaitest.Outputs(reqs[i].Body)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("request %d outputs (-want +got):\n%s", i, diff)
		}
	}
}

func TestClientToolsConfig(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  openai.Config
		want string
	}{
		{"no name", openai.Config{Tools: []harness.ToolSpec{{}}}, "no name"},
		{"twice", openai.Config{Tools: []harness.ToolSpec{lookup, lookup}}, "declared twice"},
		{"function", openai.Config{Functions: []string{"zoom"}, Tools: []harness.ToolSpec{{Name: "zoom"}}}, "also one of Functions"},
		{"schema", openai.Config{Tools: []harness.ToolSpec{{Name: "a", InputSchema: json.RawMessage(`"x"`)}}}, "not a JSON object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := openai.New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New(%+v) error = %v, want one containing %q", tt.cfg, err, tt.want)
			}
		})
	}
}

// TestStateRestore runs each conversation twice against fakes with the
// same script: once in one Model, once saving the state after each turn
// and restoring it into a new Model. The fakes must see the same requests.
func TestStateRestore(t *testing.T) {
	shots := func(n int) func() []openaitest.Reply {
		return func() []openaitest.Reply {
			var rs []openaitest.Reply
			for i := range n {
				rs = append(rs, openaitest.Reply{Output: []json.RawMessage{
					openaitest.Reasoning("rs_"+string(rune('a'+i)), "thinking"),
					openaitest.ComputerCall("call_"+string(rune('a'+i)), `{"type":"screenshot"}`),
				}})
			}
			return append(rs, openaitest.Reply{Output: []json.RawMessage{openaitest.Message("Done.")}})
		}
	}
	shotInputs := func(n int) func() []harness.Input {
		return func() []harness.Input {
			in := []harness.Input{{Task: "Look.", Shot: shot("f0", "")}}
			for i := range n {
				r := harness.Result{CallID: "call_" + string(rune('a'+i)), Ran: 1, Notes: []string{"note"}}
				if i != 1 { // a result without a screenshot reuses the last one
					r.Shot = sizedShot("f", "https://a.test/", screen4x3)
				}
				in = append(in, harness.Input{Results: []harness.Result{r}})
			}
			return in
		}
	}
	for _, tt := range []struct {
		name    string
		cfg     openai.Config
		replies func() []openaitest.Reply
		inputs  func() []harness.Input
	}{
		{"client tools", clientConfig, clientScript, clientInputs},
		{"keep screenshots", openai.Config{Context: ctxpolicy.Policy{Keep: 2, Chunk: 1}}, shots(4), shotInputs(4)},
		{"preview", openai.Config{Model: "computer-use-preview", Display: screen4x3, Context: ctxpolicy.Policy{Keep: 1, Chunk: 2}}, shots(3), shotInputs(3)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plain := openaitest.NewServer(t, tt.replies()...)
			m := newModel(t, plain, tt.cfg)
			for _, in := range tt.inputs() {
				next(t, m, in)
			}
			restarted := openaitest.NewServer(t, tt.replies()...)
			var state []byte
			for i, in := range tt.inputs() {
				m := newModel(t, restarted, tt.cfg)
				if state != nil {
					if err := m.UnmarshalState(state); err != nil {
						t.Fatalf("turn %d: UnmarshalState error: %v", i, err)
					}
				}
				next(t, m, in)
				var err error
				if state, err = m.MarshalState(); err != nil {
					t.Fatalf("turn %d: MarshalState error: %v", i, err)
				}
				if bytes.Contains(state, []byte("sk-test")) {
					t.Errorf("turn %d: the state holds the API key", i)
				}
			}
			a, b := plain.Requests(), restarted.Requests()
			if len(a) != len(b) {
				t.Fatalf("%d requests with restarts, %d without", len(b), len(a))
			}
			for i := range a {
				if diff := cmp.Diff(string(a[i].Body), string(b[i].Body)); diff != "" {
					t.Errorf("request %d with restarts differs (-without +with):\n%s", i, diff)
				}
			}
		})
	}
}

func TestUnmarshalStateErrors(t *testing.T) {
	srv := openaitest.NewServer(t)
	m := newModel(t, srv, openai.Config{})
	for _, tt := range []struct {
		name, state, want string
	}{
		{"not json", `{`, "restore state"},
		{"version", `{"version":3}`, "format version 3"},
		{"other model", `{"version":1,"model":"gpt-4o","tool":"computer"}`, "saved for model"},
		{"empty item", `{"version":1,"model":"gpt-5.4","tool":"computer","items":[{}]}`, "item 0 is empty"},
		{"image count", `{"version":2,"model":"gpt-5.4","tool":"computer","items":[{"full":{},"omit":{}}],"window":{}}`, "state counts 0"},
		{"pending", `{"version":1,"model":"gpt-5.4","tool":"computer","items":[],"pending":[{}]}`, "no id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := m.UnmarshalState([]byte(tt.state)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("UnmarshalState(%s) error = %v, want one containing %q", tt.state, err, tt.want)
			}
		})
	}
}
