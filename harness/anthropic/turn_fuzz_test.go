package anthropic_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/harness/internal/faulttest"
	"github.com/spotter-harness/spotter/screen"
)

// turnSeeds are Messages API response bodies, good and odd.
var turnSeeds = []string{
	`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Done."}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`,
	`{"id":"msg_2","type":"message","role":"assistant","content":[{"type":"text","text":"Clicking."},{"type":"tool_use","id":"toolu_1","name":"computer","input":{"action":"left_click","coordinate":[10,20]}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1}}`,
	`{"id":"msg_3","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"computer","input":{"action":"type","text":"hi"}},{"type":"tool_use","id":"toolu_2","name":"lookup_booking","input":{"ref":"AB12"}},{"type":"tool_use","id":"toolu_3","name":"nope","input":{}}],"stop_reason":"tool_use"}`,
	`{"id":"msg_4","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"computer","input":{"action":"left_click_drag","start_coordinate":[1,2],"coordinate":[3,4]}}],"stop_reason":"max_tokens"}`,
	`{"id":"msg_5","type":"message","role":"assistant","content":[{"type":"text","text":"thinking..."}],"stop_reason":"pause_turn"}`,
	`{"id":"msg_6","type":"message","role":"assistant","content":[],"stop_reason":"refusal","stop_details":{"category":"cyber","explanation":"no"}}`,
	`{"id":"msg_7","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"computer","input":"not an object"}],"stop_reason":"tool_use"}`,
	`{"id":"msg_8","type":"message","role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"c2ln"},{"type":"tool_use","id":"toolu_1","name":"computer","input":{"action":"scroll","coordinate":[1e308,-1],"scroll_direction":"down","scroll_amount":1e9}}],"stop_reason":"tool_use"}`,
	`{"id":"msg_9","type":"message","content":[null,{"type":"tool_use"}],"stop_reason":"something_new"}`,
	`{"type":"message","content":[]}`,
	`<html>502</html>`,
}

// FuzzTurn feeds arbitrary bytes to the Model as the Messages API's
// response body, through the SDK, the retrying transport and the decoder:
// it must never panic or hang; a turn it returns must be one the loop can
// act on, and answering it must not panic either.
func FuzzTurn(f *testing.F) {
	for _, s := range turnSeeds {
		f.Add([]byte(s))
	}
	shot := &screen.Shot{Frame: screen.Frame{ID: "f", Viewport: display, DPR: 1, Sent: display, Capture: display, Format: screen.PNG},
		Data: []byte("\x89PNG")}
	quiet := slog.New(slog.DiscardHandler)
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: "http://anthropic.invalid", Display: display,
			Tools: []harness.ToolSpec{lookup}, MaxRetries: -1, HTTPClient: faulttest.Fixed(body), Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		turn, err := m.Next(ctx, harness.Input{Task: "t", Shot: shot})
		if err != nil {
			return
		}
		faulttest.CheckTurn(t, body, turn)
		if turn.Stop == harness.StopPause || len(turn.Calls) > 0 {
			_, _ = m.Next(ctx, faulttest.Answer(turn, shot))
		}
	})
}
