package chat_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/chat"
	"github.com/spotter-harness/spotter/harness/chat/chattest"
)

// TestBrowserFunctions declares the browser actions after the computer
// function, decodes a call of each into canonical actions, and answers
// every call with a tool message.
func TestBrowserFunctions(t *testing.T) {
	srv := chattest.NewServer(t,
		chattest.Calls("",
			chattest.ToolCall{ID: "call_1", Name: "list_tabs", Arguments: `{}`},
			chattest.ToolCall{ID: "call_2", Name: "switch_tab", Arguments: `{"tab": 1}`},
			chattest.ToolCall{ID: "call_3", Name: "dialog", Arguments: `{"accept": true, "text": "Ada"}`},
			chattest.ToolCall{ID: "call_4", Name: "upload", Arguments: `{"files": ["cv.pdf"]}`},
			chattest.ToolCall{ID: "call_5", Name: "close_tab", Arguments: `{"tab": 1}`},
			chattest.ToolCall{ID: "call_6", Name: "switch_tab", Arguments: `{"tab": "next"}`},
		),
		chattest.Text("Done."),
	)
	m := newModel(t, srv, chat.Config{Model: "qwen2.5-vl", Browser: true})
	turn := next(t, m, harness.Input{Task: "Upload the CV.", Shot: shot("f1")})
	var got [][]actions.Action
	for _, c := range turn.Calls[:5] {
		if c.DecodeErr != nil {
			t.Fatalf("call %s: DecodeErr %v", c.ID, c.DecodeErr)
		}
		got = append(got, c.Actions)
	}
	want := [][]actions.Action{
		{{Kind: actions.ListTabs}},
		{{Kind: actions.SwitchTab, Tab: 1}},
		{{Kind: actions.Dialog, Accept: true, Text: "Ada"}},
		{{Kind: actions.Upload, Files: []string{"cv.pdf"}}},
		{{Kind: actions.CloseTab, Tab: 1}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decoded browser calls (-want +got):\n%s", diff)
	}
	if err := turn.Calls[5].DecodeErr; !errors.Is(err, actions.ErrInvalid) {
		t.Errorf("switch_tab to \"next\": DecodeErr = %v, want ErrInvalid", err)
	}

	var req struct {
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &req); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range req.Tools {
		names = append(names, tl.Function.Name)
	}
	if want := []string{"computer", "list_tabs", "switch_tab", "close_tab", "dialog", "upload"}; !slices.Equal(names, want) {
		t.Errorf("declared functions = %v, want %v", names, want)
	}

	var in harness.Input
	for _, c := range turn.Calls {
		in.Results = append(in.Results, harness.Result{CallID: c.ID, Shot: shot("f2"), Ran: 1, Err: c.DecodeErr})
	}
	next(t, m, in)
	msgs, err := srv.Requests()[1].Messages()
	if err != nil {
		t.Fatal(err)
	}
	var answered []string
	for _, msg := range msgs {
		if msg.Role == "tool" {
			answered = append(answered, msg.ToolCallID)
		}
	}
	if want := []string{"call_1", "call_2", "call_3", "call_4", "call_5", "call_6"}; !slices.Equal(answered, want) {
		t.Errorf("tool messages for %v, want %v", answered, want)
	}
	if _, err := chat.New(chat.Config{Model: "ui-tars-1.5", Browser: true}); err == nil {
		t.Errorf("New(UI-TARS with Browser): no error")
	}
}
