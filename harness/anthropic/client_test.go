package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/screentest"
)

var _ harness.Stateful = (*anthropic.Model)(nil)

var lookup = harness.ToolSpec{
	Name:        "lookup_booking",
	Description: "Find a booking by its reference.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"ref":{"type":"string"}},"required":["ref"]}`),
}

func withTools(c *anthropic.Config) { c.Tools = []harness.ToolSpec{lookup} }

// clientScript is a conversation with a mixed parallel turn (a computer
// call between two client calls), a failed client call, and an end.
func clientScript() []anthropictest.Reply {
	return []anthropictest.Reply{
		{Content: []json.RawMessage{
			anthropictest.Text("Looking up the booking while clicking."),
			anthropictest.ToolUse("toolu_1", "lookup_booking", map[string]string{"ref": "AB12"}),
			anthropictest.ToolUse("toolu_2", "computer", json.RawMessage(`{"action":"left_click","coordinate":[10,20]}`)),
			anthropictest.ToolUse("toolu_3", "lookup_booking", map[string]string{"ref": "CD34"}),
		}},
		{Content: []json.RawMessage{anthropictest.ToolUse("toolu_4", "lookup_booking", map[string]string{"ref": "ZZ"})}},
		{Content: []json.RawMessage{anthropictest.Text("Done.")}},
	}
}

// clientInputs answers the turns of clientScript.
func clientInputs(t *testing.T) []harness.Input {
	return []harness.Input{
		{Task: "Check in passenger Ada.", Shot: shot(t, "f1", 1)},
		{Results: []harness.Result{
			{CallID: "toolu_1", Output: "booking 42"},
			{CallID: "toolu_2", Shot: shot(t, "f2", 2), Ran: 1},
			{CallID: "toolu_3", Output: ""},
		}},
		{Results: []harness.Result{{CallID: "toolu_4", Err: errors.New("no booking ZZ")}}},
	}
}

func TestClientTools(t *testing.T) {
	srv := anthropictest.NewServer(t, clientScript()...)
	m := newModel(t, srv, anthropic.Computer20250124, withTools)
	in := clientInputs(t)

	turn := next(t, m, in[0])
	want := []callView{
		{ID: "toolu_1", Name: "lookup_booking"},
		{ID: "toolu_2", Name: "computer", Actions: []actions.Action{{Kind: actions.Click, At: at(10, 20), HasAt: true}}},
		{ID: "toolu_3", Name: "lookup_booking"},
	}
	if diff := cmp.Diff(want, callsOf(turn.Calls)); diff != "" {
		t.Errorf("first turn calls (-want +got):\n%s", diff)
	}
	if got := string(turn.Calls[0].Input); got != `{"ref":"AB12"}` {
		t.Errorf("client call Input = %s, want {\"ref\":\"AB12\"}", got)
	}
	if turn.Calls[1].Input != nil {
		t.Errorf("computer call Input = %s, want nil", turn.Calls[1].Input)
	}
	next(t, m, in[1])
	next(t, m, in[2])

	reqs := srv.Requests()
	var body struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Tools) != 2 {
		t.Fatalf("request 0 declares %d tools, want 2", len(body.Tools))
	}
	wantTool := `{"input_schema":{"properties":{"ref":{"type":"string"}},"required":["ref"],"type":"object"},"name":"lookup_booking","description":"Find a booking by its reference."}`
	if got := string(body.Tools[1]); got != wantTool {
		t.Errorf("custom tool = %s\nwant %s", got, wantTool)
	}
	for i, want := range [][]anthropictest.ToolResult{
		nil,
		{
			{ToolUseID: "toolu_1", Text: "booking 42"},
			{ToolUseID: "toolu_2", Images: []string{"image/png"}},
			{ToolUseID: "toolu_3"},
		},
		{{ToolUseID: "toolu_4", IsError: true, Text: "Error: no booking ZZ"}},
	} {
		got, err := anthropictest.ToolResults(reqs[i].Body)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("request %d tool results (-want +got):\n%s", i, diff)
		}
	}
}

