package chat_test

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
	"github.com/spotter-harness/spotter/harness/chat"
	"github.com/spotter-harness/spotter/harness/chat/chattest"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
	"github.com/spotter-harness/spotter/screen"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var _ harness.Model = (*chat.Model)(nil)

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

var tinyURL = "data:image/png;base64," + base64.StdEncoding.EncodeToString(tinyPNG)

// display is the size the test screenshots claim to have been sent at.
var display = screen.Size{W: 1280, H: 800}

// shot is the tiny image, with a Frame that says it was sent at 1280x800.
func shot(id string) *screen.Shot {
	return &screen.Shot{Frame: screen.Frame{ID: id, Sent: display, Format: screen.PNG}, Data: tinyPNG}
}

// grayShot is a 4x3 screenshot of one shade of grey, sent at 1280x800.
func grayShot(t *testing.T, id string, y uint8) *screen.Shot {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, 4, 3))
	for i := range img.Pix {
		img.Pix[i] = y
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return &screen.Shot{Frame: screen.Frame{ID: id, Sent: display, Format: screen.PNG}, Data: b.Bytes()}
}

// TestUnchanged: a screenshot identical to the last one sent is not sent
// again; the result says the screen did not change, in both dialects.
func TestUnchanged(t *testing.T) {
	for _, tt := range []struct {
		name  string
		reply chattest.Reply
		id    string
	}{
		{"ui-tars", chattest.UITARS("Wait.", "wait()"), "uitars-1"},
		{"functions", chattest.Calls("", chattest.Computer("call_1", `{"type":"wait"}`)), "call_1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := chattest.NewServer(t, tt.reply, chattest.Text("Done."))
			m := newModel(t, srv, chat.Config{Model: map[string]string{"ui-tars": "ui-tars-1.5", "functions": "qwen2.5-vl"}[tt.name],
				Context: ctxpolicy.Policy{Keep: 3}})
			next(t, m, harness.Input{Task: "x", Shot: grayShot(t, "f0001", 7)})
			next(t, m, harness.Input{Results: []harness.Result{{CallID: tt.id, Shot: grayShot(t, "f0002", 7), Ran: 1}}})
			req := srv.Requests()[1]
			imgs, err := req.Images()
			if err != nil {
				t.Fatal(err)
			}
			if len(imgs) != 1 {
				t.Errorf("request 1 has %d images, want 1 (the first screenshot only)", len(imgs))
			}
			if !strings.Contains(string(req.Body), ctxpolicy.Unchanged) {
				t.Errorf("request 1 does not say that the screen did not change:\n%s", req.Body)
			}
		})
	}
}

