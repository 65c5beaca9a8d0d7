package gemini_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"image"
	"image/color"
	"image/png"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/genai"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
	"github.com/spotter-harness/spotter/harness/gemini"
	"github.com/spotter-harness/spotter/harness/gemini/geminitest"
	"github.com/spotter-harness/spotter/screen"
)

var quiet = slog.New(slog.DiscardHandler)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var _ harness.Model = (*gemini.Model)(nil)

// tinyPNG is a fixed 2x2 PNG, so that goldens stay small and stable.
func tinyPNG(t testing.TB, c color.Gray) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, 2, 2))
	for i := range img.Pix {
		img.Pix[i] = c.Y
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func shot(t testing.TB, url string, c uint8) *screen.Shot {
	return &screen.Shot{
		Frame: screen.Frame{ID: "f", URL: url, Format: screen.PNG, Sent: screen.Size{W: 2, H: 2}},
		Data:  tinyPNG(t, color.Gray{Y: c}),
	}
}

func withSent(s *screen.Shot, w, h int) *screen.Shot {
	s.Frame.Sent = screen.Size{W: w, H: h}
	return s
}

// checkGolden compares a request body, indented, with testdata/name.
func checkGolden(t *testing.T, name string, body []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, body, "", "  "); err != nil {
		t.Fatalf("request body %s is not JSON: %v\n%s", name, err, body)
	}
	buf.WriteByte('\n')
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), buf.String()); diff != "" {
		t.Errorf("request body %s (-want +got):\n%s", name, diff)
	}
}

