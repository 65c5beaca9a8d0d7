package cassette_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/harness/cassette"
	"github.com/spotter-harness/spotter/harness/gemini"
	"github.com/spotter-harness/spotter/harness/gemini/geminitest"
	"github.com/spotter-harness/spotter/harness/openai"
	"github.com/spotter-harness/spotter/harness/openai/openaitest"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/screentest"
)

const testKey = "sk-test-0123456789abcdefghij" // must never reach a cassette

// provider runs one adapter against a fake upstream of its API.
type provider struct {
	name string
	// upstream starts the fake, scripted with a turn of one call (callID)
	// and a final text turn, and returns its base URL.
	upstream func(t *testing.T) string
	newModel func(baseURL string, client *http.Client) (harness.Model, error)
	callID   string
}

var display = screen.Size{W: 1280, H: 800}

func providers() []provider {
	click := actions.Action{Kind: actions.Click, At: actions.Pt(100, 200), HasAt: true}
	return []provider{{
		name: "anthropic",
		upstream: func(t *testing.T) string {
			return anthropictest.NewServer(t,
				anthropictest.Reply{Content: []json.RawMessage{
					anthropictest.Text("Clicking."),
					anthropictest.Action(t, "toolu_01abc", anthropic.Computer20250124, click),
				}},
				anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Done.")}},
			).URL
		},
		newModel: func(base string, c *http.Client) (harness.Model, error) {
			return anthropic.New(anthropic.Config{BaseURL: base, APIKey: testKey, HTTPClient: c,
				Model: "claude-sonnet-4-5", Display: display})
		},
		callID: "toolu_01abc",
	}, {
		name: "openai",
		upstream: func(t *testing.T) string {
			return openaitest.NewServer(t,
				openaitest.Reply{Output: []json.RawMessage{openaitest.ComputerCall("call_7", openaitest.Actions(t, click)...)}},
				openaitest.Reply{Output: []json.RawMessage{openaitest.Message("Done.")}},
			).URL
		},
		newModel: func(base string, c *http.Client) (harness.Model, error) {
			return openai.New(openai.Config{BaseURL: base, APIKey: testKey, HTTPClient: c, Display: display, MaxRetries: -1})
		},
		callID: "call_7",
	}, {
		name: "gemini",
		upstream: func(t *testing.T) string {
			grid := actions.Action{Kind: actions.Click, At: actions.Pt(500, 250), HasAt: true}
			call, err := geminitest.CallOf(gemini.FunctionSetFor(gemini.DefaultModel), "fc_1", grid)
			if err != nil {
				t.Fatal(err)
			}
			return geminitest.NewServer(t,
				geminitest.Turn{Calls: []geminitest.Call{call}}.Reply(),
				geminitest.Text("Done."),
			).URL
		},
		newModel: func(base string, c *http.Client) (harness.Model, error) {
			return gemini.New(gemini.Config{BaseURL: base, APIKey: testKey, HTTPClient: c, Display: display, MaxRetries: -1})
		},
		callID: "fc_1",
	}}
}

// run drives m on a fresh fake display and returns the outcome and what
// the display performed.
func run(t *testing.T, m harness.Model) (harness.Outcome, []screen.Mapped) {
	t.Helper()
	d := &screentest.Fake{}
	out, err := harness.Run(t.Context(), harness.Config{
		Model:   m,
		Display: d,
		Task:    "Click the button.",
		Policy:  actions.Policy{Allow: []actions.Kind{actions.Click}},
		Capture: screen.CaptureOptions{Size: display},
	})
	if err != nil {
		t.Fatalf("harness.Run: %v", err)
	}
	return out, d.Performed()
}

// TestAdaptersRecordThenReplay records each real adapter talking to a fake
// of its API, then replays the cassette to a fresh adapter: the run must
// be the same, with the fake upstream out of the picture.
func TestAdaptersRecordThenReplay(t *testing.T) {
	for _, p := range providers() {
		t.Run(p.name, func(t *testing.T) {
			base := p.upstream(t)
			path := filepath.Join(t.TempDir(), p.name+".json")
			rec := &cassette.Recorder{Path: path, Secrets: []string{testKey}}
			m, err := p.newModel(base, &http.Client{Transport: rec})
			if err != nil {
				t.Fatal(err)
			}
			live, livePerformed := run(t, m)
			if live.Stop != harness.StopEndTurn || live.Calls != 1 || live.Failed != 0 {
				t.Fatalf("live run = %+v, want end_turn after 1 call, none failed", live)
			}

			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(raw, []byte(testKey)) {
				t.Errorf("cassette holds the API key:\n%s", raw)
			}
			c, err := cassette.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(c.Interactions); n != 2 {
				t.Fatalf("recorded %d interactions, want 2", n)
			}
			if got := c.Interactions[1].Request.Match.Answers; !cmp.Equal(got, []string{p.callID}) {
				t.Errorf("interaction 1 answers %q, want [%q]", got, p.callID)
			}

			player := cassette.NewPlayer(c)
			// The fake's URL, but the in-memory client never reaches it.
			m2, err := p.newModel(base, player.Client())
			if err != nil {
				t.Fatal(err)
			}
			replayed, performed := run(t, m2)
			if err := player.Err(); err != nil {
				t.Errorf("replay: Player.Err() = %v", err)
			}
			ignore := cmpopts.IgnoreFields(harness.Outcome{}, "Elapsed")
			if diff := cmp.Diff(live, replayed, ignore); diff != "" {
				t.Errorf("replayed outcome (-live +replayed):\n%s", diff)
			}
			if diff := cmp.Diff(livePerformed, performed); diff != "" {
				t.Errorf("replayed actions (-live +replayed):\n%s", diff)
			}
		})
	}
}
