package openai_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
	"github.com/spotter-harness/spotter/harness/openai"
	"github.com/spotter-harness/spotter/harness/openai/openaitest"
	"github.com/spotter-harness/spotter/screen"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var _ harness.Model = (*openai.Model)(nil)

// tinyPNG is a fixed 4x3 image, so goldens stay small and stable.
var tinyPNG = func() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 4, 3))
	for i := range 12 {
		img.Set(i%4, i/4, color.RGBA{R: uint8(i * 20), G: 0x40, B: 0x80, A: 0xff})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err) // cannot happen: an in-memory image to a buffer
	}
	return b.Bytes()
}()

func shot(id, url string) *screen.Shot {
	return sizedShot(id, url, screen.Size{W: 4, H: 3})
}

// sizedShot is the tiny image, with a Frame that says it was sent at size s.
func sizedShot(id, url string, s screen.Size) *screen.Shot {
	return &screen.Shot{
		Frame: screen.Frame{ID: id, URL: url, Sent: s, Format: screen.PNG},
		Data:  tinyPNG,
	}
}

// golden compares got, indented, with testdata/name, or rewrites the file
// with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	var b bytes.Buffer
	if err := json.Indent(&b, got, "", "  "); err != nil {
		t.Fatalf("request body %s is not JSON: %v", got, err)
	}
	b.WriteByte('\n')
	// No golden test drops screenshots: every image is the one sent.
	full := "data:image/png;base64," + base64.StdEncoding.EncodeToString(tinyPNG)
	for i, u := range imageURLs(t, got) {
		if u != full {
			t.Errorf("request %s: image %d is %.60s..., want the screenshot sent", name, i, u)
		}
	}
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run go test -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("request %s (-want +got):\n%s", name, diff)
	}
}

func newModel(t *testing.T, srv *openaitest.Server, cfg openai.Config) *openai.Model {
	t.Helper()
	cfg.BaseURL = srv.URL
	cfg.APIKey = "sk-test"
	cfg.MaxRetries = -1
	cfg.Logger = slog.New(slog.DiscardHandler)
	m, err := openai.New(cfg)
	if err != nil {
		t.Fatalf("New(%+v) error: %v", cfg, err)
	}
	return m
}

func next(t *testing.T, m *openai.Model, in harness.Input) harness.Turn {
	t.Helper()
	turn, err := m.Next(t.Context(), in)
	if err != nil {
		t.Fatalf("Next() error: %v", err)
	}
	return turn
}

// ignoreRaw leaves Call.Raw and DecodeErr out of comparisons; tests check
// them separately.
var ignoreRaw = cmpopts.IgnoreFields(harness.Call{}, "Raw", "DecodeErr")

func TestFirstRequest(t *testing.T) {
	tests := []struct {
		name string
		cfg  openai.Config
	}{
		{"ga_first.json", openai.Config{}},
		{"preview_first.json", openai.Config{Model: "computer-use-preview", Display: screen.Size{W: 1280, H: 800}}},
		{"preview_override_first.json", openai.Config{Model: "my-proxy-model", Tool: openai.ToolPreview,
			Display: screen.Size{W: 1024, H: 768}, Environment: "ubuntu"}},
		{"ga_options_first.json", openai.Config{
			Model: "gpt-5.4", System: "You operate a browser.", MaxTokens: 2048,
			Functions: []string{"navigate", "go_back", "mouse_down"}, ReasoningSummary: "concise",
			Store: true, PromptCacheKey: "session-1", ImageDetail: "high",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := openaitest.NewServer(t, openaitest.Reply{Output: []json.RawMessage{openaitest.Message("ok")}})
			m := newModel(t, srv, tt.cfg)
			first := shot("f0001", "https://example.com/")
			if !tt.cfg.Display.Empty() {
				first = sizedShot("f0001", "https://example.com/", tt.cfg.Display)
			}
			turn := next(t, m, harness.Input{Task: "Open the settings page.", Shot: first})
			if turn.Stop != harness.StopEndTurn || turn.Text != "ok" {
				t.Errorf("Next() = %+v, want end_turn with text ok", turn)
			}
			reqs := srv.Requests()
			golden(t, tt.name, reqs[0].Body)
			if got := reqs[0].Header.Get("Authorization"); got != "Bearer sk-test" {
				t.Errorf("Authorization header = %q, want %q", got, "Bearer sk-test")
			}
		})
	}
}

