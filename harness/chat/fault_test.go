package chat_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/chat"
	"github.com/spotter-harness/spotter/harness/chat/chattest"
	"github.com/spotter-harness/spotter/harness/internal/faulttest"
)

// testKey is a recognizable API key, which must never be logged.
const testKey = "sk-RECOGNIZABLE-test-key-0123456789"

// faults describes the Model to faulttest.
var faults = faulttest.Adapter{
	Key:   testKey,
	API:   "the chat completions server",
	Shape: "a chat completion",
	New: func(t *testing.T, baseURL string, log *slog.Logger) harness.Model {
		m, err := chat.New(chat.Config{APIKey: testKey, BaseURL: baseURL + "/v1/", Model: "m",
			MaxRetries: 2, RetryWait: time.Millisecond, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		return m
	},
	Fake: func(t *testing.T) string { return chattest.NewServer(t, chattest.Text("Done.")).URL },
	Good: `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop",` +
		`"message":{"role":"assistant","content":"Done."}}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}`,
}

// TestFaults drives the loop against a server that fails in every way an
// OpenAI-compatible server (or a proxy in front of it) can: the Model
// retries twice, then the run stops with an error that says what
// happened.
func TestFaults(t *testing.T) {
	faulttest.Run(t, faults)
}

// TestKeysNeverLogged runs turns with debug logging against an endpoint
// that answers, and one that echoes the key back: the key appears in no
// log line, error or event.
func TestKeysNeverLogged(t *testing.T) { faulttest.Keys(t, faults) }
