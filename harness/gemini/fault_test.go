package gemini_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/gemini"
	"github.com/spotter-harness/spotter/harness/gemini/geminitest"
	"github.com/spotter-harness/spotter/harness/internal/faulttest"
)

// testKey is a recognizable API key, which must never be logged.
const testKey = "AIzaSy-RECOGNIZABLE-test-key-0123456789"

// faults describes the Model to faulttest.
var faults = faulttest.Adapter{
	Key:   testKey,
	API:   "the Gemini API",
	Shape: "a GenerateContentResponse",
	New: func(t *testing.T, baseURL string, log *slog.Logger) harness.Model {
		m, err := gemini.New(gemini.Config{APIKey: testKey, BaseURL: baseURL + "/", Model: "gemini-3.5-flash",
			MaxRetries: 2, RetryWait: time.Millisecond, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		return m
	},
	Fake: func(t *testing.T) string { return geminitest.NewServer(t, geminitest.Text("Done.")).URL },
	Good: `{"candidates":[{"content":{"role":"model","parts":[{"text":"Done."}]},"finishReason":"STOP","index":0}],` +
		`"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":2,"totalTokenCount":12}}`,
}

// TestFaults drives the loop against an endpoint that fails in every way
// the Gemini API (or a proxy in front of it) can: the Model retries twice,
// then the run stops with an error that says what happened.
func TestFaults(t *testing.T) {
	faulttest.Run(t, faults)
}

// TestKeysNeverLogged runs turns with debug logging against an endpoint
// that answers, and one that echoes the key back: the key appears in no
// log line, error or event.
func TestKeysNeverLogged(t *testing.T) { faulttest.Keys(t, faults) }