func newModel(t *testing.T, srv *geminitest.Server, cfg gemini.Config) *gemini.Model {
	t.Helper()
	cfg.APIKey = "test-key"
	cfg.BaseURL = srv.URL
	cfg.MaxRetries = -1
	cfg.Logger = quiet
	m, err := gemini.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

func chord(t testing.TB, s string) actions.Chord {
	t.Helper()
	c, err := actions.ParseChord(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ignoreRaw leaves Raw and DecodeErr to separate checks.
var ignoreRaw = cmpopts.IgnoreFields(harness.Call{}, "Raw", "DecodeErr")

func TestConversationLegacy(t *testing.T) {
	sig := []byte("opaque-signature-\x00\xff")
	srv := geminitest.NewServer(t,
		geminitest.Turn{
			Thought: "The search box is at the top.",
			Text:    "I will search.",
			Calls: []geminitest.Call{
				{ID: "call-1", Name: "click_at", Args: map[string]any{"x": 120, "y": 45}, ThoughtSignature: sig},
				{ID: "call-2", Name: "type_text_at", Args: map[string]any{
					"x": 500, "y": 45, "text": "gophers", "press_enter": true,
					"safety_decision": map[string]any{"decision": "require_confirmation", "explanation": "Typing into a search form."},
				}},
			},
			Usage: geminitest.Usage{Prompt: 2000, Candidates: 30, Cached: 1000, Thoughts: 70},
		}.Reply(),
		geminitest.Text("Done: the results are shown."),
	)
	m := newModel(t, srv, gemini.Config{Model: "gemini-2.5-computer-use-preview-10-2025", System: "You operate a browser."})
	if got := m.FunctionSet(); got != gemini.FunctionsLegacy {
		t.Errorf("FunctionSet() = %v, want legacy", got)
	}

	turn, err := m.Next(t.Context(), harness.Input{Task: "Search for gophers.", Shot: shot(t, "https://example.com/", 10)})
	if err != nil {
		t.Fatalf("Next(first) error: %v", err)
	}
	want := harness.Turn{
		Text: "I will search.",
		Stop: harness.StopToolUse,
		Calls: []harness.Call{
			{ID: "call-1", Name: "click_at", Space: screen.Grid1000, Actions: []actions.Action{
				{Kind: actions.Click, At: actions.Pt(120, 45), HasAt: true},
			}},
			{ID: "call-2", Name: "type_text_at", Space: screen.Grid1000,
				SafetyChecks: []harness.SafetyCheck{{ID: "call-2", Code: "require_confirmation", Message: "Typing into a search form."}},
				Actions: []actions.Action{
					{Kind: actions.Click, At: actions.Pt(500, 45), HasAt: true},
					{Kind: actions.Keypress, Keys: chord(t, "Control+a")},
					{Kind: actions.Keypress, Keys: chord(t, "Delete")},
					{Kind: actions.Type, Text: "gophers"},
					{Kind: actions.Keypress, Keys: chord(t, "Enter")},
				}},
		},
		// 1000 uncached at $1.25/M, 1000 cached at $0.125/M, 100 out at $10/M.
		Usage: harness.Usage{InputTokens: 2000, OutputTokens: 100, CachedTokens: 1000, CostUSD: 0.002375},
	}
	if diff := cmp.Diff(want, turn, ignoreRaw, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("Next(first) turn (-want +got):\n%s", diff)
	}
	for _, c := range turn.Calls {
		if c.DecodeErr != nil {
			t.Errorf("call %s: DecodeErr = %v, want nil", c.ID, c.DecodeErr)
		}
	}
	// Raw is the part as sent, thought signature included.
	var raw struct {
		FunctionCall struct {
			ID   string         `json:"id"`
			Name string         `json:"name"`
			Args map[string]any `json:"args"`
		} `json:"functionCall"`
		ThoughtSignature []byte `json:"thoughtSignature"`
	}
	if err := json.Unmarshal(turn.Calls[0].Raw, &raw); err != nil {
		t.Fatalf("call 0 Raw %s: %v", turn.Calls[0].Raw, err)
	}
	if raw.FunctionCall.ID != "call-1" || raw.FunctionCall.Name != "click_at" || !bytes.Equal(raw.ThoughtSignature, sig) {
		t.Errorf("call 0 Raw = %s, want the click_at part with its thought signature", turn.Calls[0].Raw)
	}

	turn, err = m.Next(t.Context(), harness.Input{Results: []harness.Result{
		{CallID: "call-1", Ran: 1, Shot: shot(t, "https://example.com/", 20)},
		{CallID: "call-2", Ran: 5, Shot: shot(t, "https://example.com/search?q=gophers", 30),
			Acknowledged: []harness.SafetyCheck{{ID: "call-2", Code: "require_confirmation"}},
			Notes:        []string{"the page did not settle within 2s"}},
	}})
	if err != nil {
		t.Fatalf("Next(results) error: %v", err)
	}
	wantEnd := harness.Turn{Text: "Done: the results are shown.", Stop: harness.StopEndTurn,
		Usage: harness.Usage{InputTokens: 1000, OutputTokens: 20, CostUSD: 0.00145}}
	if diff := cmp.Diff(wantEnd, turn, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("Next(results) turn (-want +got):\n%s", diff)
	}

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("server got %d requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		if r.Model != "gemini-2.5-computer-use-preview-10-2025" || r.Header.Get("x-goog-api-key") != "test-key" {
			t.Errorf("request %d: model %q, key %q; want the configured model and key", i, r.Model, r.Header.Get("x-goog-api-key"))
		}
	}
	checkGolden(t, "legacy_first.json", reqs[0].Body)
	checkGolden(t, "legacy_continuation.json", reqs[1].Body)
}

func TestConversation35(t *testing.T) {
	srv := geminitest.NewServer(t,
		geminitest.Turn{
			Calls: []geminitest.Call{
				{ID: "a", Name: "click", Args: map[string]any{"x": 10, "y": 990, "intent": "open the menu"}, ThoughtSignature: []byte("sig-a")},
				{Name: "hotkey", Args: map[string]any{"keys": []any{"Control", "c"}}},
				{ID: "c", Name: "key_down", Args: map[string]any{"key": "Shift"}},
				{ID: "d", Name: "open_app", Args: map[string]any{"name": "calculator"}},
				{ID: "e", Name: "type", Args: map[string]any{"text": "hunter2", "safety_decision": map[string]any{"decision": "require_confirmation", "explanation": "Entering a password."}}},
				{ID: "f", Name: "scroll", Args: map[string]any{"x": 500, "y": 400, "direction": "up", "magnitude": 250}},
			},
		}.Reply(),
		geminitest.Text("Stopped."),
	)
	m := newModel(t, srv, gemini.Config{Model: "gemini-3.5-flash", MaxTokens: 4096})

	turn, err := m.Next(t.Context(), harness.Input{Task: "Copy the total.", Shot: shot(t, "https://shop.test/", 10)})
	if err != nil {
		t.Fatalf("Next(first) error: %v", err)
	}
	want := []harness.Call{
		{ID: "a", Name: "click", Space: screen.Grid1000, Actions: []actions.Action{{Kind: actions.Click, At: actions.Pt(10, 990), HasAt: true}}},
		{ID: "gemini-call-2", Name: "hotkey", Space: screen.Grid1000, Actions: []actions.Action{{Kind: actions.Keypress, Keys: chord(t, "Control+c")}}},
		{ID: "c", Name: "key_down", Space: screen.Grid1000},
		{ID: "d", Name: "open_app", Space: screen.Grid1000},
		{ID: "e", Name: "type", Space: screen.Grid1000, Actions: []actions.Action{{Kind: actions.Type, Text: "hunter2"}},
			SafetyChecks: []harness.SafetyCheck{{ID: "e", Code: "require_confirmation", Message: "Entering a password."}}},
		{ID: "f", Name: "scroll", Space: screen.Grid1000, Actions: []actions.Action{{Kind: actions.Scroll, At: actions.Pt(500, 400), HasAt: true, DeltaY: -250}}},
	}
	if diff := cmp.Diff(want, turn.Calls, ignoreRaw); diff != "" {
		t.Errorf("Next(first) calls (-want +got):\n%s", diff)
	}
	if turn.Stop != harness.StopToolUse {
		t.Errorf("Next(first) stop = %q, want tool_use", turn.Stop)
	}
	wantErr := map[string]string{"c": "key_down is not supported", "d": `unknown function "open_app"`}
	for _, c := range turn.Calls {
		switch w, ok := wantErr[c.ID]; {
		case ok && (c.DecodeErr == nil || !strings.Contains(c.DecodeErr.Error(), w) || !errors.Is(c.DecodeErr, actions.ErrInvalid)):
			t.Errorf("call %s (%s): DecodeErr = %v, want ErrInvalid saying %q", c.ID, c.Name, c.DecodeErr, w)
		case !ok && c.DecodeErr != nil:
			t.Errorf("call %s (%s): DecodeErr = %v, want nil", c.ID, c.Name, c.DecodeErr)
		}
	}

	// The loop answers every call: undecodable ones and the denied one
	// with errors, the display's screenshot with each.
	results := []harness.Result{
		{CallID: "a", Ran: 1, Shot: shot(t, "https://shop.test/menu", 20)},
		{CallID: "gemini-call-2", Ran: 1, Shot: shot(t, "https://shop.test/menu", 21)},
		{CallID: "c", Err: turn.Calls[2].DecodeErr, Shot: shot(t, "https://shop.test/menu", 22)},
		{CallID: "d", Err: turn.Calls[3].DecodeErr, Shot: shot(t, "https://shop.test/menu", 23)},
		{CallID: "e", Err: errors.New("a human denied this action"), Shot: shot(t, "https://shop.test/menu", 24)},
		{CallID: "f", Ran: 1, Shot: shot(t, "https://shop.test/menu", 25)},
	}
	if _, err := m.Next(t.Context(), harness.Input{Results: results}); err != nil {
		t.Fatalf("Next(results) error: %v", err)
	}
	reqs := srv.Requests()
	checkGolden(t, "v35_first.json", reqs[0].Body)
	checkGolden(t, "v35_continuation.json", reqs[1].Body)

	// The parsed view of the same continuation: six responses in one
	// content, ids as the model sent them, no acknowledgement for the
	// denied check.
	frs, err := reqs[1].FunctionResponses()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, fr := range frs {
		ids = append(ids, fr.ID)
		if _, ok := fr.Response["safety_acknowledgement"]; ok {
			t.Errorf("response %q: has safety_acknowledgement, want none (the check was denied)", fr.ID)
		}
		if len(fr.Parts) != 1 || fr.Parts[0].InlineData == nil || fr.Parts[0].InlineData.MIMEType != "image/png" {
			t.Errorf("response %q: parts %+v, want one inline PNG", fr.ID, fr.Parts)
		}
	}
	if diff := cmp.Diff([]string{"a", "", "c", "d", "e", "f"}, ids); diff != "" {
		t.Errorf("function response ids (-want +got):\n%s", diff)
	}
}

func TestToolDeclaration(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Text("ok"))
	drag := gemini.Function{
		Declaration: &genai.FunctionDeclaration{
			Name:        "drag_and_drop",
			Description: "Drag from (x, y) to (destination_x, destination_y) with the middle button.",
			Parameters: &genai.Schema{Type: genai.TypeObject, Properties: map[string]*genai.Schema{
				"x": {Type: genai.TypeInteger}, "y": {Type: genai.TypeInteger},
				"destination_x": {Type: genai.TypeInteger}, "destination_y": {Type: genai.TypeInteger},
			}, Required: []string{"x", "y", "destination_x", "destination_y"}},
		},
		Decode: func(args map[string]any) ([]actions.Action, error) {
			return []actions.Action{{Kind: actions.Screenshot}}, nil
		},
	}
	m := newModel(t, srv, gemini.Config{
		Model:       "gemini-3.5-flash",
		Exclude:     []string{"navigate", "go_back"},
		Custom:      []gemini.Function{drag},
		Environment: genai.EnvironmentDesktop,
	})
	if _, err := m.Next(t.Context(), harness.Input{Task: "Look."}); err != nil {
		t.Fatalf("Next error: %v", err)
	}
	checkGolden(t, "tools_custom.json", srv.Requests()[0].Body)
}

func TestCustomAndExcludedCalls(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Turn{Calls: []geminitest.Call{
		{ID: "1", Name: "navigate", Args: map[string]any{"url": "https://example.com"}},
		{ID: "2", Name: "read_clipboard"},
		{ID: "3", Name: "fail_me"},
	}}.Reply())
	m := newModel(t, srv, gemini.Config{
		Model:   "gemini-3.5-flash",
		Exclude: []string{"navigate"},
		Custom: []gemini.Function{
			{Declaration: &genai.FunctionDeclaration{Name: "read_clipboard"}, Decode: func(map[string]any) ([]actions.Action, error) {
				return []actions.Action{{Kind: actions.Keypress, Keys: chord(t, "Control+c")}}, nil
			}},
			{Declaration: &genai.FunctionDeclaration{Name: "fail_me"}, Decode: func(map[string]any) ([]actions.Action, error) {
				return nil, errors.New("fail_me always fails")
			}},
		},
	})
	turn, err := m.Next(t.Context(), harness.Input{Task: "Go."})
	if err != nil {
		t.Fatalf("Next error: %v", err)
	}
	if len(turn.Calls) != 3 {
		t.Fatalf("Next returned %d calls, want 3", len(turn.Calls))
	}
	if err := turn.Calls[0].DecodeErr; err == nil || !strings.Contains(err.Error(), "excluded") {
		t.Errorf("excluded navigate: DecodeErr = %v, want an error saying it is excluded", err)
	}
	if diff := cmp.Diff([]actions.Action{{Kind: actions.Keypress, Keys: chord(t, "Control+c")}}, turn.Calls[1].Actions); diff != "" || turn.Calls[1].DecodeErr != nil {
		t.Errorf("custom read_clipboard: DecodeErr %v, actions (-want +got):\n%s", turn.Calls[1].DecodeErr, diff)
	}
	if err := turn.Calls[2].DecodeErr; err == nil || !strings.Contains(err.Error(), "always fails") {
		t.Errorf("custom fail_me: DecodeErr = %v, want its decoder's error", err)
	}
}

