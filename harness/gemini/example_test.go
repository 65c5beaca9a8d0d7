package gemini_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/gemini"
	"github.com/spotter-harness/spotter/harness/gemini/geminitest"
	"github.com/spotter-harness/spotter/screen"
)

// exampleT lets examples start a geminitest server. Its Cleanup runs
// nothing, so the server lives until the test binary exits.
type exampleT struct{}

func (exampleT) Helper()                        {}
func (exampleT) Cleanup(func())                 {}
func (exampleT) Errorf(format string, a ...any) { fmt.Printf("error: "+format+"\n", a...) }

func ExampleModel_Next() {
	srv := geminitest.NewServer(exampleT{}, geminitest.Turn{
		Text:  "Opening the first result.",
		Calls: []geminitest.Call{{ID: "call-1", Name: "click", Args: map[string]any{"x": 250, "y": 600}}},
	}.Reply())
	m, err := gemini.New(gemini.Config{
		APIKey:  "key",
		BaseURL: srv.URL,
		Model:   "gemini-3.5-flash",
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	first := &screen.Shot{Frame: screen.Frame{URL: "https://example.com/", Format: screen.PNG}, Data: []byte("png bytes")}
	turn, err := m.Next(context.Background(), harness.Input{Task: "Open the first result.", Shot: first})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(turn.Text, turn.Stop)
	for _, c := range turn.Calls {
		fmt.Println(c.ID, c.Name, c.Space, c.Actions[0].Kind, c.Actions[0].At)
	}
	// Output:
	// Opening the first result. tool_use
	// call-1 click grid1000 click (250,600)
}

func ExampleDecodeCall() {
	batch, err := gemini.DecodeCall(gemini.FunctionsLegacy, "type_text_at", map[string]any{
		"x": 480.0, "y": 120.0, "text": "gophers", "press_enter": true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range batch {
		fmt.Println(a.LogValue()) // typed text shows only as its length
	}
	// Output:
	// [kind=click at=(480,120)]
	// [kind=keypress keys=Control+a]
	// [kind=keypress keys=Delete]
	// [kind=type text_len=7]
	// [kind=keypress keys=Enter]
}

func ExampleEncodeCall() {
	name, args, err := gemini.EncodeCall(gemini.Functions35, chordAction("Control+Shift+t"))
	fmt.Println(name, args, err)
	// Output:
	// hotkey map[keys:[Control Shift t]] <nil>
}

func ExampleFunctionSetFor() {
	for _, model := range []string{"gemini-2.5-computer-use-preview-10-2025", "gemini-3-flash-preview", "gemini-3.5-flash"} {
		fmt.Println(model, gemini.FunctionSetFor(model))
	}
	// Output:
	// gemini-2.5-computer-use-preview-10-2025 legacy
	// gemini-3-flash-preview legacy
	// gemini-3.5-flash 3.5
}

func chordAction(s string) actions.Action {
	c, err := actions.ParseChord(s)
	if err != nil {
		panic(err)
	}
	return actions.Action{Kind: actions.Keypress, Keys: c}
}
