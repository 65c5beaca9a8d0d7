package openai_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/openai"
	"github.com/spotter-harness/spotter/harness/openai/openaitest"
)

// TestBrowserFunctions declares the browser actions as function tools,
// decodes a call of each into canonical actions, and answers them with
// function_call_outputs.
func TestBrowserFunctions(t *testing.T) {
	srv := openaitest.NewServer(t,
		openaitest.Reply{Output: []json.RawMessage{
			openaitest.FunctionCall("call_1", "list_tabs", `{}`),
			openaitest.FunctionCall("call_2", "switch_tab", `{"tab":1}`),
			openaitest.FunctionCall("call_3", "dialog", `{"accept":false}`),
			openaitest.FunctionCall("call_4", "upload", `{"files":["cv.pdf"]}`),
			openaitest.FunctionCall("call_5", "close_tab", `{"tab":1}`),
			openaitest.FunctionCall("call_6", "dialog", `{"accept":"yes"}`),
		}},
		openaitest.Reply{Output: []json.RawMessage{openaitest.Message("Done.")}},
	)
	m := newModel(t, srv, openai.Config{Functions: openai.BrowserFunctions()})
	turn := next(t, m, harness.Input{Task: "Upload the CV.", Shot: shot("f1", "https://shop.test/")})
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
		{{Kind: actions.Dialog}},
		{{Kind: actions.Upload, Files: []string{"cv.pdf"}}},
		{{Kind: actions.CloseTab, Tab: 1}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decoded browser calls (-want +got):\n%s", diff)
	}
	if err := turn.Calls[5].DecodeErr; !errors.Is(err, actions.ErrInvalid) {
		t.Errorf("dialog with accept \"yes\": DecodeErr = %v, want ErrInvalid", err)
	}

	var req struct {
		Tools []struct {
			Type, Name string
		} `json:"tools"`
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &req); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range req.Tools[1:] {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, openai.BrowserFunctions()) {
		t.Errorf("declared functions = %v, want %v", names, openai.BrowserFunctions())
	}

	var in harness.Input
	for _, c := range turn.Calls {
		r := harness.Result{CallID: c.ID, Shot: shot("f2", "https://shop.test/upload"), Ran: 1, Err: c.DecodeErr}
		in.Results = append(in.Results, r)
	}
	next(t, m, in)
	var body struct {
		Input []struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
		} `json:"input"`
	}
	if err := json.Unmarshal(srv.Requests()[1].Body, &body); err != nil {
		t.Fatal(err)
	}
	var outputs []string
	for _, it := range body.Input {
		if it.Type == "function_call_output" {
			outputs = append(outputs, it.CallID)
		}
	}
	if want := []string{"call_1", "call_2", "call_3", "call_4", "call_5", "call_6"}; !slices.Equal(outputs, want) {
		t.Errorf("function_call_outputs for %v, want %v", outputs, want)
	}
}