// TestResultForms checks how each kind of Result is written.
func TestResultForms(t *testing.T) {
	calls := []geminitest.Call{
		{ID: "ok", Name: "take_screenshot"},
		{ID: "err", Name: "click", Args: map[string]any{"x": 1, "y": 2}},
		{ID: "gone", Name: "click", Args: map[string]any{"x": 1, "y": 2}},
		{ID: "events", Name: "click", Args: map[string]any{"x": 1, "y": 2}},
		{ID: "ack", Name: "click", Args: map[string]any{"x": 1, "y": 2, "safety_decision": map[string]any{"decision": "require_confirmation", "explanation": "x"}}},
		{ID: "stray-ack", Name: "click", Args: map[string]any{"x": 1, "y": 2}},
		{ID: "cursor", Name: "take_screenshot"},
	}
	srv := geminitest.NewServer(t, geminitest.Turn{Calls: calls}.Reply(), geminitest.Text("ok"))
	// Every screenshot as it is: this test is about each response's form.
	m := newModel(t, srv, gemini.Config{Model: "gemini-3.5-flash", Context: ctxpolicy.Policy{Keep: ctxpolicy.All, Repeats: true}})
	if _, err := m.Next(t.Context(), harness.Input{Task: "t"}); err != nil {
		t.Fatal(err)
	}
	withEvents := shot(t, "https://a.test/", 1)
	withEvents.Events = []string{"a new tab opened: https://b.test/"}
	results := []harness.Result{
		{CallID: "ok", Ran: 1, Shot: shot(t, "https://a.test/", 1)},
		{CallID: "err", Err: errors.New("coordinate outside the screenshot"), Shot: shot(t, "https://a.test/", 1)},
		{CallID: "gone", Err: errors.New("display is gone")},
		{CallID: "events", Ran: 1, Shot: withEvents, Notes: []string{"older screenshot"}},
		{CallID: "ack", Ran: 1, Shot: shot(t, "https://a.test/", 1), Acknowledged: []harness.SafetyCheck{{ID: "ack"}}},
		{CallID: "stray-ack", Ran: 1, Shot: shot(t, "https://a.test/", 1), Acknowledged: []harness.SafetyCheck{{ID: "stray-ack"}}},
		{CallID: "cursor", Ran: 1, Shot: withSent(shot(t, "https://a.test/", 1), 1280, 800), Cursor: &actions.Point{X: 640, Y: 200},
			Zoom: shot(t, "https://a.test/", 2)},
	}
	if _, err := m.Next(t.Context(), harness.Input{Results: results}); err != nil {
		t.Fatal(err)
	}
	frs, err := srv.Requests()[1].FunctionResponses()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]any{}
	parts := map[string]int{}
	for _, fr := range frs {
		got[fr.ID] = fr.Response
		parts[fr.ID] = len(fr.Parts)
	}
	want := map[string]map[string]any{
		"ok":        {"url": "https://a.test/"},
		"err":       {"url": "https://a.test/", "error": "coordinate outside the screenshot"},
		"gone":      {"error": "display is gone"},
		"events":    {"url": "https://a.test/", "notes": []any{"older screenshot", "a new tab opened: https://b.test/"}},
		"ack":       {"url": "https://a.test/", "safety_acknowledgement": "true"},
		"stray-ack": {"url": "https://a.test/"},
		"cursor":    {"url": "https://a.test/", "cursor": map[string]any{"x": 500.0, "y": 250.0}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("function responses (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"ok": 1, "err": 1, "gone": 0, "events": 1, "ack": 1, "stray-ack": 1, "cursor": 2}, parts); diff != "" {
		t.Errorf("screenshot parts per response (-want +got):\n%s", diff)
	}
}

func TestNextRejectsMismatchedResults(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Turn{Calls: []geminitest.Call{
		{ID: "1", Name: "take_screenshot"}, {ID: "2", Name: "take_screenshot"},
	}}.Reply(), geminitest.Text("ok"))
	m := newModel(t, srv, gemini.Config{Model: "gemini-3.5-flash"})
	if _, err := m.Next(t.Context(), harness.Input{}); err == nil {
		t.Errorf("Next(empty first input) error = nil, want one")
	}
	if _, err := m.Next(t.Context(), harness.Input{Task: "t"}); err != nil {
		t.Fatal(err)
	}
	for _, in := range []harness.Input{
		{Results: []harness.Result{{CallID: "1"}}},
		{Results: []harness.Result{{CallID: "2"}, {CallID: "1"}}},
		{Results: []harness.Result{{CallID: "1"}, {CallID: "2"}, {CallID: "3"}}},
	} {
		if _, err := m.Next(t.Context(), in); err == nil {
			t.Errorf("Next(%d results) error = nil, want a mismatch error", len(in.Results))
		}
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("server got %d requests, want 1 (mismatched inputs must not be sent)", n)
	}
	// The state is unchanged: the right answer still goes through.
	if _, err := m.Next(t.Context(), harness.Input{Results: []harness.Result{{CallID: "1"}, {CallID: "2"}}}); err != nil {
		t.Errorf("Next(matching results) error: %v", err)
	}
}

