package chattest_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"strings"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/chat"
	"github.com/spotter-harness/spotter/harness/chat/chattest"
	"github.com/spotter-harness/spotter/screen"
)

// tinyPNG is a 1x1 PNG.
var tinyPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\b\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

// tinyPNG2 is another 1x1 PNG (black), a screen after a change.
var tinyPNG2 = func() []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 1, 1))); err != nil {
		panic(err) // cannot happen: an in-memory image to a buffer
	}
	return b.Bytes()
}()

func ExampleNewServer() {
	t := &recorder{}
	defer t.close()
	srv := chattest.NewServer(t,
		chattest.Calls("Clicking the button.", chattest.Computer("call_1", `{"type":"click","x":10,"y":20}`)),
		chattest.Text("Done."),
	)
	m, err := chat.New(chat.Config{BaseURL: srv.URL, Model: "qwen2.5vl:7b"})
	if err != nil {
		fmt.Println(err)
		return
	}
	shot := &screen.Shot{Frame: screen.Frame{ID: "f0001", Sent: screen.Size{W: 1, H: 1}}, Data: tinyPNG}
	ctx := context.Background()
	turn, err := m.Next(ctx, harness.Input{Task: "Press the button.", Shot: shot})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(turn.Stop, turn.Calls[0].ID, turn.Calls[0].Actions[0].Kind)
	// The click changed the screen: a new screenshot.
	after := &screen.Shot{Frame: screen.Frame{ID: "f0002", Sent: screen.Size{W: 1, H: 1}}, Data: tinyPNG2}
	turn, err = m.Next(ctx, harness.Input{Results: []harness.Result{{CallID: "call_1", Shot: after, Ran: 1}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(turn.Stop, turn.Text)

	msgs, _ := srv.Requests()[1].Messages()
	for _, msg := range msgs {
		fmt.Println(strings.TrimSpace(msg.Role + " " + msg.ToolCallID))
	}
	// Output:
	// tool_use call_1 click
	// end_turn Done.
	// system
	// user
	// assistant
	// tool call_1
	// user
}