// TestParallelCalls: N computer calls in one turn are answered by N outputs
// in one request, paired by call_id; reasoning goes back unchanged; safety
// checks are acknowledged only when approved.
func TestParallelCalls(t *testing.T) {
	reasoning := openaitest.Reasoning("rs_1", "The search box is at the top.")
	calls := []json.RawMessage{
		openaitest.ComputerCall("call_a", `{"type":"click","x":10,"y":20,"button":"left"}`),
		openaitest.ComputerCall("call_b", `{"type":"type","text":"kittens"}`, `{"type":"keypress","keys":["ENTER"]}`),
		openaitest.Call{ID: "call_c", Actions: []string{`{"type":"scroll","x":2,"y":2,"scroll_x":0,"scroll_y":400}`},
			Checks: []harness.SafetyCheck{{ID: "sc_1", Code: "malicious_instructions", Message: "The page asks you to ignore your task."}}}.Item(),
		openaitest.Call{ID: "call_d", Actions: []string{`{"type":"wait"}`},
			Checks: []harness.SafetyCheck{{ID: "sc_2", Code: "irrelevant_domain", Message: "The domain is not related to the task."}}}.Item(),
	}
	srv := openaitest.NewServer(t,
		openaitest.Reply{Output: append([]json.RawMessage{reasoning, openaitest.Message("Searching.")}, calls...), Usage: openaitest.Usage{Input: 1000, Cached: 200, Output: 50}},
		openaitest.Reply{Output: []json.RawMessage{openaitest.Message("Found kittens.")}},
	)
	m := newModel(t, srv, openai.Config{})
	turn := next(t, m, harness.Input{Task: "Search for kittens.", Shot: shot("f0001", "https://example.com/")})

	want := harness.Turn{
		Text: "Searching.",
		Stop: harness.StopToolUse,
		Calls: []harness.Call{
			{ID: "call_a", Name: "computer", Space: screen.Image, Actions: []actions.Action{{Kind: actions.Click, At: actions.Pt(10, 20), HasAt: true}}},
			{ID: "call_b", Name: "computer", Space: screen.Image, Actions: []actions.Action{{Kind: actions.Type, Text: "kittens"}, {Kind: actions.Keypress, Keys: actions.Chord{"Enter"}}}},
			{ID: "call_c", Name: "computer", Space: screen.Image, Actions: []actions.Action{{Kind: actions.Scroll, At: actions.Pt(2, 2), HasAt: true, DeltaY: 400}},
				SafetyChecks: []harness.SafetyCheck{{ID: "sc_1", Code: "malicious_instructions", Message: "The page asks you to ignore your task."}}},
			{ID: "call_d", Name: "computer", Space: screen.Image, Actions: []actions.Action{{Kind: actions.Wait, Duration: time.Second}},
				SafetyChecks: []harness.SafetyCheck{{ID: "sc_2", Code: "irrelevant_domain", Message: "The domain is not related to the task."}}},
		},
		Usage: harness.Usage{InputTokens: 1000, CachedTokens: 200, OutputTokens: 50, CostUSD: (800*2.5 + 200*0.25 + 50*15) / 1e6},
	}
	if diff := cmp.Diff(want, turn, ignoreRaw, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("Next(task) (-want +got):\n%s", diff)
	}
	for i, c := range turn.Calls {
		if c.DecodeErr != nil {
			t.Errorf("call %d DecodeErr = %v, want nil", i, c.DecodeErr)
		}
		if !jsonEqual(c.Raw, calls[i]) {
			t.Errorf("call %d Raw = %s, want %s", i, c.Raw, calls[i])
		}
	}

	turn = next(t, m, harness.Input{Results: []harness.Result{
		{CallID: "call_a", Shot: shot("f0002", "https://example.com/"), Ran: 1},
		{CallID: "call_b", Shot: shot("f0003", "https://example.com/search"), Ran: 1, Err: errors.New("the page did not accept the key"),
			Notes: []string{"the page did not settle in 2s"}},
		{CallID: "call_c", Shot: shot("f0004", ""), Ran: 1,
			Acknowledged: []harness.SafetyCheck{{ID: "sc_1"}, {ID: "sc_unknown"}}},
		{CallID: "call_d", Shot: shot("f0005", "https://example.com/"), Err: errors.New("a human refused the safety check irrelevant_domain")},
	}})
	if turn.Stop != harness.StopEndTurn || turn.Text != "Found kittens." {
		t.Errorf("Next(results) = %+v, want end_turn with text %q", turn, "Found kittens.")
	}
	reqs := srv.Requests()
	golden(t, "ga_parallel_continuation.json", reqs[1].Body)

	// The reasoning item went back exactly as it came.
	var body struct{ Input []json.RawMessage }
	if err := json.Unmarshal(reqs[1].Body, &body); err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(body.Input[1], reasoning) {
		t.Errorf("input[1] = %s, want the reasoning item unchanged: %s", body.Input[1], reasoning)
	}
}