func TestStopReasons(t *testing.T) {
	click := []geminitest.Call{{ID: "c", Name: "click", Args: map[string]any{"x": 1, "y": 1}}}
	tests := []struct {
		name     string
		replies  []geminitest.Reply
		want     harness.StopReason
		wantText string
		calls    int
		requests int
		wantErr  string
	}{
		{name: "calls", replies: []geminitest.Reply{geminitest.Turn{Calls: click}.Reply()}, want: harness.StopToolUse, calls: 1, requests: 1},
		{name: "text", replies: []geminitest.Reply{geminitest.Text("bye")}, want: harness.StopEndTurn, wantText: "bye", requests: 1},
		{name: "max tokens", replies: []geminitest.Reply{geminitest.Turn{Calls: click, FinishReason: "MAX_TOKENS"}.Reply()}, want: harness.StopMaxTokens, calls: 1, requests: 1},
		{name: "safety", replies: []geminitest.Reply{geminitest.JSON(200, map[string]any{
			"candidates": []any{map[string]any{"finishReason": "SAFETY", "finishMessage": "unsafe content"}},
		})}, want: harness.StopRefusal, wantText: "the model stopped: SAFETY", requests: 1},
		{name: "prompt blocked", replies: []geminitest.Reply{geminitest.JSON(200, map[string]any{
			"promptFeedback": map[string]any{"blockReason": "PROHIBITED_CONTENT"},
		})}, want: harness.StopRefusal, wantText: "the prompt was blocked: PROHIBITED_CONTENT", requests: 1},
		{name: "malformed then ok", replies: []geminitest.Reply{
			geminitest.Turn{FinishReason: "MALFORMED_FUNCTION_CALL"}.Reply(),
			geminitest.Turn{Calls: click}.Reply(),
		}, want: harness.StopToolUse, calls: 1, requests: 2},
		{name: "malformed thrice", replies: []geminitest.Reply{
			geminitest.Turn{FinishReason: "MALFORMED_FUNCTION_CALL"}.Reply(),
			geminitest.Turn{FinishReason: "MALFORMED_FUNCTION_CALL"}.Reply(),
			geminitest.Turn{FinishReason: "MALFORMED_FUNCTION_CALL"}.Reply(),
		}, requests: 3, wantErr: "MALFORMED_FUNCTION_CALL 3 times"},
		{name: "no candidates", replies: []geminitest.Reply{geminitest.JSON(200, map[string]any{})}, requests: 1, wantErr: "200 OK with JSON that is not a GenerateContentResponse; giving up"},
		{name: "bad request", replies: []geminitest.Reply{geminitest.Error(400, "INVALID_ARGUMENT", "bad thing", "")}, requests: 1, wantErr: "bad thing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := geminitest.NewServer(t, tt.replies...)
			m := newModel(t, srv, gemini.Config{Model: "gemini-3.5-flash"})
			turn, err := m.Next(t.Context(), harness.Input{Task: "t"})
			if n := len(srv.Requests()); n != tt.requests {
				t.Errorf("server got %d requests, want %d", n, tt.requests)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("Next error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Next error: %v", err)
			}
			if turn.Stop != tt.want || !strings.Contains(turn.Text, tt.wantText) || len(turn.Calls) != tt.calls {
				t.Errorf("Next = stop %q, text %q, %d calls; want %q, text containing %q, %d calls", turn.Stop, turn.Text, len(turn.Calls), tt.want, tt.wantText, tt.calls)
			}
		})
	}
}

