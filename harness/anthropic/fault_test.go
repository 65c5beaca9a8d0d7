package anthropic_test

import (
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/harness/internal/faulttest"
	"github.com/spotter-harness/spotter/screen"
)

// testKey is a recognizable API key, which must never be logged.
const testKey = "sk-ant-api03-RECOGNIZABLE-test-key-0123456789"

// faults describes the Model to faulttest.
var faults = faulttest.Adapter{
	Key:   testKey,
	API:   "the Anthropic API",
	Shape: "a Messages API message",
	New: func(t *testing.T, baseURL string, log *slog.Logger) harness.Model {
		m, err := anthropic.New(anthropic.Config{APIKey: testKey, BaseURL: baseURL, Display: display,
			MaxRetries: 2, RetryWait: time.Millisecond, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		return m
	},
	Fake: func(t *testing.T) string {
		return anthropictest.NewServer(t, anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Done.")}}).URL
	},
	Good: `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Done."}],` +
		`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":2}}`,
	Capture: screen.CaptureOptions{Size: display, Format: screen.PNG},
}

// TestFaults drives the loop against an endpoint that fails in every way
// the Messages API (or a proxy in front of it) can: the Model retries
// twice, then the run stops with an error that says what happened.
func TestFaults(t *testing.T) {
	faulttest.Run(t, faults)
}

// TestKeysNeverLogged runs turns with debug logging against an endpoint
// that answers, and one that echoes the key back: the key appears in no
// log line, error or event.
func TestKeysNeverLogged(t *testing.T) { faulttest.Keys(t, faults) }