func TestPreviewContinuation(t *testing.T) {
	srv := openaitest.NewServer(t,
		openaitest.Reply{Output: []json.RawMessage{
			openaitest.Reasoning("rs_p", ""),
			openaitest.PreviewCall("call_p", `{"type":"double_click","x":100,"y":200,"keys":null}`),
		}},
		openaitest.Reply{Output: []json.RawMessage{openaitest.Message("Done.")}},
	)
	display := screen.Size{W: 1280, H: 800}
	m := newModel(t, srv, openai.Config{Model: "computer-use-preview-2025-03-11", Display: display})
	turn := next(t, m, harness.Input{Task: "Open the file.", Shot: sizedShot("f0001", "", display)})
	want := []harness.Call{{ID: "call_p", Name: "computer_use_preview", Space: screen.Image,
		Actions: []actions.Action{{Kind: actions.DoubleClick, At: actions.Pt(100, 200), HasAt: true}}}}
	if diff := cmp.Diff(want, turn.Calls, ignoreRaw); diff != "" {
		t.Errorf("Next(task) calls (-want +got):\n%s", diff)
	}
	cursor := actions.Pt(100, 200)
	in := harness.Input{Results: []harness.Result{{CallID: "call_p", Shot: shot("f0002", "file:///tmp/a.txt"), Ran: 1, Cursor: &cursor}}}
	want4x3 := "screenshot f0002 is 4x3, but the computer_use_preview tool declares 1280x800 (Config.Display)"
	if _, err := m.Next(t.Context(), in); err == nil || !strings.Contains(err.Error(), want4x3) {
		t.Errorf("Next(4x3 screenshot) error = %v, want %q", err, want4x3)
	}
	in.Results[0].Shot = sizedShot("f0002", "file:///tmp/a.txt", display)
	next(t, m, in)
	golden(t, "preview_continuation.json", srv.Requests()[1].Body)
}