func TestMalformedRetryAddsUsage(t *testing.T) {
	srv := geminitest.NewServer(t,
		geminitest.Turn{FinishReason: "MALFORMED_FUNCTION_CALL", Usage: geminitest.Usage{Prompt: 100, Candidates: 5}}.Reply(),
		geminitest.Turn{Text: "fine", Usage: geminitest.Usage{Prompt: 100, Candidates: 7}}.Reply(),
		geminitest.Text("next"),
	)
	m := newModel(t, srv, gemini.Config{Model: "unknown-model"})
	turn, err := m.Next(t.Context(), harness.Input{Task: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (harness.Usage{InputTokens: 200, OutputTokens: 12}); turn.Usage != want {
		t.Errorf("Usage = %+v, want %+v (both attempts; an unknown model costs 0)", turn.Usage, want)
	}
	// The malformed attempt leaves no trace in the history.
	if _, err := m.Next(t.Context(), harness.Input{Task: "more"}); err != nil {
		t.Fatal(err)
	}
	cs, err := srv.Requests()[2].Contents()
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, c := range cs {
		roles = append(roles, c.Role)
	}
	if diff := cmp.Diff([]string{"user", "model", "user"}, roles); diff != "" {
		t.Errorf("history roles (-want +got):\n%s", diff)
	}
}

// TestContextPolicy: the newest Config.Context.Keep images go in full;
// older ones (the task's screenshot too) become the placeholder.
func TestContextPolicy(t *testing.T) {
	shotCall := geminitest.Turn{Calls: []geminitest.Call{{ID: "s", Name: "take_screenshot"}}}.Reply()
	srv := geminitest.NewServer(t, shotCall, shotCall, shotCall, geminitest.Text("done"))
	m := newModel(t, srv, gemini.Config{Model: "gemini-3.5-flash", Context: ctxpolicy.Policy{Keep: 2, Chunk: 1}})
	in := harness.Input{Task: "t", Shot: shot(t, "", 1)}
	for i := range 4 {
		if _, err := m.Next(t.Context(), in); err != nil {
			t.Fatalf("Next %d: %v", i, err)
		}
		in = harness.Input{Results: []harness.Result{{CallID: "s", Shot: shot(t, "", uint8(i))}}}
	}
	cs, err := srv.Requests()[3].Contents()
	if err != nil {
		t.Fatal(err)
	}
	// user(task+shot), model, user(fr), model, user(fr), model, user(fr)
	var images []int
	var placeholders int
	for _, c := range cs {
		if c.Role != "user" {
			continue
		}
		n := 0
		for _, p := range c.Parts {
			if p.InlineData != nil {
				n++
			}
			if p.Text == ctxpolicy.Placeholder {
				placeholders++
			}
			if p.FunctionResponse != nil {
				n += len(p.FunctionResponse.Parts)
				if p.FunctionResponse.Response["screenshot"] == ctxpolicy.Placeholder {
					placeholders++
				}
			}
		}
		images = append(images, n)
	}
	if diff := cmp.Diff([]int{0, 0, 1, 1}, images); diff != "" {
		t.Errorf("images per user content in the 4th request (-want +got):\n%s", diff)
	}
	if placeholders != 2 {
		t.Errorf("the 4th request has %d placeholders, want 2", placeholders)
	}
}

// TestRetryAfter runs the Model against the fake in-process inside a
// synctest bubble: the waits Retry-After and RetryInfo ask for take no
// real time but are measured exactly.
func TestRetryAfter(t *testing.T) {
	retryInfo := geminitest.JSON(503, map[string]any{"error": map[string]any{
		"code": 503, "status": "UNAVAILABLE", "message": "overloaded",
		"details": []any{map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3s"}},
	}})
	srv := geminitest.NewServer(t,
		geminitest.Error(429, "RESOURCE_EXHAUSTED", "slow down", "7"),
		retryInfo,
		geminitest.Text("ok"),
	)
	synctest.Test(t, func(t *testing.T) {
		m, err := gemini.New(gemini.Config{
			APIKey: "k", BaseURL: srv.URL, Model: "gemini-3.5-flash", Logger: quiet,
			HTTPClient: &http.Client{Transport: srv.Transport()},
		})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		turn, err := m.Next(t.Context(), harness.Input{Task: "t"})
		if err != nil {
			t.Fatalf("Next error: %v", err)
		}
		if turn.Text != "ok" {
			t.Errorf("Next text = %q, want ok", turn.Text)
		}
		if got, want := time.Since(start), 10*time.Second; got != want {
			t.Errorf("Next waited %v, want %v (Retry-After 7 s + RetryInfo 3 s)", got, want)
		}
	})
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("server got %d requests, want 3", n)
	}
}

// TestRetryOverHTTP is the same over a real loopback connection, which a
// synctest bubble cannot hold, with a Retry-After of 50 ms: the real wait
// is what it checks, and TestRetryAfter checks waits exactly.
func TestRetryOverHTTP(t *testing.T) {
	srv := geminitest.NewServer(t, geminitest.Error(429, "RESOURCE_EXHAUSTED", "slow down", "0.05"), geminitest.Text("ok"))
	m, err := gemini.New(gemini.Config{APIKey: "k", BaseURL: srv.URL, Model: "gemini-3.5-flash", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := m.Next(t.Context(), harness.Input{Task: "t"}); err != nil {
		t.Fatalf("Next error: %v", err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("Next returned after %v, want at least the 50 ms Retry-After", d)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("server got %d requests, want 2", n)
	}
}

func TestNewErrors(t *testing.T) {
	decode := func(map[string]any) ([]actions.Action, error) { return nil, nil }
	tests := []struct {
		name string
		cfg  gemini.Config
		want string
	}{
		{"no key", gemini.Config{}, "no API key"},
		{"bad exclude", gemini.Config{APIKey: "k", Model: "gemini-2.5-computer-use-preview-10-2025", Exclude: []string{"click"}}, `"click" is not one of the legacy`},
		{"bad set", gemini.Config{APIKey: "k", Functions: 9}, "unknown function set"},
		{"unnamed custom", gemini.Config{APIKey: "k", Custom: []gemini.Function{{Declaration: &genai.FunctionDeclaration{}, Decode: decode}}}, "Custom[0]"},
		{"duplicate custom", gemini.Config{APIKey: "k", Custom: []gemini.Function{
			{Declaration: &genai.FunctionDeclaration{Name: "f"}, Decode: decode},
			{Declaration: &genai.FunctionDeclaration{Name: "f"}, Decode: decode},
		}}, "declared twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := gemini.New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New(%s) error = %v, want one containing %q", tt.name, err, tt.want)
			}
		})
	}
}

func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want gemini.Config
	}{
		{map[string]string{}, gemini.Config{}},
		{map[string]string{"GEMINI_API_KEY": "g"}, gemini.Config{APIKey: "g"}},
		{map[string]string{"GEMINI_API_KEY": "g", "GOOGLE_API_KEY": "o", "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:1/"},
			gemini.Config{APIKey: "o", BaseURL: "http://127.0.0.1:1/"}},
	}
	for _, tt := range tests {
		got := gemini.ConfigFromEnv(func(k string) string { return tt.env[k] })
		if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreUnexported(gemini.Config{})); diff != "" {
			t.Errorf("ConfigFromEnv(%v) (-want +got):\n%s", tt.env, diff)
		}
	}
}

func TestFunctionSetFor(t *testing.T) {
	tests := []struct {
		model string
		want  gemini.FunctionSet
	}{
		{"gemini-2.5-computer-use-preview-10-2025", gemini.FunctionsLegacy},
		{"models/gemini-2.5-computer-use-preview-10-2025", gemini.FunctionsLegacy},
		{"gemini-3-flash-preview", gemini.FunctionsLegacy},
		{"gemini-3.5-flash", gemini.Functions35},
		{"gemini-4-ultra", gemini.Functions35},
	}
	for _, tt := range tests {
		if got := gemini.FunctionSetFor(tt.model); got != tt.want {
			t.Errorf("FunctionSetFor(%q) = %v, want %v", tt.model, got, tt.want)
		}
	}
}
