package openai_test

import (
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/internal/faulttest"
	"github.com/spotter-harness/spotter/harness/openai"
	"github.com/spotter-harness/spotter/harness/openai/openaitest"
)

// testKey is a recognizable API key, which must never be logged.
const testKey = "sk-proj-RECOGNIZABLE-test-key-0123456789"

// faults describes the Model to faulttest.
var faults = faulttest.Adapter{
	Key:   testKey,
	API:   "the OpenAI API",
	Shape: "a Responses API response",
	New: func(t *testing.T, baseURL string, log *slog.Logger) harness.Model {
		m, err := openai.New(openai.Config{APIKey: testKey, BaseURL: baseURL + "/v1/",
			MaxRetries: 2, RetryWait: time.Millisecond, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		return m
	},
	Fake: func(t *testing.T) string {
		return openaitest.NewServer(t, openaitest.Reply{Output: []json.RawMessage{openaitest.Message("Done.")}}).URL
	},
	Good: `{"id":"resp_1","object":"response","status":"completed","model":"gpt-5.4","output":[{"type":"message",` +
		`"id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Done.","annotations":[]}]}],` +
		`"usage":{"input_tokens":10,"output_tokens":2,"total_tokens":12}}`,
}

// TestFaults drives the loop against an endpoint that fails in every way
// the Responses API (or a proxy in front of it) can: the Model retries
// twice, then the run stops with an error that says what happened.
func TestFaults(t *testing.T) {
	faulttest.Run(t, faults)
}

// TestKeysNeverLogged runs turns with debug logging against an endpoint
// that answers, and one that echoes the key back: the key appears in no
// log line, error or event.
func TestKeysNeverLogged(t *testing.T) { faulttest.Keys(t, faults) }
