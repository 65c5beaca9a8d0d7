package chat_test

import (
	"context"
	"fmt"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/chat"
	"github.com/spotter-harness/spotter/harness/chat/chattest"
	"github.com/spotter-harness/spotter/screen"
)

func ExampleParseUITARS() {
	// UI-TARS 1.5 answers in pixels of the smart-resized screenshot.
	space := screen.Space{Kind: screen.ResizedSpace, Resized: screen.SmartResize(screen.Size{W: 1280, H: 800})}
	r, err := chat.ParseUITARS("Thought: Search for it.\n"+
		"Action: click(start_box='<|box_start|>(644,52)<|box_end|>')\n\n"+
		"type(content='kittens\\n')", space)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Thought)
	for _, a := range r.Actions {
		switch a.Kind {
		case actions.Click:
			fmt.Println(a.Kind, a.At)
		case actions.Type:
			fmt.Printf("%s %q\n", a.Kind, a.Text)
		case actions.Keypress:
			fmt.Println(a.Kind, a.Keys)
		}
	}

	_, err = chat.ParseUITARS("Thought: Click it.\nAction: click()", space)
	fmt.Println(err)
	// Output:
	// Search for it.
	// click (644,52)
	// type "kittens"
	// keypress Enter
	// invalid action: click: missing start_box (want start_box='<|box_start|>(x,y)<|box_end|>')
}

func ExampleFormatUITARS() {
	s, err := chat.FormatUITARS(actions.Action{Kind: actions.Keypress, Keys: actions.Chord{actions.Control, "c"}})
	fmt.Println(s, err)
	// Output:
	// hotkey(key='ctrl c') <nil>
}

func ExampleDecodeArguments() {
	as, err := chat.DecodeArguments(`{"type":"click","x":512,"y":320,"button":"right"}`)
	fmt.Println(as[0].Kind, as[0].At, as[0].Button, err)

	_, err = chat.DecodeArguments(`{"type":"click","x":512,`)
	fmt.Println(err)
	// Output:
	// click (512,320) right <nil>
	// invalid action: computer: arguments are not valid JSON: unexpected end of JSON input
}

func ExampleDialectFor() {
	for _, m := range []string{"ByteDance-Seed/UI-TARS-1.5-7B", "UI-TARS-7B-DPO", "qwen2.5vl:7b"} {
		fmt.Println(m, chat.DialectFor(m))
	}
	// Output:
	// ByteDance-Seed/UI-TARS-1.5-7B ui-tars-1.5
	// UI-TARS-7B-DPO ui-tars-1.0
	// qwen2.5vl:7b functions
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
	srv := chattest.NewServer(t,
		chattest.UITARS("The menu button is at the top left.", "click(start_box='<|box_start|>(24,16)<|box_end|>')"),
		chattest.UITARS("The menu is open.", "finished(content='The menu is open.')"),
	)
	m, err := chat.New(chat.Config{BaseURL: srv.URL, Model: "ui-tars-1.5-7b"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	turn, err := m.Next(ctx, harness.Input{Task: "Open the menu.", Shot: shot("f0001")})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(turn.Stop, turn.Text)
	for _, c := range turn.Calls {
		fmt.Println(c.ID, c.Actions[0].Kind, c.Actions[0].At, c.Space)
	}

	// Run the batch, then answer it with a fresh screenshot.
	turn, err = m.Next(ctx, harness.Input{Results: []harness.Result{{CallID: "uitars-1", Shot: shot("f0002"), Ran: 1}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(turn.Stop, turn.Text)
	// Output:
	// tool_use The menu button is at the top left.
	// uitars-1 click (24,16) resized1288x812
	// end_turn The menu is open.
}
