package gemini_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
	"github.com/spotter-harness/spotter/harness/gemini"
	"github.com/spotter-harness/spotter/harness/gemini/geminitest"
)

var _ harness.Stateful = (*gemini.Model)(nil)

var lookup = harness.ToolSpec{
	Name:        "lookup_booking",
	Description: "Find a booking by its reference.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"ref":{"type":"string"}},"required":["ref"]}`),
}

var clientConfig = gemini.Config{Model: "gemini-3.5-flash", Tools: []harness.ToolSpec{lookup}, Context: ctxpolicy.Policy{Keep: 1, Chunk: 2}}

// clientScript has a mixed parallel turn (a client call, a computer call
// that needs confirmation, a client call without an id), a failed client
// call, and an end.
func clientScript() []geminitest.Reply {
	return []geminitest.Reply{
		geminitest.Turn{Text: "Looking it up.", Calls: []geminitest.Call{
			{ID: "fc_1", Name: "lookup_booking", Args: map[string]any{"ref": "AB12"}, ThoughtSignature: []byte("sig1")},
			{ID: "fc_2", Name: "click", Args: map[string]any{"x": 500, "y": 250,
				"safety_decision": map[string]any{"decision": "require_confirmation", "explanation": "a purchase"}}},
			{Name: "lookup_booking", Args: map[string]any{"ref": "CD34"}},
		}}.Reply(),
		geminitest.Turn{Calls: []geminitest.Call{{ID: "fc_4", Name: "lookup_booking"}}}.Reply(),
		geminitest.Turn{Calls: []geminitest.Call{{ID: "fc_5", Name: "take_screenshot"}}}.Reply(),
		geminitest.Text("Done."),
	}
}

func clientInputs(t *testing.T) []harness.Input {
	return []harness.Input{
		{Task: "Check in passenger Ada.", Shot: shot(t, "https://a.test/", 1)},
		{Results: []harness.Result{
			{CallID: "fc_1", Output: "booking 42"},
			{CallID: "fc_2", Shot: shot(t, "https://a.test/2", 2), Ran: 1, Acknowledged: []harness.SafetyCheck{{ID: "fc_2"}}},
			{CallID: "gemini-call-3", Output: "booking 43"},
		}},
		{Results: []harness.Result{{CallID: "fc_4", Err: errors.New("no booking")}}},
		{Results: []harness.Result{{CallID: "fc_5", Shot: shot(t, "https://a.test/3", 3), Ran: 1}}},
	}
}

func TestClientTools(t *testing.T) {
	srv := geminitest.NewServer(t, clientScript()...)
	m := newModel(t, srv, clientConfig)
	in := clientInputs(t)
	turn, err := m.Next(t.Context(), in[0])
	if err != nil {
		t.Fatal(err)
	}
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
		{ID: "fc_1", Name: "lookup_booking", Input: `{"ref":"AB12"}`},
		{ID: "fc_2", Name: "click", Actions: []actions.Action{{Kind: actions.Click, At: actions.Pt(500, 250), HasAt: true}},
			Checks: []harness.SafetyCheck{{ID: "fc_2", Code: "require_confirmation", Message: "a purchase"}}},
		{ID: "gemini-call-3", Name: "lookup_booking", Input: `{"ref":"CD34"}`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("first turn calls (-want +got):\n%s", diff)
	}
	for _, in := range in[1:] {
		if _, err := m.Next(t.Context(), in); err != nil {
			t.Fatal(err)
		}
	}
	reqs := srv.Requests()
	var body struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	wantTool := `{"functionDeclarations":[{"description":"Find a booking by its reference.","name":"lookup_booking","parametersJsonSchema":{"properties":{"ref":{"type":"string"}},"required":["ref"],"type":"object"}}]}`
	if len(body.Tools) != 2 || string(body.Tools[1]) != wantTool {
		t.Errorf("request 0 tools = %s\nwant computer_use, then %s", body.Tools, wantTool)
	}
	type resp struct {
		ID, Name string
		Response map[string]any
		Images   int
	}
	for i, want := range [][]resp{
		nil,
		{
			{ID: "fc_1", Name: "lookup_booking", Response: map[string]any{"output": "booking 42"}},
			{ID: "fc_2", Name: "click", Response: map[string]any{"url": "https://a.test/2", "safety_acknowledgement": "true"}, Images: 1},
			{Name: "lookup_booking", Response: map[string]any{"output": "booking 43"}},
		},
		{{ID: "fc_4", Name: "lookup_booking", Response: map[string]any{"error": "no booking"}}},
	} {
		frs, err := reqs[i].FunctionResponses()
		if err != nil {
			t.Fatal(err)
		}
		var got []resp
		for _, f := range frs {
			got = append(got, resp{f.ID, f.Name, f.Response, len(f.Parts)})
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("request %d function responses (-want +got):\n%s", i, diff)
		}
	}
	// The thought signature of the client call goes back unchanged.
	if !bytes.Contains(reqs[1].Body, []byte(`"thoughtSignature":"c2lnMQ=="`)) {
		t.Errorf("request 1 does not echo the thought signature: %s", reqs[1].Body)
	}
}