// TestDecodeErrors: calls that cannot be decoded come back with DecodeErr,
// ID, Name and Raw; their error results reach the model and the
// conversation goes on.
func TestDecodeErrors(t *testing.T) {
	items := []json.RawMessage{
		openaitest.FunctionCall("call_f", "navigate", `{"url": "https://exa`),
		openaitest.FunctionCall("call_g", "teleport", `{}`),
		openaitest.ComputerCall("call_h", `{"type":"click","x":1}`),
		openaitest.ComputerCall("call_i", `{"type":"fly"}`),
		openaitest.FunctionCall("call_j", "navigate", `{"url":"https://example.org/"}`),
		openaitest.FunctionCall("call_k", "go_back", ``),
	}
	srv := openaitest.NewServer(t,
		openaitest.Reply{Output: items},
		openaitest.Reply{Output: []json.RawMessage{openaitest.Message("Let me try again.")}},
	)
	m := newModel(t, srv, openai.Config{Functions: []string{"navigate", "go_back"}})
	turn := next(t, m, harness.Input{Task: "Go to example.org.", Shot: shot("f0001", "https://example.com/")})
	if turn.Stop != harness.StopToolUse {
		t.Errorf("Next() stop = %q, want %q", turn.Stop, harness.StopToolUse)
	}
	wantErr := []string{
		`invalid action: navigate: arguments is not valid JSON: unexpected end of JSON input`,
		`invalid action: unknown function "teleport" (declared: navigate, go_back)`,
		`invalid action: actions[0]: click: missing "y"`,
		`invalid action: actions[0]: unknown action type "fly" (want one of ` + strings.Join([]string{
			"click", "double_click", "drag", "keypress", "move", "scroll", "type", "wait", "screenshot"}, ", ") +
			`; Spotter extensions: triple_click, mouse_down, mouse_up, hold_key, zoom, navigate, go_back, go_forward, cursor_position)`,
		``,
		``,
	}
	wantNames := []string{"navigate", "teleport", "computer", "computer", "navigate", "go_back"}
	if len(turn.Calls) != len(items) {
		t.Fatalf("Next() returned %d calls, want %d: %+v", len(turn.Calls), len(items), turn.Calls)
	}
	var results []harness.Result
	for i, c := range turn.Calls {
		got := ""
		if c.DecodeErr != nil {
			got = c.DecodeErr.Error()
			if !errors.Is(c.DecodeErr, actions.ErrInvalid) {
				t.Errorf("call %d DecodeErr = %v, want it to wrap actions.ErrInvalid", i, c.DecodeErr)
			}
		}
		if got != wantErr[i] {
			t.Errorf("call %d DecodeErr = %q, want %q", i, got, wantErr[i])
		}
		var id string
		if err := json.Unmarshal(items[i], &struct {
			CallID *string `json:"call_id"`
		}{&id}); err != nil {
			t.Fatal(err)
		}
		if c.ID != id || c.Name != wantNames[i] || !jsonEqual(c.Raw, items[i]) {
			t.Errorf("call %d = {ID: %q, Name: %q, Raw: %s}, want {%q, %q, %s}", i, c.ID, c.Name, c.Raw, id, wantNames[i], items[i])
		}
		r := harness.Result{CallID: c.ID, Shot: shot(fmt.Sprintf("f%04d", i+2), "https://example.com/")}
		if c.DecodeErr != nil {
			r.Err = c.DecodeErr
		} else {
			r.Ran = 1
		}
		results = append(results, r)
	}
	wantActions := [][]actions.Action{4: {{Kind: actions.Navigate, URL: "https://example.org/"}}, 5: {{Kind: actions.GoBack}}}
	for i, c := range turn.Calls {
		if diff := cmp.Diff(wantActions[i], c.Actions, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("call %d actions (-want +got):\n%s", i, diff)
		}
	}
	turn = next(t, m, harness.Input{Results: results})
	if turn.Text != "Let me try again." {
		t.Errorf("Next(results) text = %q, want %q", turn.Text, "Let me try again.")
	}
	golden(t, "decode_errors_continuation.json", srv.Requests()[1].Body)
}

