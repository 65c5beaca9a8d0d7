package harness_test

import (
	"context"
	"fmt"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/script"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/screentest"
)

// Run drives a model against a display until the model stops. Here the
// model is a script (no API key) and the display an in-memory fake; a
// program would pass a provider adapter (harness/anthropic, openai,
// gemini, chat) and a real display (screen/cdp, screen/vnc,
// screen/playwright). The policy is what may run: a call outside it is
// answered with an error, never performed.
func ExampleRun() {
	model := script.New([]script.Turn{
		{Say: "I click the field and type.", Actions: script.Batch(
			`[{"type":"click","x":100,"y":50},{"type":"type","text":"hello"}]`)},
		{Say: "Now I press a chord the policy forbids.", Actions: script.Batch(
			`[{"type":"keypress","keys":["CTRL","Q"]}]`)},
		{Say: "Done."},
	}, false)
	display := &screentest.Fake{}
	quit, err := actions.ParseChord("ctrl+q")
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := harness.Run(context.Background(), harness.Config{
		Model:   model,
		Display: display,
		Policy: actions.Policy{
			Allow:      []actions.Kind{actions.Click, actions.Type, actions.Keypress},
			ForbidKeys: []actions.Chord{quit},
		},
		Capture: screen.CaptureOptions{Format: screen.PNG},
	})
	if err != nil {
		fmt.Println("run:", err)
		return
	}
	fmt.Println(out.Stop, out.Calls, "calls,", out.Failed, "refused")
	for _, m := range display.Performed() {
		switch m.Kind {
		case actions.Click:
			fmt.Println("click at", m.At) // the centre of the image pixel, in CSS pixels
		case actions.Type:
			fmt.Printf("type %q\n", m.Text)
		}
	}
	fmt.Println(out.Text)
	// Output:
	// end_turn 2 calls, 1 refused
	// click at (100.5,50.5)
	// type "hello"
	// Done.
}
