package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/screen"
)

// exampleTB stands in for a *testing.T in examples.
type exampleTB struct{ cleanup []func() }

func (*exampleTB) Helper()                           {}
func (*exampleTB) Errorf(format string, args ...any) { fmt.Printf(format+"\n", args...) }
func (*exampleTB) Fatalf(format string, args ...any) { fmt.Printf(format+"\n", args...); os.Exit(1) }
func (tb *exampleTB) Cleanup(f func())               { tb.cleanup = append(tb.cleanup, f) }
func (tb *exampleTB) done() {
	for _, f := range tb.cleanup {
		f()
	}
}

func ExampleModel_Next() {
	tb := &exampleTB{}
	defer tb.done()
	// A fake Messages API whose model clicks with shift held, then is done.
	srv := anthropictest.NewServer(tb,
		anthropictest.Reply{Content: []json.RawMessage{
			anthropictest.Text("Selecting the second row."),
			anthropictest.ToolUse("toolu_01", "computer", json.RawMessage(
				`{"action":"left_click","coordinate":[640,300],"text":"shift"}`)),
		}},
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Both rows are selected.")}},
	)
	size := screen.Size{W: 1280, H: 800}
	m, err := anthropic.New(anthropic.Config{
		APIKey:  "sk-example",
		BaseURL: srv.URL,
		Model:   "claude-sonnet-4-5",
		Display: size,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	shot := &screen.Shot{Frame: screen.Frame{ID: "f1", Sent: size, Format: screen.PNG}, Data: []byte("png bytes")}

	ctx := context.Background()
	turn, err := m.Next(ctx, harness.Input{Task: "Select the first two rows.", Shot: shot})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.ToolVersion(), turn.Stop, turn.Text)
	for _, c := range turn.Calls {
		fmt.Println(c.ID, c.Space, c.Actions[0].Kind, c.Actions[0].At, c.Actions[0].Modifiers)
	}

	// Run the calls, then answer each with its result.
	turn, err = m.Next(ctx, harness.Input{Results: []harness.Result{{CallID: "toolu_01", Shot: shot, Ran: 1}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(turn.Stop, turn.Text)
	// Output:
	// computer_20250124 tool_use Selecting the second row.
	// toolu_01 image click (640,300) Shift
	// end_turn Both rows are selected.
}

func ExampleDecoder_Decode() {
	d := anthropic.Decoder{Version: anthropic.Computer20250124}
	for _, in := range []string{
		`{"action":"scroll","coordinate":[640,400],"scroll_direction":"down","scroll_amount":3}`,
		`{"action":"key","text":"ctrl+a BackSpace"}`,
		`{"action":"left_click","text":"ctrl"}`,
		`{"action":"zoom","region":[0,0,100,100]}`,
	} {
		as, err := d.Decode(json.RawMessage(in))
		if err != nil {
			fmt.Println(err)
			continue
		}
		for _, a := range as {
			fmt.Printf("%s at=%v dy=%g keys=%v mods=%v\n", a.Kind, a.At, a.DeltaY, a.Keys, a.Modifiers)
		}
	}
	// Output:
	// scroll at=(640,400) dy=159 keys= mods=
	// keypress at=(0,0) dy=0 keys=Control+a mods=
	// keypress at=(0,0) dy=0 keys=Backspace mods=
	// click at=(0,0) dy=0 keys= mods=Control
	// invalid action: unknown action "zoom" for computer_20250124 (want one of key, type, mouse_move, left_click, left_click_drag, right_click, middle_click, double_click, screenshot, cursor_position, left_mouse_down, left_mouse_up, scroll, hold_key, wait, triple_click)
}

func ExampleEncodeAction() {
	in, err := anthropic.EncodeAction(anthropic.Computer20250124, actions.Action{
		Kind: actions.Drag, Path: []actions.Point{{X: 10, Y: 20}, {X: 300, Y: 20}},
	})
	fmt.Println(string(in), err)
	// Output:
	// {"action":"left_click_drag","coordinate":[300,20],"start_coordinate":[10,20]} <nil>
}

func ExampleToolVersionFor() {
	for _, model := range []string{"claude-opus-4-5-20251101", "claude-sonnet-4-5", "claude-3-5-sonnet-20241022"} {
		v := anthropic.ToolVersionFor(model)
		fmt.Println(model, v, v.Beta())
	}
	// Output:
	// claude-opus-4-5-20251101 computer_20251124 computer-use-2025-11-24
	// claude-sonnet-4-5 computer_20250124 computer-use-2025-01-24
	// claude-3-5-sonnet-20241022 computer_20241022 computer-use-2024-10-22
}

func ExampleConfigFromEnv() {
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-example", "ANTHROPIC_MODEL": "claude-opus-4-5"}
	cfg := anthropic.ConfigFromEnv(func(k string) string { return env[k] }) // os.Getenv in cmd/
	cfg.Display = screen.Size{W: 1456, H: 819}
	m, err := anthropic.New(cfg)
	fmt.Println(m.ToolVersion(), err)
	// Output:
	// computer_20251124 <nil>
}