func TestClientToolsConfig(t *testing.T) {
	srv := geminitest.NewServer(t)
	custom := gemini.Function{Declaration: &genai.FunctionDeclaration{Name: "open_app"},
		Decode: func(map[string]any) ([]actions.Action, error) { return nil, nil }}
	for _, tt := range []struct {
		name string
		cfg  gemini.Config
		want string
	}{
		{"no name", gemini.Config{Tools: []harness.ToolSpec{{}}}, "no name"},
		{"twice", gemini.Config{Tools: []harness.ToolSpec{lookup, lookup}}, "declared twice"},
		{"predefined", gemini.Config{Model: "gemini-3.5-flash", Tools: []harness.ToolSpec{{Name: "click"}}}, "predefined"},
		{"custom", gemini.Config{Custom: []gemini.Function{custom}, Tools: []harness.ToolSpec{{Name: "open_app"}}}, "Custom"},
		{"schema", gemini.Config{Tools: []harness.ToolSpec{{Name: "a", InputSchema: json.RawMessage(`3`)}}}, "not a JSON object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.APIKey, tt.cfg.BaseURL = "k", srv.URL
			if _, err := gemini.New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New(%+v) error = %v, want one containing %q", tt.cfg, err, tt.want)
			}
		})
	}
}

// TestStateRestore runs the conversation twice against fakes with the same
// script: once in one Model, once saving the state after each turn and
// restoring it into a new Model. The fakes must see the same requests.
func TestStateRestore(t *testing.T) {
	plain := geminitest.NewServer(t, clientScript()...)
	m := newModel(t, plain, clientConfig)
	for _, in := range clientInputs(t) {
		if _, err := m.Next(t.Context(), in); err != nil {
			t.Fatal(err)
		}
	}
	restarted := geminitest.NewServer(t, clientScript()...)
	var state []byte
	for i, in := range clientInputs(t) {
		m := newModel(t, restarted, clientConfig)
		if state != nil {
			if err := m.UnmarshalState(state); err != nil {
				t.Fatalf("turn %d: UnmarshalState error: %v", i, err)
			}
		}
		if _, err := m.Next(t.Context(), in); err != nil {
			t.Fatalf("turn %d: Next after restore error: %v", i, err)
		}
		var err error
		if state, err = m.MarshalState(); err != nil {
			t.Fatalf("turn %d: MarshalState error: %v", i, err)
		}
		if bytes.Contains(state, []byte("test-key")) {
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
}

func TestUnmarshalStateErrors(t *testing.T) {
	srv := geminitest.NewServer(t)
	m := newModel(t, srv, gemini.Config{Model: "gemini-3.5-flash"})
	for _, tt := range []struct {
		name, state, want string
	}{
		{"not json", `[`, "restore state"},
		{"version", `{"version":3}`, "format version 3"},
		{"other model", `{"version":1,"model":"gemini-2.5-pro","set":1}`, "saved for model"},
		{"role", `{"version":1,"model":"gemini-3.5-flash","set":2,"history":[{"role":"system"}]}`, "role"},
		{"nil content", `{"version":1,"model":"gemini-3.5-flash","set":2,"history":[null]}`, "role"},
		{"pending", `{"version":1,"model":"gemini-3.5-flash","set":2,"pending":[{"id":"x"}]}`, "no id or name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := m.UnmarshalState([]byte(tt.state)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("UnmarshalState(%s) error = %v, want one containing %q", tt.state, err, tt.want)
			}
		})
	}
}