func TestStops(t *testing.T) {
	tests := []struct {
		name  string
		reply openaitest.Reply
		want  harness.StopReason
		text  string
	}{
		{"end", openaitest.Reply{Output: []json.RawMessage{openaitest.Message("All done.")}}, harness.StopEndTurn, "All done."},
		{"empty", openaitest.Reply{}, harness.StopEndTurn, ""},
		{"refusal", openaitest.Reply{Output: []json.RawMessage{openaitest.Refusal("I can't help with that.")}}, harness.StopRefusal, "I can't help with that."},
		{"max tokens", openaitest.Reply{Status: "incomplete", Incomplete: "max_output_tokens",
			Output: []json.RawMessage{openaitest.ComputerCall("call_1", `{"type":"click","x":1,"y":1}`)}}, harness.StopMaxTokens, ""},
		{"content filter", openaitest.Reply{Status: "incomplete", Incomplete: "content_filter"}, harness.StopRefusal, ""},
		{"tool use", openaitest.Reply{Output: []json.RawMessage{openaitest.ComputerCall("call_1", `{"type":"screenshot"}`)}}, harness.StopToolUse, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := openaitest.NewServer(t, tt.reply)
			m := newModel(t, srv, openai.Config{})
			turn := next(t, m, harness.Input{Task: "x"})
			if turn.Stop != tt.want || turn.Text != tt.text {
				t.Errorf("Next() = {Stop: %q, Text: %q}, want {%q, %q}", turn.Stop, turn.Text, tt.want, tt.text)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	first := harness.Input{Task: "x", Shot: shot("f0001", "")}
	t.Run("http error then same input again", func(t *testing.T) {
		srv := openaitest.NewServer(t,
			openaitest.Reply{Code: http.StatusBadRequest, Message: "Invalid value for 'input'."},
			openaitest.Reply{Output: []json.RawMessage{openaitest.Message("ok")}},
		)
		m := newModel(t, srv, openai.Config{})
		_, err := m.Next(t.Context(), first)
		if err == nil || !strings.Contains(err.Error(), "status 400") || !strings.Contains(err.Error(), "Invalid value for 'input'.") {
			t.Errorf("Next() error = %v, want status 400 and the API's message", err)
		}
		if strings.Contains(fmt.Sprint(err), "sk-test") {
			t.Errorf("Next() error %q contains the API key", err)
		}
		next(t, m, first)
		reqs := srv.Requests()
		if !bytes.Equal(reqs[0].Body, reqs[1].Body) {
			t.Errorf("request after a failure = %s, want the failed request again: %s", reqs[1].Body, reqs[0].Body)
		}
	})
	t.Run("failed response", func(t *testing.T) {
		srv := openaitest.NewServer(t, openaitest.Reply{Status: "failed", Message: "model overloaded"})
		m := newModel(t, srv, openai.Config{})
		if _, err := m.Next(t.Context(), first); err == nil || !strings.Contains(err.Error(), "model overloaded") {
			t.Errorf("Next() error = %v, want the failure message", err)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		srv := openaitest.NewServer(t)
		m := newModel(t, srv, openai.Config{})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := m.Next(ctx, first); !errors.Is(err, context.Canceled) {
			t.Errorf("Next(canceled ctx) error = %v, want context.Canceled", err)
		}
	})
	t.Run("bad inputs", func(t *testing.T) {
		srv := openaitest.NewServer(t, openaitest.Reply{Output: []json.RawMessage{
			openaitest.ComputerCall("call_1", `{"type":"screenshot"}`),
			openaitest.ComputerCall("call_2", `{"type":"screenshot"}`),
		}})
		m := newModel(t, srv, openai.Config{})
		for _, in := range []harness.Input{{}, {Task: "x", Results: []harness.Result{{CallID: "c"}}}} {
			if _, err := m.Next(t.Context(), in); err == nil {
				t.Errorf("Next(%+v) as first input = nil error, want one", in)
			}
		}
		next(t, m, first)
		for _, tt := range []struct {
			in   harness.Input
			want string
		}{
			{harness.Input{}, "got 0 results for the 2 calls"},
			{harness.Input{Results: []harness.Result{{CallID: "call_1", Shot: shot("a", "")}}}, "got 1 results for the 2 calls"},
			{harness.Input{Results: []harness.Result{{CallID: "call_2", Shot: shot("a", "")}, {CallID: "call_1", Shot: shot("b", "")}}}, `result 0 answers call "call_2", want "call_1"`},
			{harness.Input{Results: []harness.Result{{CallID: "call_1", Shot: &screen.Shot{}}, {CallID: "call_2"}}}, "has no image data"},
		} {
			if _, err := m.Next(t.Context(), tt.in); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Next(%+v) error = %v, want one containing %q", tt.in, err, tt.want)
			}
		}
	})
}

// TestRetry runs the Model against the fake in-process inside a synctest
// bubble: the wait the server's Retry-After asks for takes no real time,
// and is measured exactly.
func TestRetry(t *testing.T) {
	tests := []struct {
		name   string
		header http.Header
		code   int
		wait   time.Duration
	}{
		{"429 retry-after", http.Header{"Retry-After": {"1"}}, http.StatusTooManyRequests, time.Second},
		{"503 retry-after-ms", http.Header{"Retry-After-Ms": {"50"}}, http.StatusServiceUnavailable, 50 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := openaitest.NewServer(t,
				openaitest.Reply{Code: tt.code, Header: tt.header},
				openaitest.Reply{Output: []json.RawMessage{openaitest.Message("ok")}},
			)
			synctest.Test(t, func(t *testing.T) {
				m, err := openai.New(openai.Config{BaseURL: srv.URL, HTTPClient: &http.Client{Transport: srv.Transport()}, APIKey: "sk-test", MaxRetries: 2})
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				turn, err := m.Next(t.Context(), harness.Input{Task: "x"})
				elapsed := time.Since(start)
				if err != nil || turn.Text != "ok" {
					t.Fatalf("Next() = %+v, %v; want the reply after the retry", turn, err)
				}
				if n := len(srv.Requests()); n != 2 {
					t.Errorf("requests = %d, want 2", n)
				}
				if elapsed != tt.wait {
					t.Errorf("Next() took %v, want %v (the server's retry-after)", elapsed, tt.wait)
				}
			})
		})
	}
}

// TestContextPolicy: only the newest screenshots are sent in full; older
// ones become a small placeholder image.
func TestContextPolicy(t *testing.T) {
	click := openaitest.ComputerCall
	srv := openaitest.NewServer(t,
		openaitest.Reply{Output: []json.RawMessage{click("call_1", `{"type":"screenshot"}`)}},
		openaitest.Reply{Output: []json.RawMessage{click("call_2", `{"type":"screenshot"}`)}},
		openaitest.Reply{Output: []json.RawMessage{openaitest.Message("done")}},
	)
	m := newModel(t, srv, openai.Config{Context: ctxpolicy.Policy{Keep: 2, Chunk: 1}})
	next(t, m, harness.Input{Task: "x", Shot: shot("f0001", "")})
	next(t, m, harness.Input{Results: []harness.Result{{CallID: "call_1", Shot: shot("f0002", ""), Ran: 1}}})
	next(t, m, harness.Input{Results: []harness.Result{{CallID: "call_2", Shot: shot("f0003", ""), Ran: 1}}})
	full := "data:image/png;base64,"
	for i, req := range srv.Requests() {
		got := imageURLs(t, req.Body)
		var kinds []string
		for _, u := range got {
			if u == full+base64.StdEncoding.EncodeToString(tinyPNG) {
				kinds = append(kinds, "full")
			} else {
				kinds = append(kinds, "placeholder")
				checkPlaceholder(t, u)
			}
		}
		want := [][]string{{"full"}, {"full", "full"}, {"full", "full"}}[i]
		if diff := cmp.Diff(want, kinds); diff != "" {
			t.Errorf("request %d screenshots (-want +got):\n%s", i, diff)
		}
	}
}

// imageURLs lists every image_url in a request body, in order.
func imageURLs(t *testing.T, body []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	var urls []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if u, ok := v["image_url"].(string); ok {
				urls = append(urls, u)
			}
			for _, k := range []string{"input", "content", "output"} {
				walk(v[k])
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return urls
}

// checkPlaceholder checks that a data URL is a uniform 16x10 PNG.
func checkPlaceholder(t *testing.T, u string) {
	t.Helper()
	data, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(u, "data:image/png;base64,"))
	if err != nil {
		t.Fatalf("blank image URL %.40s...: %v", u, err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("blank image: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 16 || b.Dy() != 10 {
		t.Errorf("placeholder image is %dx%d, want 16x10", b.Dx(), b.Dy())
	}
}

func TestNewErrors(t *testing.T) {
	for _, cfg := range []openai.Config{
		{Model: "computer-use-preview"}, // no display
		{Tool: "computer_2030"},
		{Environment: "amiga"},
		{Functions: []string{"teleport"}},
		{Functions: []string{"click"}}, // OpenAI's own action, not an extension
		{ImageDetail: "ultra"},
		{ReasoningSummary: "verbose"},
		{Context: ctxpolicy.Policy{Keep: -2}},
		{Context: ctxpolicy.Policy{Chunk: -1}},
	} {
		if _, err := openai.New(cfg); err == nil {
			t.Errorf("New(%+v) = nil error, want one", cfg)
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := map[string]string{
		"OPENAI_API_KEY": "sk-env", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1",
		"OPENAI_ORG_ID": "org-1", "OPENAI_PROJECT_ID": "proj-1",
	}
	got := openai.ConfigFromEnv(func(k string) string { return env[k] })
	want := openai.Config{APIKey: "sk-env", BaseURL: "http://127.0.0.1:1/v1", Organization: "org-1", Project: "proj-1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ConfigFromEnv() (-want +got):\n%s", diff)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return cmp.Equal(x, y)
}

func TestTimeout(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // never answers
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer srv.Close()
	defer close(stop)
	m, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1/", APIKey: "sk-test", Timeout: 100 * time.Millisecond, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = m.Next(t.Context(), harness.Input{Task: "x"})
	if err == nil {
		t.Fatalf("Next() against a server that never answers = nil error, want a timeout")
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("Next() took %v, want about the 100ms timeout", elapsed)
	}
}

// TestLogs: debug logs of a whole session carry neither the API key nor
// image bytes.
func TestLogs(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv := openaitest.NewServer(t,
		openaitest.Reply{Output: []json.RawMessage{
			openaitest.Reasoning("rs_1", "thinking"),
			openaitest.Call{ID: "call_1", Actions: []string{`{"type":"type","text":"hunter2"}`},
				Checks: []harness.SafetyCheck{{ID: "sc_1"}}}.Item(),
		}},
		openaitest.Reply{Output: []json.RawMessage{openaitest.Message("done")}},
	)
	m, err := openai.New(openai.Config{BaseURL: srv.URL, APIKey: "sk-secret-key", Logger: log, Context: ctxpolicy.Policy{Keep: 1, Chunk: 1}})
	if err != nil {
		t.Fatal(err)
	}
	next(t, m, harness.Input{Task: "x", Shot: shot("f0001", "")})
	next(t, m, harness.Input{Results: []harness.Result{{CallID: "call_1", Shot: shot("f0002", ""), Acknowledged: []harness.SafetyCheck{{ID: "sc_9"}}}}})
	if logs.Len() == 0 {
		t.Fatalf("no logs at debug level, want some")
	}
	for _, secret := range []string{"sk-secret-key", base64.StdEncoding.EncodeToString(tinyPNG)[:16], "hunter2"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("logs contain %q:\n%s", secret, logs.String())
		}
	}
}
