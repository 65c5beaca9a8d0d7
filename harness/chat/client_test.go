package chat_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/chat"
	"github.com/spotter-harness/spotter/harness/chat/chattest"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
)

var _ harness.Stateful = (*chat.Model)(nil)

var lookup = harness.ToolSpec{
	Name:        "lookup_booking",
	Description: "Find a booking by its reference.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"ref":{"type":"string"}},"required":["ref"]}`),
}

var clientConfig = chat.Config{Model: "qwen2.5-vl-7b", APIKey: "sk-local", Tools: []harness.ToolSpec{lookup},
	Context: ctxpolicy.Policy{Keep: 1, Chunk: 2, Repeats: true}} // the same tiny screenshot each time

// clientScript has a mixed parallel turn (a client call, a computer call,
// a client call with arguments that are no JSON), a failed client call,
// and an end.
func clientScript() []chattest.Reply {
	return []chattest.Reply{
		chattest.Calls("Looking it up.",
			chattest.ToolCall{ID: "call_1", Name: "lookup_booking", Arguments: `{"ref":"AB12"}`},
			chattest.Computer("call_2", `{"type":"click","x":10,"y":20}`),
			chattest.ToolCall{ID: "call_3", Name: "lookup_booking", Arguments: `{"ref":`},
		),
		chattest.Calls("", chattest.ToolCall{ID: "call_4", Name: "lookup_booking", Arguments: `{"ref":"ZZ"}`}),
		chattest.Calls("", chattest.Computer("call_5", `{"type":"screenshot"}`)),
		chattest.Text("Done."),
	}
}

func clientInputs() []harness.Input {
	return []harness.Input{
		{Task: "Check in passenger Ada.", Shot: shot("f1")},
		{Results: []harness.Result{
			{CallID: "call_1", Output: "booking 42"},
			{CallID: "call_2", Shot: shot("f2"), Ran: 1},
			{CallID: "call_3", Err: errors.New("could not decode the call")},
		}},
		{Results: []harness.Result{{CallID: "call_4", Err: errors.New("no booking ZZ")}}},
		{Results: []harness.Result{{CallID: "call_5", Shot: shot("f3"), Ran: 1}}},
	}
}

func TestClientTools(t *testing.T) {
	srv := chattest.NewServer(t, clientScript()...)
	m := newModel(t, srv, clientConfig)
	in := clientInputs()
	turn := next(t, m, in[0])
	type view struct {
		ID, Name, Input, Err string
		Actions              []actions.Action
	}
	var got []view
	for _, c := range turn.Calls {
		v := view{ID: c.ID, Name: c.Name, Input: string(c.Input), Actions: c.Actions}
		if c.DecodeErr != nil {
			v.Err = c.DecodeErr.Error()
		}
		got = append(got, v)
	}
	want := []view{
		{ID: "call_1", Name: "lookup_booking", Input: `{"ref":"AB12"}`},
		{ID: "call_2", Name: "computer", Actions: []actions.Action{{Kind: actions.Click, At: actions.Pt(10, 20), HasAt: true}}},
		{ID: "call_3", Name: "lookup_booking", Input: `{}`, Err: "invalid action: lookup_booking: the arguments are not JSON"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("first turn calls (-want +got):\n%s", diff)
	}
	for _, in := range in[1:] {
		next(t, m, in)
	}
	reqs := srv.Requests()
	var body struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	wantTool := `{"function":{"name":"lookup_booking","description":"Find a booking by its reference.","parameters":{"properties":{"ref":{"type":"string"}},"required":["ref"],"type":"object"}},"type":"function"}`
	if len(body.Tools) != 2 || string(body.Tools[1]) != wantTool {
		t.Errorf("request 0 tools = %s\nwant computer, then %s", body.Tools, wantTool)
	}
	type toolMsg struct{ ID, Text string }
	toolMsgs := func(r chattest.Request) []toolMsg {
		msgs, err := r.Messages()
		if err != nil {
			t.Fatal(err)
		}
		var out []toolMsg
		for _, m := range msgs {
			if m.Role != "tool" {
				continue
			}
			var s string
			if err := json.Unmarshal(m.Content, &s); err != nil {
				t.Fatalf("tool message %s content %s: %v", m.ToolCallID, m.Content, err)
			}
			out = append(out, toolMsg{m.ToolCallID, s})
		}
		return out
	}
	wantMsgs := []toolMsg{
		{"call_1", "booking 42"},
		{"call_2", "ok\nThe screenshot follows in the next user message."},
		{"call_3", "Error: could not decode the call"},
		{"call_4", "Error: no booking ZZ"},
	}
	if diff := cmp.Diff(wantMsgs[:3], toolMsgs(reqs[1])); diff != "" {
		t.Errorf("request 1 tool messages (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantMsgs, toolMsgs(reqs[2])); diff != "" {
		t.Errorf("request 2 tool messages (-want +got):\n%s", diff)
	}
}

func TestClientToolsConfig(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  chat.Config
		want string
	}{
		{"uitars", chat.Config{Model: "ui-tars-1.5-7b", Tools: []harness.ToolSpec{lookup}}, "needs the functions dialect"},
		{"no name", chat.Config{Model: "m", Tools: []harness.ToolSpec{{}}}, "no name"},
		{"computer", chat.Config{Model: "m", Tools: []harness.ToolSpec{{Name: "computer"}}}, "computer function"},
		{"twice", chat.Config{Model: "m", Tools: []harness.ToolSpec{lookup, lookup}}, "declared twice"},
		{"schema", chat.Config{Model: "m", Tools: []harness.ToolSpec{{Name: "a", InputSchema: json.RawMessage(`[]`)}}}, "not a JSON object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := chat.New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New(%+v) error = %v, want one containing %q", tt.cfg, err, tt.want)
			}
		})
	}
}