func TestClientToolsConfig(t *testing.T) {
	srv := anthropictest.NewServer(t)
	for _, tt := range []struct {
		name  string
		tools []harness.ToolSpec
		want  string
	}{
		{"no name", []harness.ToolSpec{{}}, "no name"},
		{"computer", []harness.ToolSpec{{Name: "computer"}}, "computer tool"},
		{"twice", []harness.ToolSpec{lookup, lookup}, "declared twice"},
		{"schema not object", []harness.ToolSpec{{Name: "a", InputSchema: json.RawMessage(`[1]`)}}, "not a JSON object"},
		{"schema type", []harness.ToolSpec{{Name: "a", InputSchema: json.RawMessage(`{"type":"string"}`)}}, `want "object"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := anthropic.New(anthropic.Config{BaseURL: srv.URL, Display: display, Tools: tt.tools})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New(Tools: %+v) error = %v, want one containing %q", tt.tools, err, tt.want)
			}
		})
	}
}

// TestStateRestore runs each conversation twice against fakes with the
// same script: once in one Model, once saving the state after each turn
// and restoring it into a new Model. The fakes must see the same requests.
func TestStateRestore(t *testing.T) {
	for _, tt := range []struct {
		name    string
		v       anthropic.ToolVersion
		edit    func(*anthropic.Config)
		replies func() []anthropictest.Reply
		inputs  func(t *testing.T) []harness.Input
	}{
		{"client tools", anthropic.Computer20250124, withTools, clientScript, clientInputs},
		{"drag after move", anthropic.Computer20241022, func(*anthropic.Config) {}, func() []anthropictest.Reply {
			return []anthropictest.Reply{
				{Content: []json.RawMessage{anthropictest.ToolUse("toolu_1", "computer", json.RawMessage(`{"action":"mouse_move","coordinate":[5,6]}`))}},
				{Content: []json.RawMessage{anthropictest.ToolUse("toolu_2", "computer", json.RawMessage(`{"action":"screenshot"}`))}},
				{Content: []json.RawMessage{anthropictest.ToolUse("toolu_3", "computer", json.RawMessage(`{"action":"left_click_drag","coordinate":[50,60]}`))}},
				{Content: []json.RawMessage{anthropictest.Text("Done.")}},
			}
		}, func(t *testing.T) []harness.Input {
			return []harness.Input{
				{Task: "Drag it.", Shot: shot(t, "f1", 1)},
				{Results: []harness.Result{{CallID: "toolu_1", Shot: shot(t, "f2", 2), Ran: 1}}},
				{Results: []harness.Result{{CallID: "toolu_2", Shot: shot(t, "f3", 3), Ran: 1}}},
				{Results: []harness.Result{{CallID: "toolu_3", Shot: shot(t, "f4", 4), Ran: 1}}},
			}
		}},
		{"pause and refusal", anthropic.Computer20251124, func(c *anthropic.Config) { c.MaxPauses = -1 }, func() []anthropictest.Reply {
			return []anthropictest.Reply{
				{Content: []json.RawMessage{anthropictest.Text("Thinking about it. ")}, Stop: "pause_turn"},
				{Content: []json.RawMessage{anthropictest.ToolUse("toolu_1", "computer", json.RawMessage(`{"action":"zoom","region":[0,0,10,10]}`))}},
				{Stop: "refusal", Content: []json.RawMessage{anthropictest.Text("No.")}},
				{Content: []json.RawMessage{anthropictest.Text("Done.")}},
			}
		}, func(t *testing.T) []harness.Input {
			return []harness.Input{
				{Task: "Look closely.", Shot: shot(t, "f1", 1)},
				{},
				{Results: []harness.Result{{CallID: "toolu_1", Shot: shot(t, "f2", 2), Zoom: zoomShot(t), Ran: 1}}},
				{Task: "Try again, politely."},
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plain := anthropictest.NewServer(t, tt.replies()...)
			m := newModel(t, plain, tt.v, tt.edit)
			var want [][]callView
			for _, in := range tt.inputs(t) {
				turn, err := m.Next(t.Context(), in)
				if err != nil {
					t.Fatalf("Next(%+v) error: %v", in, err)
				}
				want = append(want, callsOf(turn.Calls))
			}

			restarted := anthropictest.NewServer(t, tt.replies()...)
			var state []byte
			for i, in := range tt.inputs(t) {
				m := newModel(t, restarted, tt.v, tt.edit)
				if state != nil {
					if err := m.UnmarshalState(state); err != nil {
						t.Fatalf("turn %d: UnmarshalState error: %v", i, err)
					}
				}
				turn, err := m.Next(t.Context(), in)
				if err != nil {
					t.Fatalf("turn %d: Next after restore error: %v", i, err)
				}
				if diff := cmp.Diff(want[i], callsOf(turn.Calls)); diff != "" {
					t.Errorf("turn %d calls after restore (-without +with restarts):\n%s", i, diff)
				}
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
		})
	}
}

func TestUnmarshalStateErrors(t *testing.T) {
	srv := anthropictest.NewServer(t)
	m := newModel(t, srv, anthropic.Computer20250124)
	other := newModel(t, srv, anthropic.Computer20251124)
	saved, err := other.MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, state, want string
	}{
		{"not json", `{`, "restore state"},
		{"version", `{"version":9}`, "format version 9"},
		{"other model", string(saved), "saved for model"},
		{"role", `{"version":1,"model":"claude-sonnet-4-5-20250929","tool":"computer_20250124","history":[{"role":"system","content":[]}]}`, "role"},
		{"pending id", `{"version":1,"model":"claude-sonnet-4-5-20250929","tool":"computer_20250124","history":[],"pending":[{"n":1}]}`, "no id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := m.UnmarshalState([]byte(tt.state)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("UnmarshalState(%s) error = %v, want one containing %q", tt.state, err, tt.want)
			}
		})
	}
}

// clientTools answers lookup_booking for the loop.
type clientTools struct{}

func (clientTools) Has(name string) bool { return name == lookup.Name }

func (clientTools) Run(_ context.Context, c harness.Call) (string, error) {
	var in struct{ Ref string }
	if err := json.Unmarshal(c.Input, &in); err != nil {
		return "", err
	}
	if in.Ref == "ZZ" {
		return "", errors.New("no booking ZZ")
	}
	return "booking for " + in.Ref, nil
}

// TestClientToolsInLoop runs the mixed turns through harness.Run: the
// client calls go to the client, the computer call to the display, and the
// fake gets every result paired to its id, in the calls' order.
func TestClientToolsInLoop(t *testing.T) {
	srv := anthropictest.NewServer(t, clientScript()...)
	m := newModel(t, srv, anthropic.Computer20250124, withTools)
	d := &screentest.Fake{}
	out, err := harness.Run(t.Context(), harness.Config{Model: m, Display: d, Task: "Check in passenger Ada.",
		Policy: actions.Policy{Allow: []actions.Kind{actions.Click}}, Client: clientTools{},
		Capture: screen.CaptureOptions{Size: display, Format: screen.PNG}})
	if err != nil || out.Stop != harness.StopEndTurn {
		t.Fatalf("Run() = %+v, %v, want end_turn", out, err)
	}
	if n := len(d.Performed()); n != 1 {
		t.Errorf("the display performed %d actions, want 1", n)
	}
	reqs := srv.Requests()
	got, err := anthropictest.ToolResults(reqs[1].Body)
	if err != nil {
		t.Fatal(err)
	}
	want := []anthropictest.ToolResult{
		{ToolUseID: "toolu_1", Text: "booking for AB12"},
		{ToolUseID: "toolu_2", Images: []string{"image/png"}},
		{ToolUseID: "toolu_3", Text: "booking for CD34"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request 1 tool results (-want +got):\n%s", diff)
	}
	got, err = anthropictest.ToolResults(reqs[2].Body)
	if err != nil {
		t.Fatal(err)
	}
	if want := []anthropictest.ToolResult{{ToolUseID: "toolu_4", IsError: true, Text: "Error: no booking ZZ"}}; !cmp.Equal(want, got) {
		t.Errorf("request 2 tool results = %+v, want %+v", got, want)
	}
}
