package openai_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/openai"
	"github.com/spotter-harness/spotter/harness/openai/openaitest"
)

func ExampleDecodeAction() {
	a, err := openai.DecodeAction(json.RawMessage(`{"type":"click","x":512,"y":320,"button":"right","keys":["CTRL"]}`))
	fmt.Println(a.Kind, a.At, a.Button, a.Modifiers, err)

	_, err = openai.DecodeAction(json.RawMessage(`{"type":"click","y":320}`))
	fmt.Println(err)
	// Output:
	// click (512,320) right Control <nil>
	// invalid action: click: missing "x"
}

func ExampleDecodeActions() {
	as, err := openai.DecodeActions(json.RawMessage(`[
		{"type":"scroll","x":640,"y":400,"scroll_x":0,"scroll_y":-300},
		{"type":"keypress","keys":["CTRL","SHIFT","T"]},
		{"type":"wait"}
	]`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range as {
		fmt.Println(a.Kind, a.At, a.DeltaY, a.Keys, a.Duration)
	}
	// Output:
	// scroll (640,400) -300  0s
	// keypress (0,0) 0 Control+Shift+t 0s
	// wait (0,0) 0  1s
}

func ExampleEncodeAction() {
	raw, err := openai.EncodeAction(actions.Action{Kind: actions.Navigate, URL: "https://example.com/"})
	fmt.Println(string(raw), err)
	// Output:
	// {"type":"navigate","url":"https://example.com/"} <nil>
}

// exampleT stands in for a *testing.T in this example.
type exampleT struct{ cleanup []func() }

func (*exampleT) Helper()                      {}
func (*exampleT) Errorf(f string, args ...any) { fmt.Printf("error: "+f+"\n", args...) }
func (*exampleT) Fatalf(f string, args ...any) { fmt.Printf("fatal: "+f+"\n", args...) }
func (t *exampleT) Cleanup(f func())           { t.cleanup = append(t.cleanup, f) }

func ExampleModel_Next() {
	t := &exampleT{}
	defer func() {
		for _, f := range t.cleanup {
			f()
		}
	}()
	srv := openaitest.NewServer(t,
		openaitest.Reply{Output: []json.RawMessage{
			openaitest.Message("Opening the menu."),
			openaitest.ComputerCall("call_1", `{"type":"click","x":24,"y":16,"button":"left"}`),
		}},
		openaitest.Reply{Output: []json.RawMessage{openaitest.Message("The menu is open.")}},
	)
	m, err := openai.New(openai.Config{BaseURL: srv.URL, APIKey: "sk-example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	turn, err := m.Next(ctx, harness.Input{Task: "Open the menu.", Shot: shot("f0001", "https://example.com/")})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(turn.Stop, turn.Text)
	for _, c := range turn.Calls {
		fmt.Println(c.ID, c.Actions[0].Kind, c.Actions[0].At, c.Space)
	}

	// Run the calls, then answer each by its call_id with a fresh screenshot.
	turn, err = m.Next(ctx, harness.Input{Results: []harness.Result{
		{CallID: "call_1", Shot: shot("f0002", "https://example.com/"), Ran: 1},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(turn.Stop, turn.Text)
	// Output:
	// tool_use Opening the menu.
	// call_1 click (24,16) image
	// end_turn The menu is open.
}
