package chat_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/chat"
	"github.com/spotter-harness/spotter/harness/internal/faulttest"
)

// turnSeeds are chat completion bodies, good and odd, for either dialect.
var turnSeeds = []string{
	`{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Done."}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`,
	`{"id":"c2","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Thought: Click it.\nAction: click(start_box='<|box_start|>(640,52)<|box_end|>')"}}]}`,
	`{"id":"c3","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Thought: Done.\nAction: hotkey(key='enter')\n\nfinished(content='ok')"}}]}`,
	`{"id":"c4","object":"chat.completion","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"computer","arguments":"{\"type\":\"click\",\"x\":10,\"y\":20}"}},{"id":"call_2","type":"function","function":{"name":"lookup_booking","arguments":"{\"ref\":\"AB12\"}"}},{"id":"call_3","type":"function","function":{"name":"nope","arguments":"{"}}]}}]}`,
	`{"id":"c5","object":"chat.completion","choices":[{"index":0,"finish_reason":"length","message":{"role":"assistant","content":"Action: type(content='hel"}}]}`,
	`{"id":"c6","choices":[{"finish_reason":"content_filter","message":{"content":""}}]}`,
	`{"id":"c7","choices":[{"message":{"tool_calls":[{"function":{"arguments":"[]"}},null]}}]}`,
	`{"choices":[]}`,
	`{"choices":[null]}`,
}

// FuzzTurn feeds arbitrary bytes to the Model as the server's chat
// completion, in the UI-TARS and the Functions dialect, through the SDK,
// the retrying transport and the decoders: it must never panic or hang; a
// turn it returns must be one the loop can act on, and answering it must
// not panic either.
func FuzzTurn(f *testing.F) {
	for i, s := range turnSeeds {
		f.Add(i%2 == 0, []byte(s))
	}
	shot := shot("f")
	quiet := slog.New(slog.DiscardHandler)
	tool := harness.ToolSpec{Name: "lookup_booking", InputSchema: json.RawMessage(`{"type":"object"}`)}
	f.Fuzz(func(t *testing.T, uitars bool, body []byte) {
		cfg := chat.Config{APIKey: "k", BaseURL: "http://chat.invalid/v1/", Model: "m", Tools: []harness.ToolSpec{tool},
			MaxRetries: -1, HTTPClient: faulttest.Fixed(body), Logger: quiet}
		if uitars {
			cfg.Model, cfg.Tools = "ui-tars-1.5-7b", nil
		}
		m, err := chat.New(cfg)
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