// TestStateRestore runs each conversation twice against fakes with the
// same script: once in one Model, once saving the state after each turn
// and restoring it into a new Model. The fakes must see the same requests,
// and the Models return the same turns.
func TestStateRestore(t *testing.T) {
	for _, tt := range []struct {
		name    string
		cfg     chat.Config
		replies func() []chattest.Reply
		inputs  func() []harness.Input
	}{
		{"client tools", clientConfig, clientScript, clientInputs},
		{"ui-tars", chat.Config{Model: "ui-tars-1.5-7b", Context: ctxpolicy.Policy{Keep: 2, Chunk: 1}}, func() []chattest.Reply {
			return []chattest.Reply{
				chattest.UITARS("Click.", "click(start_box='<|box_start|>(100,100)<|box_end|>')"),
				chattest.UITARS("Scroll.", "scroll(start_box='<|box_start|>(10,10)<|box_end|>', direction='down')"),
				chattest.UITARS("Type and finish.", "type(content='hi')", "finished(content='all done')"),
			}
		}, func() []harness.Input {
			return []harness.Input{
				{Task: "Say hi.", Shot: shot("f1")},
				{Results: []harness.Result{{CallID: "uitars-1", Shot: shot("f2"), Ran: 1}}},
				{Results: []harness.Result{{CallID: "uitars-2", Shot: shot("f3"), Ran: 1}}},
				{Results: []harness.Result{{CallID: "uitars-3", Shot: shot("f4"), Ran: 1}}},
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plain := chattest.NewServer(t, tt.replies()...)
			m := newModel(t, plain, tt.cfg)
			var want []harness.Turn
			for _, in := range tt.inputs() {
				want = append(want, next(t, m, in))
			}
			restarted := chattest.NewServer(t, tt.replies()...)
			var state []byte
			for i, in := range tt.inputs() {
				m := newModel(t, restarted, tt.cfg)
				if state != nil {
					if err := m.UnmarshalState(state); err != nil {
						t.Fatalf("turn %d: UnmarshalState error: %v", i, err)
					}
				}
				turn := next(t, m, in)
				if diff := cmp.Diff(want[i], turn, ignoreRaw); diff != "" {
					t.Errorf("turn %d after restore (-without +with restarts):\n%s", i, diff)
				}
				var err error
				if state, err = m.MarshalState(); err != nil {
					t.Fatalf("turn %d: MarshalState error: %v", i, err)
				}
				if bytes.Contains(state, []byte("sk-local")) {
					t.Errorf("turn %d: the state holds the API key", i)
				}
				if n, k := bytes.Count(state, []byte("data:image/")), tt.cfg.Context.Most(); n > k {
					t.Errorf("turn %d: the state holds %d images, want at most %d", i, n, k)
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
	srv := chattest.NewServer(t)
	m := newModel(t, srv, chat.Config{Model: "m"})
	for _, tt := range []struct {
		name, state, want string
	}{
		{"not json", `{`, "restore state"},
		{"version", `{"version":0}`, "format version 0"},
		{"other model", `{"version":1,"model":"x","dialect":"functions"}`, "saved for model"},
		{"role", `{"version":1,"model":"m","dialect":"functions","messages":[{"role":"system"}]}`, "role"},
		{"size", `{"version":1,"model":"m","dialect":"functions","w":-1}`, "negative"},
		{"pending", `{"version":1,"model":"m","dialect":"functions","pending":[{}]}`, "no id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := m.UnmarshalState([]byte(tt.state)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("UnmarshalState(%s) error = %v, want one containing %q", tt.state, err, tt.want)
			}
		})
	}
}
