package anthropic_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
)

// browserTurn asks for every browser action, and one with a bad input.
func browserTurn() anthropictest.Reply {
	return anthropictest.Reply{Content: []json.RawMessage{
		anthropictest.ToolUse("toolu_1", "browser", map[string]any{"action": "list_tabs"}),
		anthropictest.ToolUse("toolu_2", "browser", map[string]any{"action": "switch_tab", "tab": 1}),
		anthropictest.ToolUse("toolu_3", "browser", map[string]any{"action": "dialog", "accept": true, "text": "Ada"}),
		anthropictest.ToolUse("toolu_4", "browser", map[string]any{"action": "upload", "files": []string{"cv.pdf"}}),
		anthropictest.ToolUse("toolu_5", "browser", map[string]any{"action": "close_tab", "tab": 1}),
		anthropictest.ToolUse("toolu_6", "browser", map[string]any{"action": "close_tab"}),
	}}
}

// TestBrowserTool declares the browser tool, decodes a call of every
// browser action into canonical actions, and answers them as tool results.
func TestBrowserTool(t *testing.T) {
	srv := anthropictest.NewServer(t, browserTurn(), anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Done.")}})
	m := newModel(t, srv, anthropic.Computer20250124, func(c *anthropic.Config) { c.Browser = true })
	turn := next(t, m, harness.Input{Task: "Upload the CV in the other tab.", Shot: shot(t, "f1", 1)})

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
	if err := turn.Calls[5].DecodeErr; !errors.Is(err, actions.ErrInvalid) || err.Error() != `invalid action: close_tab: missing "tab"` {
		t.Errorf("close_tab without a tab: DecodeErr = %v", err)
	}

	var req struct {
		Tools []struct {
			Name        string `json:"name"`
			InputSchema struct {
				Properties struct {
					Action struct {
						Enum []string `json:"enum"`
					} `json:"action"`
				} `json:"properties"`
			} `json:"input_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &req); err != nil {
		t.Fatal(err)
	}
	if len(req.Tools) != 2 || req.Tools[1].Name != "browser" ||
		!slices.Equal(req.Tools[1].InputSchema.Properties.Action.Enum, []string{"list_tabs", "switch_tab", "close_tab", "dialog", "upload"}) {
		t.Errorf("declared tools = %+v, want computer then browser with the five actions", req.Tools)
	}

	var in harness.Input
	for i, c := range turn.Calls {
		r := harness.Result{CallID: c.ID, Shot: shot(t, fmt.Sprintf("f%d", i+2), uint8(i+2)), Ran: 1}
		if i == 0 {
			r.Notes = []string{"tabs: 0 Shop (active), 1 Upload"}
		}
		if c.DecodeErr != nil {
			r = harness.Result{CallID: c.ID, Err: c.DecodeErr}
		}
		in.Results = append(in.Results, r)
	}
	next(t, m, in)
	results, err := anthropictest.ToolResults(srv.Requests()[1].Body)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 6 || results[0].Text != "tabs: 0 Shop (active), 1 Upload" || len(results[1].Images) != 1 || !results[5].IsError {
		t.Errorf("tool results = %+v, want six, the tab list first, screenshots, the bad call an error", results)
	}
}

// TestBrowserToolOff: without Config.Browser no browser tool is declared,
// and a call to one is an unknown tool.
func TestBrowserToolOff(t *testing.T) {
	srv := anthropictest.NewServer(t, browserTurn())
	m := newModel(t, srv, anthropic.Computer20250124)
	turn := next(t, m, harness.Input{Task: "t", Shot: shot(t, "f1", 1)})
	for _, c := range turn.Calls {
		if !errors.Is(c.DecodeErr, anthropic.ErrUnknownTool) {
			t.Errorf("call %s without Config.Browser: DecodeErr = %v, want ErrUnknownTool", c.ID, c.DecodeErr)
		}
	}
	if _, err := anthropic.New(anthropic.Config{APIKey: "k", Display: display, Browser: true,
		Tools: []harness.ToolSpec{{Name: "browser"}}}); err == nil {
		t.Errorf("New with Browser and a client tool named browser: no error")
	}
}
