package anthropictest_test

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

func ExampleNewServer() {
	tb := &exampleTB{}
	defer func() {
		for _, f := range tb.cleanup {
			f()
		}
	}()
	v := anthropic.Computer20251124
	srv := anthropictest.NewServer(tb,
		anthropictest.Reply{Content: []json.RawMessage{
			anthropictest.Action(tb, "toolu_01", v, actions.Action{Kind: actions.Click, At: actions.Pt(100, 200), HasAt: true}),
			anthropictest.Action(tb, "toolu_02", v, actions.Action{Kind: actions.Type, Text: "hello"}),
		}},
		anthropictest.Reply{Status: 529, ErrorType: "overloaded_error", Header: map[string]string{"retry-after": "0"}},
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Done.")}},
	)
	size := screen.Size{W: 1024, H: 768}
	m, err := anthropic.New(anthropic.Config{APIKey: "test", BaseURL: srv.URL, Model: "claude-opus-4-5", Display: size})
	if err != nil {
		fmt.Println(err)
		return
	}
	shot := &screen.Shot{Frame: screen.Frame{Sent: size, Format: screen.PNG}, Data: []byte("png")}
	ctx := context.Background()
	turn, err := m.Next(ctx, harness.Input{Task: "Say hello.", Shot: shot})
	if err != nil {
		fmt.Println(err)
		return
	}
	var in harness.Input
	for _, c := range turn.Calls {
		in.Results = append(in.Results, harness.Result{CallID: c.ID, Shot: shot, Ran: len(c.Actions)})
	}
	turn, err = m.Next(ctx, in) // overloaded once, retried
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(turn.Text)
	for i, r := range srv.Requests() {
		var body struct {
			Messages []struct {
				Role    string `json:"role"`
				Content []struct {
					Type      string `json:"type"`
					ToolUseID string `json:"tool_use_id"`
				} `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			fmt.Println(err)
			return
		}
		last := body.Messages[len(body.Messages)-1]
		fmt.Print(i, " ", r.Header.Get("Anthropic-Beta"), " ", last.Role, ":")
		for _, c := range last.Content {
			fmt.Print(" ", c.Type, c.ToolUseID)
		}
		fmt.Println()
	}
	// Output:
	// Done.
	// 0 computer-use-2025-11-24 user: image text
	// 1 computer-use-2025-11-24 user: tool_resulttoolu_01 tool_resulttoolu_02
	// 2 computer-use-2025-11-24 user: tool_resulttoolu_01 tool_resulttoolu_02
}
