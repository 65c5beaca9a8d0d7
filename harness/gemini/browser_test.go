package gemini_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/gemini"
	"github.com/spotter-harness/spotter/harness/gemini/geminitest"
)

// TestBrowserFunctions declares the browser actions beside computer_use,
// decodes a call of each into canonical actions, and answers them with
// function responses.
func TestBrowserFunctions(t *testing.T) {
	srv := geminitest.NewServer(t,
		geminitest.Turn{Calls: []geminitest.Call{
			{ID: "1", Name: "list_tabs", Args: map[string]any{}},
			{ID: "2", Name: "switch_tab", Args: map[string]any{"tab": 1}},
			{ID: "3", Name: "dialog", Args: map[string]any{"accept": true, "text": "Ada"}},
			{ID: "4", Name: "upload", Args: map[string]any{"files": []string{"cv.pdf"}}},
			{ID: "5", Name: "close_tab", Args: map[string]any{"tab": 1}},
			{ID: "6", Name: "upload", Args: map[string]any{"files": "cv.pdf"}},
		}}.Reply(),
		geminitest.Text("Done."),
	)
	m := newModel(t, srv, gemini.Config{Model: "gemini-3.5-flash", Browser: true})
	turn, err := m.Next(t.Context(), harness.Input{Task: "Upload the CV.", Shot: shot(t, "https://shop.test/", 1)})
	if err != nil {
		t.Fatal(err)
	}
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
		t.Errorf("upload with a string: DecodeErr = %v, want ErrInvalid", err)
	}

	var body struct {
		Tools []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range body.Tools {
		for _, d := range tl.FunctionDeclarations {
			names = append(names, d.Name)
		}
	}
	if want := []string{"list_tabs", "switch_tab", "close_tab", "dialog", "upload"}; !slices.Equal(names, want) {
		t.Errorf("declared functions = %v, want %v", names, want)
	}

	var in harness.Input
	for _, c := range turn.Calls {
		in.Results = append(in.Results, harness.Result{CallID: c.ID, Shot: shot(t, "https://shop.test/upload", 2), Ran: 1, Err: c.DecodeErr})
	}
	if _, err := m.Next(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	contents, err := srv.Requests()[1].Contents()
	if err != nil {
		t.Fatal(err)
	}
	var answered []string
	for _, p := range contents[len(contents)-1].Parts {
		if p.FunctionResponse != nil {
			answered = append(answered, p.FunctionResponse.Name)
		}
	}
	if want := []string{"list_tabs", "switch_tab", "dialog", "upload", "close_tab", "upload"}; !slices.Equal(answered, want) {
		t.Errorf("function responses for %v, want %v", answered, want)
	}
}

// TestBrowserFunctionsOff: without Config.Browser a call to a browser
// function is not decoded.
func TestBrowserFunctionsOff(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Turn{Calls: []geminitest.Call{{ID: "1", Name: "list_tabs"}}}.Reply())
	m := newModel(t, srv, gemini.Config{Model: "gemini-3.5-flash"})
	turn, err := m.Next(t.Context(), harness.Input{Task: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if len(turn.Calls) != 1 || turn.Calls[0].DecodeErr == nil {
		t.Errorf("list_tabs without Config.Browser = %+v, want a DecodeErr", turn.Calls)
	}
}

// TestBrowserFunctionWithoutArgs: Gemini leaves "args" out of a call that
// has no arguments, such as list_tabs. The Model decodes it as it decodes
// {} (with or without an id), and refuses a function whose arguments are
// required just as it does with {}.
func TestBrowserFunctionWithoutArgs(t *testing.T) {
	reply := geminitest.Turn{Calls: []geminitest.Call{
		{ID: "1", Name: "list_tabs"},
		{Name: "list_tabs"},
		{ID: "3", Name: "switch_tab"},
	}}.Reply()
	var body struct {
		Candidates []struct {
			Content struct {
				Parts []struct {
					FunctionCall map[string]json.RawMessage `json:"functionCall"`
				} `json:"parts"`
			} `json:"content"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(reply.Body, &body); err != nil || len(body.Candidates) != 1 {
		t.Fatalf("reply %s: %v", reply.Body, err)
	}
	for _, p := range body.Candidates[0].Content.Parts {
		if args, ok := p.FunctionCall["args"]; ok {
			t.Fatalf("the fake sent args %s for a call without arguments; Gemini leaves them out", args)
		}
	}
	srv := geminitest.NewServer(t, reply)
	m := newModel(t, srv, gemini.Config{Model: "gemini-3.5-flash", Browser: true})
	turn, err := m.Next(t.Context(), harness.Input{Task: "List the tabs.", Shot: shot(t, "https://shop.test/", 1)})
	if err != nil {
		t.Fatal(err)
	}
	if len(turn.Calls) != 3 {
		t.Fatalf("the Model read %d calls, want 3", len(turn.Calls))
	}
	for _, c := range turn.Calls[:2] {
		if c.DecodeErr != nil {
			t.Errorf("list_tabs without args (call %s): DecodeErr %v, want none", c.ID, c.DecodeErr)
		} else if diff := cmp.Diff([]actions.Action{{Kind: actions.ListTabs}}, c.Actions); diff != "" {
			t.Errorf("list_tabs without args (call %s): actions (-want +got):\n%s", c.ID, diff)
		}
	}
	if err := turn.Calls[2].DecodeErr; !errors.Is(err, actions.ErrInvalid) || !strings.Contains(err.Error(), `missing "tab"`) {
		t.Errorf("switch_tab without args: DecodeErr = %v, want ErrInvalid saying the tab is missing", err)
	}
}
