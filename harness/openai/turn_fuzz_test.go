package openai_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/internal/faulttest"
	"github.com/spotter-harness/spotter/harness/openai"
	"github.com/spotter-harness/spotter/screen"
)

// turnSeeds are Responses API response bodies, good and odd.
var turnSeeds = []string{
	`{"id":"resp_1","object":"response","status":"completed","output":[{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Done.","annotations":[]}]}],"usage":{"input_tokens":1,"output_tokens":1}}`,
	`{"id":"resp_2","object":"response","status":"completed","output":[{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"hm"}],"encrypted_content":"x"},{"type":"computer_call","id":"cu_1","call_id":"call_1","status":"completed","actions":[{"type":"click","button":"left","x":10,"y":20},{"type":"type","text":"hi"}],"pending_safety_checks":[]}]}`,
	`{"id":"resp_3","object":"response","status":"completed","output":[{"type":"computer_call","id":"cu_1","call_id":"call_1","action":{"type":"scroll","x":1,"y":2,"scroll_x":0,"scroll_y":1e308},"pending_safety_checks":[{"id":"sc_1","code":"malicious_instructions","message":"careful"}]}]}`,
	`{"id":"resp_4","object":"response","status":"completed","output":[{"type":"function_call","id":"fc_1","call_id":"call_2","name":"lookup_booking","arguments":"{\"ref\":\"AB12\"}"},{"type":"function_call","id":"fc_2","call_id":"call_3","name":"navigate","arguments":"{\"url\":\"https://example.com/\"}"},{"type":"function_call","call_id":"call_4","name":"nope","arguments":"{"}]}`,
	`{"id":"resp_5","object":"response","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"computer_call","call_id":"call_1","actions":[{"type":"keypress","keys":["CTRL","A"]}]}]}`,
	`{"id":"resp_6","object":"response","status":"completed","output":[{"type":"message","content":[{"type":"refusal","refusal":"no"}]}]}`,
	`{"id":"resp_7","object":"response","status":"failed","output":[]}`,
	`{"output":[{"type":"computer_call","actions":"nope"},null,{"type":"web_search_call"}]}`,
	`{"output":[]}`,
}

// FuzzTurn feeds arbitrary bytes to the Model as the Responses API's
// response body, through the SDK, the retrying transport and the decoder:
// it must never panic or hang; a turn it returns must be one the loop can
// act on, and answering it must not panic either.
func FuzzTurn(f *testing.F) {
	for _, s := range turnSeeds {
		f.Add([]byte(s))
	}
	shot := sizedShot("f", "https://example.com/", screen.Size{W: 4, H: 3})
	quiet := slog.New(slog.DiscardHandler)
	tool := harness.ToolSpec{Name: "lookup_booking", InputSchema: json.RawMessage(`{"type":"object"}`)}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := openai.New(openai.Config{APIKey: "k", BaseURL: "http://openai.invalid/v1/", Functions: []string{"navigate", "zoom"},
			Tools: []harness.ToolSpec{tool}, MaxRetries: -1, HTTPClient: faulttest.Fixed(body), Logger: quiet})
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
		if len(turn.Calls) > 0 {
			_, _ = m.Next(ctx, faulttest.Answer(turn, shot))
		}
	})
}
