package gemini_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/gemini"
	"github.com/spotter-harness/spotter/harness/gemini/geminitest"
	"github.com/spotter-harness/spotter/harness/internal/faulttest"
	"github.com/spotter-harness/spotter/screen"
)

// turnSeeds are generateContent response bodies, good and odd.
var turnSeeds = []string{
	`{"candidates":[{"content":{"role":"model","parts":[{"text":"Done."}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":1}}`,
	`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"id":"1","name":"click","args":{"x":500,"y":500}},"thoughtSignature":"c2ln"}]},"finishReason":"STOP"}]}`,
	`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"type_text_at","args":{"x":1,"y":2,"text":"hi","press_enter":true}}},{"functionCall":{"name":"lookup_booking","args":{"ref":"AB12"}}},{"functionCall":{"name":"nope"}}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"navigate","args":{"url":"https://example.com/","safety_decision":{"decision":"require_confirmation","explanation":"x"}}}}]},"finishReason":"MAX_TOKENS"}]}`,
	`{"candidates":[{"finishReason":"SAFETY","finishMessage":"unsafe"}]}`,
	`{"candidates":[{"content":{"parts":[]},"finishReason":"MALFORMED_FUNCTION_CALL"}]}`,
	`{"promptFeedback":{"blockReason":"OTHER","blockReasonMessage":"no"}}`,
	`{"candidates":[null]}`,
	`{"candidates":[{"content":{"parts":[null,{"functionCall":{"name":"scroll","args":{"x":1e308,"direction":7}}}]}}]}`,
}

// FuzzTurn feeds arbitrary bytes to the Model as the Gemini API's
// response body, through the SDK, the retrying transport and the decoder:
// it must never panic or hang; a turn it returns must be one the loop can
// act on, and answering it must not panic either.
func FuzzTurn(f *testing.F) {
	for _, s := range turnSeeds {
		f.Add([]byte(s))
	}
	shot := &screen.Shot{Frame: screen.Frame{ID: "f", URL: "https://example.com/", Format: screen.PNG, Sent: screen.Size{W: 2, H: 2}},
		Data: []byte("\x89PNG")}
	tool := harness.ToolSpec{Name: "lookup_booking", InputSchema: json.RawMessage(`{"type":"object"}`)}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := gemini.New(gemini.Config{APIKey: "k", BaseURL: "http://gemini.invalid/", Model: "gemini-3.5-flash",
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

// TestNullParts is what FuzzTurn found: a null part in the model's content
// was kept in the history, and the SDK's request encoder panicked on it
// when the next request sent it back.
func TestNullParts(t *testing.T) {
	srv := geminitest.NewServer(t,
		geminitest.JSON(200, json.RawMessage(`{"candidates":[{"content":{"role":"model","parts":[null,{"functionCall":{"id":"1","name":"click","args":{"x":1,"y":2}}},null]},"finishReason":"STOP"}]}`)),
		geminitest.Text("Done."),
	)
	m := newModel(t, srv, gemini.Config{Model: "gemini-3.5-flash"})
	turn, err := m.Next(t.Context(), harness.Input{Task: "t"})
	if err != nil || len(turn.Calls) != 1 {
		t.Fatalf("Next = %+v, %v; want one call", turn, err)
	}
	in := harness.Input{Results: []harness.Result{{CallID: turn.Calls[0].ID, Shot: shot(t, "https://example.com/", 1), Ran: 1}}}
	if _, err := m.Next(t.Context(), in); err != nil {
		t.Fatalf("Next(results) after a reply with null parts: %v", err)
	}
	contents, err := srv.Requests()[1].Contents()
	if err != nil {
		t.Fatal(err)
	}
	if parts := contents[1].Parts; len(parts) != 1 || parts[0] == nil || parts[0].FunctionCall == nil {
		t.Errorf("the model's content sent back = %+v, want only its function call", parts)
	}
}