// golden compares got, indented, with testdata/name, or rewrites the file
// with -update. Every image must be the tiny screenshot.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	var b bytes.Buffer
	if err := json.Indent(&b, got, "", "  "); err != nil {
		t.Fatalf("request body %s is not JSON: %v", got, err)
	}
	b.WriteByte('\n')
	urls, err := chattest.Request{Body: got}.Images()
	if err != nil {
		t.Fatal(err)
	}
	for i, u := range urls {
		if u != tinyURL {
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

// newModel makes a Model of cfg talking to srv. Every test screenshot is
// the same tiny image, so a cfg without a Context sends each one again
// (ctxpolicy.Policy.Repeats), which keeps the goldens about the wire
// shapes; TestContextPolicy and TestUnchanged are about the policy.
func newModel(t *testing.T, srv *chattest.Server, cfg chat.Config) *chat.Model {
	t.Helper()
	if cfg.Context == (ctxpolicy.Policy{}) {
		cfg.Context.Repeats = true
	}
	cfg.BaseURL = srv.URL
	cfg.MaxRetries = -1
	cfg.Logger = slog.New(slog.DiscardHandler)
	m, err := chat.New(cfg)
	if err != nil {
		t.Fatalf("New(%+v) error: %v", cfg, err)
	}
	return m
}

func next(t *testing.T, m *chat.Model, in harness.Input) harness.Turn {
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

func TestDialectFor(t *testing.T) {
	tests := []struct {
		model string
		want  chat.Dialect
	}{
		{"ByteDance-Seed/UI-TARS-1.5-7B", chat.UITARS15},
		{"bytedance/ui-tars-1.5-7b", chat.UITARS15},
		{"ui-tars", chat.UITARS15},
		{"uitars-1_5", chat.UITARS15},
		{"bytedance-research/UI-TARS-7B-DPO", chat.UITARS10},
		{"UI-TARS-72B-SFT", chat.UITARS10},
		{"ui_tars-1.0-2b", chat.UITARS10},
		{"Qwen/Qwen2.5-VL-7B-Instruct", chat.Functions},
		{"llama3.2-vision", chat.Functions},
		{"", chat.Functions},
	}
	for _, tt := range tests {
		if got := chat.DialectFor(tt.model); got != tt.want {
			t.Errorf("DialectFor(%q) = %q, want %q", tt.model, got, tt.want)
		}
	}
}

// TestUITARS15: the first request and a continuation with an error and
// notes; calls carry the smart-resized space and invented ids; the reply
// goes back into the history with its box tokens restored.
func TestUITARS15(t *testing.T) {
	srv := chattest.NewServer(t,
		chattest.Reply{Content: "Thought: The search box is at the top.\nAction: click(start_box='(644,52)')\n\ntype(content='kittens\\n')",
			Usage: chattest.Usage{Prompt: 1500, Cached: 1000, Completion: 40}},
		chattest.UITARS("The results are shown.", "finished(content='Found 3 kittens.')"),
	)
	m := newModel(t, srv, chat.Config{Model: "ui-tars-1.5-7b"})
	if got := m.Dialect(); got != chat.UITARS15 {
		t.Errorf("Dialect() = %q, want %q", got, chat.UITARS15)
	}
	turn := next(t, m, harness.Input{Task: "Search for kittens.", Shot: shot("f0001")})
	want := harness.Turn{
		Text: "The search box is at the top.",
		Stop: harness.StopToolUse,
		Calls: []harness.Call{{ID: "uitars-1", Name: "uitars", Space: resized, Actions: []actions.Action{
			click(644, 52),
			{Kind: actions.Type, Text: "kittens"},
			{Kind: actions.Keypress, Keys: actions.Chord{"Enter"}},
		}}},
		Usage: harness.Usage{InputTokens: 1500, CachedTokens: 1000, OutputTokens: 40},
	}
	if diff := cmp.Diff(want, turn, ignoreRaw); diff != "" {
		t.Errorf("Next(task) (-want +got):\n%s", diff)
	}
	if c := turn.Calls[0]; c.DecodeErr != nil || string(c.Raw) != `"click(start_box='(644,52)')\n\ntype(content='kittens\\n')"` {
		t.Errorf("call = {DecodeErr: %v, Raw: %s}, want no error and the action text as a JSON string", c.DecodeErr, c.Raw)
	}
	golden(t, "uitars15_first.json", srv.Requests()[0].Body)

	turn = next(t, m, harness.Input{Results: []harness.Result{{
		CallID: "uitars-1", Shot: shot("f0002"), Ran: 2, Err: errors.New("the page did not accept the key"),
		Notes: []string{"The page had not settled after 2s."},
	}}})
	if diff := cmp.Diff(harness.Turn{Text: "Found 3 kittens.", Stop: harness.StopEndTurn}, turn); diff != "" {
		t.Errorf("Next(results) (-want +got):\n%s", diff)
	}
	golden(t, "uitars15_continuation.json", srv.Requests()[1].Body)
}

func TestUITARS10(t *testing.T) {
	srv := chattest.NewServer(t,
		chattest.UITARS("The OK button.", "click(start_box='<|box_start|>(480,500,520,540)<|box_end|>')"),
		chattest.UITARS("It is closed.", "finished()"),
	)
	m := newModel(t, srv, chat.Config{Model: "UI-TARS-7B-DPO", MaxTokens: 500, Temperature: -1})
	turn := next(t, m, harness.Input{Task: "Close the dialog.", Shot: shot("f0001")})
	want := []harness.Call{{ID: "uitars-1", Name: "uitars", Space: screen.Grid1000, Actions: []actions.Action{click(500, 520)}}}
	if diff := cmp.Diff(want, turn.Calls, ignoreRaw); diff != "" {
		t.Errorf("Next(task) calls (-want +got):\n%s", diff)
	}
	golden(t, "uitars10_first.json", srv.Requests()[0].Body)
	cursor := actions.Pt(640, 400) // image pixels: the middle, 500,500 on the grid
	turn = next(t, m, harness.Input{Results: []harness.Result{{CallID: "uitars-1", Shot: shot("f0002"), Ran: 1, Cursor: &cursor}}})
	if turn.Stop != harness.StopEndTurn || turn.Text != "It is closed." {
		t.Errorf("Next(results) = %+v, want end_turn with the thought as text", turn)
	}
	golden(t, "uitars10_continuation.json", srv.Requests()[1].Body)
}

// TestUITARSClickLandsInResizedSpace: a click UI-TARS 1.5 makes on the
// smart-resized image maps back to the same spot of the viewport.
func TestUITARSClickLandsInResizedSpace(t *testing.T) {
	srv := chattest.NewServer(t, chattest.UITARS("Centre.", "click(start_box='(644,406)')\n\nclick(start_box='(1288,812)')\n\nclick(start_box='(1289,10)')"))
	m := newModel(t, srv, chat.Config{Model: "ui-tars-1.5-7b"})
	turn := next(t, m, harness.Input{Task: "x", Shot: shot("f0001")})
	c := turn.Calls[0]
	f := screen.Frame{ID: "f0001", Viewport: display, DPR: 1, Clip: actions.Rect{Max: actions.Pt(1280, 800)}, Capture: display, Sent: display}
	for i, want := range []actions.Point{actions.Pt(640.5, 400.5), actions.Pt(1279.5, 799.5)} {
		got, err := f.Map(c.Actions[i], c.Space)
		if err != nil || got.At != want {
			t.Errorf("Map(%v, %v) = %v, %v; want %v", c.Actions[i].At, c.Space, got.At, err, want)
		}
	}
	if _, err := f.Map(c.Actions[2], c.Space); !errors.Is(err, screen.ErrOutOfBounds) {
		t.Errorf("Map(%v, %v) error = %v, want ErrOutOfBounds", c.Actions[2].At, c.Space, err)
	}
}

// TestUITARSDecodeError: a reply that cannot be parsed is one call with
// DecodeErr; the loop's error result goes back with the screenshot, and
// the model's reply stays in the history as it was.
func TestUITARSDecodeError(t *testing.T) {
	srv := chattest.NewServer(t,
		chattest.UITARS("I will zoom.", "zoom(start_box='(1,2)')"),
		chattest.Text("Thought: Sorry.\nAction: click(start_box='<|box_start|>(10,20)<|box_end|>')"),
	)
	m := newModel(t, srv, chat.Config{Model: "ui-tars-1.5"})
	turn := next(t, m, harness.Input{Task: "x", Shot: shot("f0001")})
	if len(turn.Calls) != 1 {
		t.Fatalf("Next() calls = %+v, want one", turn.Calls)
	}
	c := turn.Calls[0]
	wantErr := `invalid action: unknown action "zoom" (want one of click, left_double, right_single, drag, hotkey, type, scroll, wait, finished, call_user (also left_single, hover, select, press, screenshot))`
	if c.ID != "uitars-1" || c.DecodeErr == nil || c.DecodeErr.Error() != wantErr || turn.Stop != harness.StopToolUse || turn.Text != "I will zoom." {
		t.Errorf("Next() = %+v, call error %v; want call uitars-1 with DecodeErr %q", turn, c.DecodeErr, wantErr)
	}
	turn = next(t, m, harness.Input{Results: []harness.Result{{CallID: "uitars-1", Shot: shot("f0002"),
		Err: fmt.Errorf("could not decode the call: %w", c.DecodeErr)}}})
	if len(turn.Calls) != 1 || turn.Calls[0].ID != "uitars-2" {
		t.Errorf("Next(error result) calls = %+v, want call uitars-2", turn.Calls)
	}
	golden(t, "uitars15_decode_error_continuation.json", srv.Requests()[1].Body)
}

// TestUITARSFinishedAfterActions: finished() after actions returns the
// batch first, then ends the task without another request.
func TestUITARSFinishedAfterActions(t *testing.T) {
	srv := chattest.NewServer(t, chattest.UITARS("Submit and stop.", "hotkey(key='enter')", "finished(content='Submitted.')"))
	m := newModel(t, srv, chat.Config{Model: "ui-tars-1.5"})
	turn := next(t, m, harness.Input{Task: "x", Shot: shot("f0001")})
	want := []harness.Call{{ID: "uitars-1", Name: "uitars", Space: resized, Actions: []actions.Action{{Kind: actions.Keypress, Keys: actions.Chord{"Enter"}}}}}
	if diff := cmp.Diff(want, turn.Calls, ignoreRaw); diff != "" || turn.Stop != harness.StopToolUse {
		t.Errorf("Next(task) = %+v, want tool_use with calls (-want +got):\n%s", turn, diff)
	}
	turn = next(t, m, harness.Input{Results: []harness.Result{{CallID: "uitars-1", Shot: shot("f0002"), Ran: 1}}})
	if diff := cmp.Diff(harness.Turn{Text: "Submitted.", Stop: harness.StopEndTurn}, turn); diff != "" {
		t.Errorf("Next(results) (-want +got):\n%s", diff)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("requests = %d, want 1: the end needs no request", n)
	}
}

func TestUITARSCallUser(t *testing.T) {
	srv := chattest.NewServer(t, chattest.UITARS("A captcha blocks the page.", "call_user()"))
	m := newModel(t, srv, chat.Config{Model: "ui-tars-1.5"})
	turn := next(t, m, harness.Input{Task: "x", Shot: shot("f0001")})
	want := harness.Turn{Text: "The model asks for a human's help: A captcha blocks the page.", Stop: harness.StopEndTurn}
	if diff := cmp.Diff(want, turn); diff != "" {
		t.Errorf("Next() (-want +got):\n%s", diff)
	}
}

// TestContextPolicy: only the newest screenshots are sent; older images
// become the placeholder, text stays.
func TestContextPolicy(t *testing.T) {
	step := chattest.UITARS("Wait.", "wait()")
	srv := chattest.NewServer(t, step, step, step, step)
	m := newModel(t, srv, chat.Config{Model: "ui-tars-1.5", Context: ctxpolicy.Policy{Keep: 2, Chunk: 1}})
	next(t, m, harness.Input{Task: "x", Shot: grayShot(t, "f0001", 1)})
	for i := 1; i <= 3; i++ {
		r := harness.Result{CallID: fmt.Sprintf("uitars-%d", i), Shot: grayShot(t, fmt.Sprintf("f%04d", i+1), uint8(i+1)), Ran: 1}
		if i == 1 {
			r.Notes = []string{"A note that stays."}
		}
		next(t, m, harness.Input{Results: []harness.Result{r}})
	}
	reqs := srv.Requests()
	wantImages := []int{1, 2, 2, 2}
	wantMessages := []int{3, 5, 7, 9} // system, prompt, images or placeholders and notes, replies
	for i, req := range reqs {
		imgs, err := req.Images()
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := req.Messages()
		if err != nil {
			t.Fatal(err)
		}
		if len(imgs) != wantImages[i] || len(msgs) != wantMessages[i] {
			t.Errorf("request %d has %d images in %d messages, want %d in %d", i, len(imgs), len(msgs), wantImages[i], wantMessages[i])
		}
	}
	if !strings.Contains(string(reqs[3].Body), "A note that stays.") {
		t.Errorf("request 3 lost the text of a result whose screenshot was left out")
	}
	if n := strings.Count(string(reqs[3].Body), ctxpolicy.Placeholder); n != 2 {
		t.Errorf("request 3 has %d placeholders, want 2", n)
	}
}

// TestFunctions: the first request declares the computer function; parallel
// calls are answered by one tool message each, then one user message with
// the screenshots labelled by call id.
func TestFunctions(t *testing.T) {
	calls := []chattest.ToolCall{
		chattest.Computer("call_a", `{"type":"click","x":10,"y":20}`),
		chattest.Computer("call_b", `{"actions":[{"type":"type","text":"kittens"},{"type":"keypress","keys":["ENTER"]}]}`),
		chattest.Computer("call_c", `{"type":"zoom","x1":0,"y1":0,"x2":2,"y2":2}`),
		chattest.Computer("call_d", `{"type":"cursor_position"}`),
	}
	srv := chattest.NewServer(t,
		chattest.Reply{Content: "Searching.", ToolCalls: calls, Usage: chattest.Usage{Prompt: 900, Completion: 60}},
		chattest.Text("Found kittens."),
	)
	m := newModel(t, srv, chat.Config{Model: "Qwen/Qwen2.5-VL-7B-Instruct", Display: display,
		Price: &chat.Price{Input: 0.2, Output: 0.2}})
	turn := next(t, m, harness.Input{Task: "Search for kittens.", Shot: shot("f0001")})
	want := harness.Turn{
		Text: "Searching.",
		Stop: harness.StopToolUse,
		Calls: []harness.Call{
			{ID: "call_a", Name: "computer", Space: screen.Image, Actions: []actions.Action{click(10, 20)}},
			{ID: "call_b", Name: "computer", Space: screen.Image, Actions: []actions.Action{{Kind: actions.Type, Text: "kittens"}, {Kind: actions.Keypress, Keys: actions.Chord{"Enter"}}}},
			{ID: "call_c", Name: "computer", Space: screen.Image, Actions: []actions.Action{{Kind: actions.Zoom, Region: actions.Rect{Max: actions.Pt(2, 2)}}}},
			{ID: "call_d", Name: "computer", Space: screen.Image, Actions: []actions.Action{{Kind: actions.CursorPosition}}},
		},
		Usage: harness.Usage{InputTokens: 900, OutputTokens: 60, CostUSD: 960 * 0.2 / 1e6},
	}
	if diff := cmp.Diff(want, turn, ignoreRaw, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("Next(task) (-want +got):\n%s", diff)
	}
	for i, c := range turn.Calls {
		if c.DecodeErr != nil {
			t.Errorf("call %d DecodeErr = %v, want nil", i, c.DecodeErr)
		}
		var raw struct{ ID string }
		if err := json.Unmarshal(c.Raw, &raw); err != nil || raw.ID != calls[i].ID {
			t.Errorf("call %d Raw = %s, want the tool call as sent", i, c.Raw)
		}
	}
	golden(t, "functions_first.json", srv.Requests()[0].Body)

	cursor := actions.Pt(2, 1)
	turn = next(t, m, harness.Input{Results: []harness.Result{
		{CallID: "call_a", Shot: shot("f0002"), Ran: 1},
		{CallID: "call_b", Shot: shot("f0003"), Ran: 1, Err: errors.New("the page did not accept the key"), Notes: []string{"A new tab opened."}},
		{CallID: "call_c", Shot: shot("f0004"), Ran: 1, Zoom: shot("z0001")},
		{CallID: "call_d", Ran: 1, Cursor: &cursor},
	}})
	if turn.Stop != harness.StopEndTurn || turn.Text != "Found kittens." {
		t.Errorf("Next(results) = %+v, want end_turn with text", turn)
	}
	golden(t, "functions_parallel_continuation.json", srv.Requests()[1].Body)
}

// TestFunctionsDecodeErrors: calls that cannot be decoded come back with
// DecodeErr, ID, Name and Raw; their error results reach the model.
func TestFunctionsDecodeErrors(t *testing.T) {
	calls := []chattest.ToolCall{
		chattest.Computer("call_1", `{"type": "click", "x": 1`),
		{ID: "call_2", Name: "teleport", Arguments: `{}`},
		chattest.Computer("call_3", `{"type":"click","x":1}`),
		chattest.Computer("call_4", ``),
		chattest.Computer("call_5", `{"action":"double_click","x":5,"y":6}`),
	}
	srv := chattest.NewServer(t, chattest.Calls("", calls...), chattest.Text("Let me try again."))
	m := newModel(t, srv, chat.Config{Model: "llama-vision", Dialect: chat.Functions})
	turn := next(t, m, harness.Input{Task: "x", Shot: shot("f0001")})
	wantErr := []string{
		`invalid action: computer: arguments are not valid JSON: unexpected end of JSON input`,
		`invalid action: unknown function "teleport" (the only function is computer)`,
		`invalid action: computer: click: missing "y"`,
		`invalid action: computer: no arguments (want a JSON object such as {"type":"click","x":10,"y":20})`,
		``,
	}
	if len(turn.Calls) != len(calls) {
		t.Fatalf("Next() = %d calls, want %d", len(turn.Calls), len(calls))
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
		if c.ID != calls[i].ID || c.Name != calls[i].Name {
			t.Errorf("call %d = {ID: %q, Name: %q}, want {%q, %q}", i, c.ID, c.Name, calls[i].ID, calls[i].Name)
		}
		r := harness.Result{CallID: c.ID, Shot: shot(fmt.Sprintf("f%04d", i+2))}
		if c.DecodeErr != nil {
			r.Err = fmt.Errorf("could not decode the call: %w", c.DecodeErr)
		} else {
			r.Ran = 1
		}
		results = append(results, r)
	}
	if diff := cmp.Diff([]actions.Action{{Kind: actions.DoubleClick, At: actions.Pt(5, 6), HasAt: true}}, turn.Calls[4].Actions); diff != "" {
		t.Errorf("call 4 actions (-want +got):\n%s", diff)
	}
	next(t, m, harness.Input{Results: results})
	golden(t, "functions_decode_errors_continuation.json", srv.Requests()[1].Body)
}

// TestFunctionsOddServers: arguments sent as an object instead of a
// string, and tool calls without ids, are still understood and answered.
func TestFunctionsOddServers(t *testing.T) {
	body := `{"id":"chatcmpl-odd","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,
		"message":{"role":"assistant","content":"","tool_calls":[
			{"type":"function","function":{"name":"computer","arguments":{"type":"move","x":3,"y":4}}},
			{"id":"","type":"function","function":{"name":"computer","arguments":"{\"type\":\"screenshot\"}"}}]},
		"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`
	srv := chattest.NewServer(t, chattest.Reply{Body: json.RawMessage(body)}, chattest.Text("done"))
	m := newModel(t, srv, chat.Config{Model: "m"})
	turn := next(t, m, harness.Input{Task: "x", Shot: shot("f0001")})
	want := []harness.Call{
		{ID: "call_1", Name: "computer", Space: screen.Image, Actions: []actions.Action{{Kind: actions.Move, At: actions.Pt(3, 4), HasAt: true}}},
		{ID: "call_2", Name: "computer", Space: screen.Image, Actions: []actions.Action{{Kind: actions.Screenshot}}},
	}
	if diff := cmp.Diff(want, turn.Calls, ignoreRaw); diff != "" {
		t.Errorf("Next() calls (-want +got):\n%s", diff)
	}
	next(t, m, harness.Input{Results: []harness.Result{{CallID: "call_1", Shot: shot("f0002"), Ran: 1}, {CallID: "call_2", Shot: shot("f0003"), Ran: 1}}})
	msgs, err := srv.Requests()[1].Messages()
	if err != nil {
		t.Fatal(err)
	}
	var ids, tools []string
	for _, msg := range msgs {
		for _, c := range msg.ToolCalls {
			ids = append(ids, c.ID+" "+c.Function.Arguments)
		}
		if msg.Role == "tool" {
			tools = append(tools, msg.ToolCallID)
		}
	}
	if diff := cmp.Diff([]string{`call_1 {"type":"move","x":3,"y":4}`, `call_2 {"type":"screenshot"}`}, ids); diff != "" {
		t.Errorf("assistant tool calls sent back (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"call_1", "call_2"}, tools); diff != "" {
		t.Errorf("tool messages (-want +got):\n%s", diff)
	}
}

func TestFunctionsSpace(t *testing.T) {
	tests := []struct {
		space screen.Space
		want  screen.Space
	}{
		{screen.Space{}, screen.Image},
		{screen.Grid1000, screen.Grid1000},
		{screen.Space{Kind: screen.ResizedSpace}, resized},
		{screen.Space{Kind: screen.ResizedSpace, Resized: screen.Size{W: 1000, H: 600}}, screen.Space{Kind: screen.ResizedSpace, Resized: screen.Size{W: 1000, H: 600}}},
	}
	for _, tt := range tests {
		srv := chattest.NewServer(t, chattest.Calls("", chattest.Computer("c1", `{"type":"click","x":1,"y":1}`)))
		m := newModel(t, srv, chat.Config{Model: "qwen", Space: tt.space})
		turn := next(t, m, harness.Input{Task: "x", Shot: shot("f0001")})
		if got := turn.Calls[0].Space; got != tt.want {
			t.Errorf("Config.Space %v: call space = %v, want %v", tt.space, got, tt.want)
		}
	}
}

func TestStops(t *testing.T) {
	tests := []struct {
		name    string
		model   string
		reply   chattest.Reply
		want    harness.StopReason
		text    string
		ncalls  int
		decoded bool
	}{
		{"end", "m", chattest.Text("All done."), harness.StopEndTurn, "All done.", 0, false},
		{"empty", "m", chattest.Text(""), harness.StopEndTurn, "", 0, false},
		{"refusal", "m", chattest.Reply{Body: json.RawMessage(`{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}],"usage":{}}`)},
			harness.StopRefusal, "I can't help with that.", 0, false},
		{"content filter", "m", chattest.Reply{Content: "", Finish: "content_filter"}, harness.StopRefusal, "", 0, false},
		{"max tokens", "m", chattest.Reply{ToolCalls: []chattest.ToolCall{chattest.Computer("c1", `{"type":"click","x":1,`)}, Finish: "length"},
			harness.StopMaxTokens, "", 1, false},
		{"tool use with finish stop (Ollama)", "m", chattest.Reply{ToolCalls: []chattest.ToolCall{chattest.Computer("c1", `{"type":"wait"}`)}, Finish: "stop"},
			harness.StopToolUse, "", 1, true},
		{"ui-tars truncated", "ui-tars-1.5", chattest.Reply{Content: "Thought: Type it.\nAction: type(content='abc", Finish: "length"},
			harness.StopMaxTokens, "Type it.", 1, false},
		{"ui-tars truncated finished", "ui-tars-1.5", chattest.Reply{Content: "Thought: Done.\nAction: finished()", Finish: "length"},
			harness.StopMaxTokens, "Done.", 0, false},
		{"ui-tars no action", "ui-tars-1.5", chattest.Text("I cannot see the page."), harness.StopToolUse, "I cannot see the page.", 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := chattest.NewServer(t, tt.reply)
			m := newModel(t, srv, chat.Config{Model: tt.model})
			turn := next(t, m, harness.Input{Task: "x", Shot: shot("f0001")})
			if turn.Stop != tt.want || turn.Text != tt.text || len(turn.Calls) != tt.ncalls {
				t.Errorf("Next() = {Stop: %q, Text: %q, %d calls}, want {%q, %q, %d calls}", turn.Stop, turn.Text, len(turn.Calls), tt.want, tt.text, tt.ncalls)
			}
			for _, c := range turn.Calls {
				if (c.DecodeErr == nil) != tt.decoded {
					t.Errorf("call %s DecodeErr = %v, want decoded %v", c.ID, c.DecodeErr, tt.decoded)
				}
			}
		})
	}
}

func TestErrors(t *testing.T) {
	first := harness.Input{Task: "x", Shot: shot("f0001")}
	t.Run("http error then same input again", func(t *testing.T) {
		srv := chattest.NewServer(t,
			chattest.Reply{Code: http.StatusBadRequest, Message: "The model `nope` does not exist."},
			chattest.UITARS("ok", "wait()"),
		)
		m := newModel(t, srv, chat.Config{Model: "ui-tars-1.5", APIKey: "sk-test"})
		_, err := m.Next(t.Context(), first)
		if err == nil || !strings.Contains(err.Error(), "status 400") || !strings.Contains(err.Error(), "The model `nope` does not exist.") {
			t.Errorf("Next() error = %v, want status 400 and the server's message", err)
		}
		if strings.Contains(fmt.Sprint(err), "sk-test") {
			t.Errorf("Next() error %q contains the API key", err)
		}
		turn := next(t, m, first)
		if turn.Calls[0].ID != "uitars-1" {
			t.Errorf("call id after a failed request = %q, want uitars-1", turn.Calls[0].ID)
		}
		reqs := srv.Requests()
		if !bytes.Equal(reqs[0].Body, reqs[1].Body) {
			t.Errorf("request after a failure = %s, want the failed request again: %s", reqs[1].Body, reqs[0].Body)
		}
		if got := reqs[0].Header.Get("Authorization"); got != "Bearer sk-test" {
			t.Errorf("Authorization = %q, want the key as a bearer token", got)
		}
	})
	t.Run("no key, no authorization header", func(t *testing.T) {
		srv := chattest.NewServer(t, chattest.Text("ok"))
		m := newModel(t, srv, chat.Config{Model: "m"})
		next(t, m, first)
		if got, ok := srv.Requests()[0].Header["Authorization"]; ok {
			t.Errorf("Authorization = %q, want none without a key", got)
		}
	})
	t.Run("no choices", func(t *testing.T) {
		srv := chattest.NewServer(t, chattest.Reply{Body: json.RawMessage(`{"id":"x","object":"chat.completion","choices":[]}`)})
		m := newModel(t, srv, chat.Config{Model: "m"})
		if _, err := m.Next(t.Context(), first); err == nil || !strings.Contains(err.Error(), "no choices") {
			t.Errorf("Next() error = %v, want one saying there are no choices", err)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		srv := chattest.NewServer(t)
		m := newModel(t, srv, chat.Config{Model: "m"})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := m.Next(ctx, first); !errors.Is(err, context.Canceled) {
			t.Errorf("Next(canceled ctx) error = %v, want context.Canceled", err)
		}
	})
	t.Run("bad inputs", func(t *testing.T) {
		srv := chattest.NewServer(t, chattest.Calls("", chattest.Computer("c1", `{"type":"wait"}`), chattest.Computer("c2", `{"type":"wait"}`)))
		m := newModel(t, srv, chat.Config{Model: "m"})
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
			{harness.Input{Results: []harness.Result{{CallID: "c1", Shot: shot("a")}}}, "got 1 results for the 2 calls"},
			{harness.Input{Results: []harness.Result{{CallID: "c2", Shot: shot("a")}, {CallID: "c1", Shot: shot("b")}}}, `result 0 answers call "c2", want "c1"`},
			{harness.Input{Results: []harness.Result{{CallID: "c1", Shot: &screen.Shot{}}, {CallID: "c2"}}}, "has no image data"},
		} {
			if _, err := m.Next(t.Context(), tt.in); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Next(%+v) error = %v, want one containing %q", tt.in, err, tt.want)
			}
		}
	})
	t.Run("ui-tars without a screenshot", func(t *testing.T) {
		srv := chattest.NewServer(t)
		m := newModel(t, srv, chat.Config{Model: "ui-tars-1.5"})
		if _, err := m.Next(t.Context(), harness.Input{Task: "x"}); err == nil || !strings.Contains(err.Error(), "needs a screenshot") {
			t.Errorf("Next(no screenshot) error = %v, want one saying UI-TARS needs a screenshot", err)
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
			srv := chattest.NewServer(t, chattest.Reply{Code: tt.code, Header: tt.header}, chattest.Text("ok"))
			synctest.Test(t, func(t *testing.T) {
				m, err := chat.New(chat.Config{BaseURL: srv.URL, HTTPClient: &http.Client{Transport: srv.Transport()}, Model: "m", MaxRetries: 2, Logger: slog.New(slog.DiscardHandler)})
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
	m, err := chat.New(chat.Config{BaseURL: srv.URL + "/v1/", Model: "m", Timeout: 100 * time.Millisecond, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := m.Next(t.Context(), harness.Input{Task: "x"}); err == nil {
		t.Fatalf("Next() against a server that never answers = nil error, want a timeout")
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("Next() took %v, want about the 100ms timeout", elapsed)
	}
}

// TestLogs: debug logs of a whole session carry neither the API key, nor
// image bytes, nor typed text.
func TestLogs(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv := chattest.NewServer(t,
		chattest.UITARS("Type the password.", "type(content='hunter2')"),
		chattest.UITARS("Done.", "finished()"),
	)
	m, err := chat.New(chat.Config{BaseURL: srv.URL, Model: "ui-tars-1.5", APIKey: "sk-secret-key", Logger: log, Display: screen.Size{W: 1024, H: 768}})
	if err != nil {
		t.Fatal(err)
	}
	next(t, m, harness.Input{Task: "x", Shot: shot("f0001")})
	next(t, m, harness.Input{Results: []harness.Result{{CallID: "uitars-1", Shot: shot("f0002"), Ran: 1}}})
	if !strings.Contains(logs.String(), "differs from Config.Display") {
		t.Errorf("logs do not warn that the screenshot is not Config.Display:\n%s", logs.String())
	}
	for _, secret := range []string{"sk-secret-key", base64.StdEncoding.EncodeToString(tinyPNG)[:16], "hunter2"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("logs contain %q:\n%s", secret, logs.String())
		}
	}
}

func TestNewErrors(t *testing.T) {
	for _, cfg := range []chat.Config{
		{}, // no model
		{Model: "m", Dialect: "ui-tars-3"},
		{Model: "m", Space: screen.Space{Kind: screen.GridSpace}},
		{Model: "m", Space: screen.Space{Kind: 9}},
		{Model: "m", MaxTokens: -1},
		{Model: "m", Display: screen.Size{W: -1}},
	} {
		if _, err := chat.New(cfg); err == nil {
			t.Errorf("New(%+v) = nil error, want one", cfg)
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := map[string]string{"OPENAI_API_KEY": "sk-env", "OPENAI_BASE_URL": "http://127.0.0.1:11434/v1/"}
	got := chat.ConfigFromEnv(func(k string) string { return env[k] })
	want := chat.Config{APIKey: "sk-env", BaseURL: "http://127.0.0.1:11434/v1/"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ConfigFromEnv() (-want +got):\n%s", diff)
	}
}
