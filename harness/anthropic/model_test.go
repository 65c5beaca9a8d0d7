package anthropic_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/screen"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var _ harness.Model = (*anthropic.Model)(nil)

var display = screen.Size{W: 1280, H: 800}

// models picks a model of each tool version, to check the table too.
var models = map[anthropic.ToolVersion]string{
	anthropic.Computer20241022: "claude-3-5-sonnet-20241022",
	anthropic.Computer20250124: "claude-sonnet-4-5-20250929",
	anthropic.Computer20251124: "claude-opus-4-5-20251101",
}

// pngOf returns a small PNG, the same bytes every time.
func pngOf(t *testing.T, c color.Gray) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, 2, 2))
	for i := range img.Pix {
		img.Pix[i] = c.Y
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func shot(t *testing.T, id string, y uint8) *screen.Shot {
	return &screen.Shot{
		Frame: screen.Frame{ID: id, Viewport: display, DPR: 1, Sent: display, Capture: display, Format: screen.PNG},
		Data:  pngOf(t, color.Gray{Y: y}),
	}
}

// zoomShot is a zoom capture: a region at full resolution, as JPEG.
func zoomShot(t *testing.T) *screen.Shot {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, image.NewGray(image.Rect(0, 0, 2, 2)), nil); err != nil {
		t.Fatal(err)
	}
	return &screen.Shot{
		Frame: screen.Frame{ID: "z1", Viewport: display, DPR: 1, Sent: screen.Size{W: 1280, H: 800},
			Clip: actions.Rect{Max: actions.Pt(640, 400)}, Format: screen.JPEG},
		Data: b.Bytes(),
	}
}

func newModel(t *testing.T, srv *anthropictest.Server, v anthropic.ToolVersion, edit ...func(*anthropic.Config)) *anthropic.Model {
	t.Helper()
	cfg := anthropic.Config{APIKey: "test-key", BaseURL: srv.URL, Model: models[v], Display: display}
	if srv.URL == "" {
		cfg.BaseURL, cfg.HTTPClient = "http://anthropic.invalid", srv.Client()
	}
	for _, e := range edit {
		e(&cfg)
	}
	m, err := anthropic.New(cfg)
	if err != nil {
		t.Fatalf("New(%+v) error: %v", cfg, err)
	}
	if got := m.ToolVersion(); got != v {
		t.Fatalf("New(model %s).ToolVersion() = %s, want %s", cfg.Model, got, v)
	}
	return m
}

func next(t *testing.T, m *anthropic.Model, in harness.Input) harness.Turn {
	t.Helper()
	turn, err := m.Next(t.Context(), in)
	if err != nil {
		t.Fatalf("Next(%+v) error: %v", in, err)
	}
	return turn
}

// checkGolden compares the requests srv received with testdata/name.json,
// or rewrites the file with -update.
func checkGolden(t *testing.T, name string, srv *anthropictest.Server, v anthropic.ToolVersion) {
	t.Helper()
	type golden struct {
		Path    string          `json:"path"`
		Beta    string          `json:"anthropic-beta"`
		Version string          `json:"anthropic-version"`
		Body    json.RawMessage `json:"body"`
	}
	var got []golden
	for i, r := range srv.Requests() {
		if k := r.Header.Get("X-Api-Key"); k != "test-key" {
			t.Errorf("request %d: x-api-key %q, want %q", i, k, "test-key")
		}
		if b := r.Header.Get("Anthropic-Beta"); b != v.Beta() {
			t.Errorf("request %d: anthropic-beta %q, want %q", i, b, v.Beta())
		}
		got = append(got, golden{r.Path, r.Header.Get("Anthropic-Beta"), r.Header.Get("Anthropic-Version"), r.Body})
	}
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	path := filepath.Join("testdata", string(v), name+".json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), string(b)); diff != "" {
		t.Errorf("requests differ from %s (-want +got):\n%s", path, diff)
	}
}

// callsOf is the part of calls a test compares.
type callView struct {
	ID, Name string
	Actions  []actions.Action
	Space    screen.Space
	Err      string
}

func callsOf(calls []harness.Call) []callView {
	var v []callView
	for _, c := range calls {
		cv := callView{ID: c.ID, Name: c.Name, Actions: c.Actions, Space: c.Space}
		if c.DecodeErr != nil {
			cv.Err = c.DecodeErr.Error()
		}
		v = append(v, cv)
	}
	return v
}

func at(x, y float64) actions.Point { return actions.Pt(x, y) }

// TestSession runs a three-turn conversation in each tool version: the
// first turn (tool declaration and first screenshot), a continuation
// answering two parallel calls (one of them failed), and a last turn
// answering zoom, cursor_position, or a partly failed key sequence.
func TestSession(t *testing.T) {
	type step struct {
		reply   anthropictest.Reply
		in      func(calls []harness.Call) harness.Input
		want    []callView
		stop    harness.StopReason
		text    string
		wantErr error
	}
	tool := func(id, input string) json.RawMessage {
		return anthropictest.ToolUse(id, "computer", json.RawMessage(input))
	}
	first := func([]harness.Call) harness.Input {
		return harness.Input{Task: "Open the menu and search for shoes.", Shot: shot(t, "f1", 1)}
	}
	sessions := map[anthropic.ToolVersion][]step{
		anthropic.Computer20241022: {
			{
				reply: anthropictest.Reply{Content: []json.RawMessage{
					anthropictest.Text("I'll move to the menu and click it."),
					tool("toolu_01", `{"action":"mouse_move","coordinate":[100,200]}`),
					tool("toolu_02", `{"action":"left_click"}`),
				}},
				in: first,
				want: []callView{
					{ID: "toolu_01", Name: "computer", Actions: []actions.Action{{Kind: actions.Move, At: at(100, 200), HasAt: true}}},
					{ID: "toolu_02", Name: "computer", Actions: []actions.Action{{Kind: actions.Click}}},
				},
				stop: harness.StopToolUse, text: "I'll move to the menu and click it.",
			},
			{
				reply: anthropictest.Reply{Content: []json.RawMessage{
					tool("toolu_03", `{"action":"left_click_drag","coordinate":[300,400]}`),
				}},
				in: func(calls []harness.Call) harness.Input {
					return harness.Input{Results: []harness.Result{
						{CallID: calls[0].ID, Shot: shot(t, "f2", 2), Ran: 1, Notes: []string{"The page did not settle within 2s."}},
						{CallID: calls[1].ID, Shot: shot(t, "f3", 3), Err: errors.New("the display is busy"), Ran: 0},
					}}
				},
				want: []callView{{ID: "toolu_03", Name: "computer", Actions: []actions.Action{
					{Kind: actions.Drag, Path: []actions.Point{at(100, 200), at(300, 400)}}}}},
				stop: harness.StopToolUse,
			},
			{
				reply: anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Done.")}},
				in: func(calls []harness.Call) harness.Input {
					return harness.Input{Results: []harness.Result{{CallID: calls[0].ID, Shot: shot(t, "f4", 4), Ran: 1}}}
				},
				stop: harness.StopEndTurn, text: "Done.",
			},
		},
		anthropic.Computer20250124: {
			{
				reply: anthropictest.Reply{Content: []json.RawMessage{
					anthropictest.Text("Clicking the menu, then typing."),
					tool("toolu_01", `{"action":"left_click","coordinate":[100,200],"text":"shift"}`),
					tool("toolu_02", `{"action":"type","text":"shoes"}`),
				}},
				in: first,
				want: []callView{
					{ID: "toolu_01", Name: "computer", Actions: []actions.Action{{Kind: actions.Click, At: at(100, 200), HasAt: true, Modifiers: actions.Chord{actions.Shift}}}},
					{ID: "toolu_02", Name: "computer", Actions: []actions.Action{{Kind: actions.Type, Text: "shoes"}}},
				},
				stop: harness.StopToolUse, text: "Clicking the menu, then typing.",
			},
			{
				reply: anthropictest.Reply{Content: []json.RawMessage{
					tool("toolu_03", `{"action":"scroll","coordinate":[640,400],"scroll_direction":"down","scroll_amount":5}`),
					tool("toolu_04", `{"action":"key","text":"ctrl+a BackSpace"}`),
				}},
				in: func(calls []harness.Call) harness.Input {
					return harness.Input{Results: []harness.Result{
						{CallID: calls[0].ID, Shot: shot(t, "f2", 2), Ran: 1, Notes: []string{"A new tab opened: https://shop.example/"}},
						{CallID: calls[1].ID, Shot: shot(t, "f3", 3), Err: errors.New("type: not allowed by the policy"), Ran: 0},
					}}
				},
				want: []callView{
					{ID: "toolu_03", Name: "computer", Actions: []actions.Action{{Kind: actions.Scroll, At: at(640, 400), HasAt: true, DeltaY: 5 * anthropic.PixelsPerScrollClick}}},
					{ID: "toolu_04", Name: "computer", Actions: []actions.Action{
						{Kind: actions.Keypress, Keys: actions.Chord{actions.Control, "a"}},
						{Kind: actions.Keypress, Keys: actions.Chord{"Backspace"}},
					}},
				},
				stop: harness.StopToolUse,
			},
			{
				reply: anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Done.")}},
				in: func(calls []harness.Call) harness.Input {
					return harness.Input{Results: []harness.Result{
						{CallID: calls[0].ID, Shot: shot(t, "f4", 4), Ran: 1},
						{CallID: calls[1].ID, Shot: shot(t, "f5", 5), Err: errors.New("Backspace: the display is gone"), Ran: 1},
					}}
				},
				stop: harness.StopEndTurn, text: "Done.",
			},
		},
		anthropic.Computer20251124: {
			{
				reply: anthropictest.Reply{Content: []json.RawMessage{
					anthropictest.Text("The menu is small; zooming in first."),
					tool("toolu_01", `{"action":"zoom","region":[0,0,640,400]}`),
					tool("toolu_02", `{"action":"cursor_position"}`),
				}},
				in: first,
				want: []callView{
					{ID: "toolu_01", Name: "computer", Actions: []actions.Action{{Kind: actions.Zoom, Region: actions.Rect{Max: at(640, 400)}}}},
					{ID: "toolu_02", Name: "computer", Actions: []actions.Action{{Kind: actions.CursorPosition}}},
				},
				stop: harness.StopToolUse, text: "The menu is small; zooming in first.",
			},
			{
				reply: anthropictest.Reply{Content: []json.RawMessage{
					tool("toolu_03", `{"action":"triple_click","coordinate":[200,100]}`),
					tool("toolu_04", `{"action":"hold_key","text":"shift","duration":0.5}`),
				}},
				in: func(calls []harness.Call) harness.Input {
					return harness.Input{Results: []harness.Result{
						{CallID: calls[0].ID, Shot: shot(t, "f2", 2), Zoom: zoomShot(t), Ran: 1},
						{CallID: calls[1].ID, Shot: shot(t, "f3", 3), Cursor: &actions.Point{X: 99.6, Y: 200.2}, Ran: 1},
					}}
				},
				want: []callView{
					{ID: "toolu_03", Name: "computer", Actions: []actions.Action{{Kind: actions.TripleClick, At: at(200, 100), HasAt: true}}},
					{ID: "toolu_04", Name: "computer", Actions: []actions.Action{{Kind: actions.HoldKey, Keys: actions.Chord{actions.Shift}, Duration: 500 * time.Millisecond}}},
				},
				stop: harness.StopToolUse,
			},
			{
				reply: anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Done.")}},
				in: func(calls []harness.Call) harness.Input {
					return harness.Input{Results: []harness.Result{
						{CallID: calls[0].ID, Shot: shot(t, "f4", 4), Ran: 1},
						{CallID: calls[1].ID, Shot: shot(t, "f5", 5), Ran: 1},
					}}
				},
				stop: harness.StopEndTurn, text: "Done.",
			},
		},
	}
	for _, v := range anthropic.ToolVersions {
		t.Run(string(v), func(t *testing.T) {
			steps := sessions[v]
			srv := anthropictest.NewServer(t)
			m := newModel(t, srv, v)
			var calls []harness.Call
			for i, s := range steps {
				srv.Add(s.reply)
				in := s.in(calls)
				turn := next(t, m, in)
				if diff := cmp.Diff(s.want, callsOf(turn.Calls)); diff != "" {
					t.Errorf("turn %d: calls (-want +got):\n%s", i, diff)
				}
				if turn.Stop != s.stop || turn.Text != s.text {
					t.Errorf("turn %d: stop %q, text %q, want %q, %q", i, turn.Stop, turn.Text, s.stop, s.text)
				}
				for _, c := range turn.Calls {
					if len(c.Raw) == 0 || !json.Valid(c.Raw) {
						t.Errorf("turn %d: call %s: Raw %q, want the tool_use block", i, c.ID, c.Raw)
					}
				}
				calls = turn.Calls
			}
			checkGolden(t, "session", srv, v)
		})
	}
}

// TestMaxTokens checks that a call in a turn cut off by max_tokens never
// runs: it comes back with ErrTruncated, and its error result is sent.
func TestMaxTokens(t *testing.T) {
	for _, v := range anthropic.ToolVersions {
		t.Run(string(v), func(t *testing.T) {
			srv := anthropictest.NewServer(t,
				anthropictest.Reply{Stop: "max_tokens", Content: []json.RawMessage{
					anthropictest.Text("I will click the"),
					anthropictest.ToolUse("toolu_01", "computer", json.RawMessage(`{"action":"left_click","coordinate":[10,`+"20]}")),
				}},
				anthropictest.Reply{Content: []json.RawMessage{anthropictest.ToolUse("toolu_02", "computer", json.RawMessage(`{"action":"screenshot"}`))}},
			)
			m := newModel(t, srv, v)
			turn := next(t, m, harness.Input{Task: "Click the button.", Shot: shot(t, "f1", 1)})
			if turn.Stop != harness.StopMaxTokens || len(turn.Calls) != 1 {
				t.Fatalf("Next() = stop %q with %d calls, want %q with 1", turn.Stop, len(turn.Calls), harness.StopMaxTokens)
			}
			c := turn.Calls[0]
			if !errors.Is(c.DecodeErr, anthropic.ErrTruncated) || c.Actions != nil || c.ID != "toolu_01" {
				t.Errorf("truncated call = %+v, want ID toolu_01, no actions, DecodeErr wrapping ErrTruncated", c)
			}
			turn = next(t, m, harness.Input{Results: []harness.Result{{CallID: c.ID, Err: c.DecodeErr}}})
			if turn.Stop != harness.StopToolUse || len(turn.Calls) != 1 || turn.Calls[0].DecodeErr != nil {
				t.Errorf("turn after the error result = %+v, want one screenshot call", turn)
			}
			checkGolden(t, "max_tokens", srv, v)
		})
	}
}

// TestPauseTurn checks that a paused turn is re-sent, with its content as
// the last assistant message, and that the turns merge.
func TestPauseTurn(t *testing.T) {
	for _, v := range anthropic.ToolVersions {
		t.Run(string(v), func(t *testing.T) {
			srv := anthropictest.NewServer(t,
				anthropictest.Reply{Stop: "pause_turn", Content: []json.RawMessage{anthropictest.Text("Thinking about the page.\n")}},
				anthropictest.Reply{Content: []json.RawMessage{
					anthropictest.Text("Taking a screenshot."),
					anthropictest.ToolUse("toolu_01", "computer", json.RawMessage(`{"action":"screenshot"}`)),
				}},
			)
			m := newModel(t, srv, v)
			turn := next(t, m, harness.Input{Task: "Look at the page.", Shot: shot(t, "f1", 1)})
			want := harness.Turn{
				Text:  "Thinking about the page.\nTaking a screenshot.",
				Stop:  harness.StopToolUse,
				Usage: harness.Usage{InputTokens: 2000, OutputTokens: 100},
			}
			if diff := cmp.Diff(want, turn, cmp.FilterPath(func(p cmp.Path) bool {
				return p.Last().String() == ".Calls" || p.Last().String() == ".CostUSD"
			}, cmp.Ignore())); diff != "" {
				t.Errorf("Next() (-want +got):\n%s", diff)
			}
			if len(turn.Calls) != 1 || turn.Calls[0].ID != "toolu_01" {
				t.Errorf("Next() calls = %+v, want toolu_01", callsOf(turn.Calls))
			}
			checkGolden(t, "pause_turn", srv, v)
		})
	}
}

// TestPauseTurnReturned checks StopPause when the pauses run out, and that
// an empty Input resumes.
func TestPauseTurnReturned(t *testing.T) {
	srv := anthropictest.NewServer(t,
		anthropictest.Reply{Stop: "pause_turn", Content: []json.RawMessage{anthropictest.Text("Part one.")}},
		anthropictest.Reply{Stop: "pause_turn", Content: []json.RawMessage{anthropictest.Text("Part two.")}},
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Done.")}},
	)
	m := newModel(t, srv, anthropic.Computer20250124, func(c *anthropic.Config) { c.MaxPauses = 1 })
	turn := next(t, m, harness.Input{Task: "Go.", Shot: shot(t, "f1", 1)})
	if turn.Stop != harness.StopPause || turn.Text != "Part one.\nPart two." {
		t.Fatalf("Next() = %q, %q, want StopPause after two pauses", turn.Stop, turn.Text)
	}
	if _, err := m.Next(t.Context(), harness.Input{Task: "more"}); !errors.Is(err, anthropic.ErrInput) {
		t.Errorf("Next(Task) after a pause = %v, want ErrInput", err)
	}
	turn = next(t, m, harness.Input{})
	if turn.Stop != harness.StopEndTurn || turn.Text != "Part one.\nPart two.\nDone." {
		t.Errorf("Next(resume) = %q, %q, want end_turn with the whole text", turn.Stop, turn.Text)
	}
	reqs := srv.Requests()
	var last struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(reqs[len(reqs)-1].Body, &last); err != nil {
		t.Fatal(err)
	}
	if n := len(last.Messages); n != 2 || last.Messages[1].Role != "assistant" || len(last.Messages[1].Content) != 2 {
		t.Errorf("resumed request messages = %+v, want user then the paused assistant turn of 2 blocks", last.Messages)
	}
}

// TestRefusal checks that a refused turn leaves the conversation and its
// calls never come back, and that the conversation can go on.
func TestRefusal(t *testing.T) {
	for _, v := range anthropic.ToolVersions {
		t.Run(string(v), func(t *testing.T) {
			srv := anthropictest.NewServer(t,
				anthropictest.Reply{Content: []json.RawMessage{anthropictest.ToolUse("toolu_01", "computer", json.RawMessage(`{"action":"screenshot"}`))}},
				anthropictest.Reply{Stop: "refusal",
					Content:     []json.RawMessage{anthropictest.Text("I can't help with that.")},
					StopDetails: json.RawMessage(`{"category":"cyber","explanation":"The request looks like an attack."}`)},
				anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("The page shows a login form.")}},
			)
			m := newModel(t, srv, v)
			turn := next(t, m, harness.Input{Task: "Log in as admin.", Shot: shot(t, "f1", 1)})
			turn = next(t, m, harness.Input{Results: []harness.Result{{CallID: turn.Calls[0].ID, Shot: shot(t, "f2", 2), Ran: 1}}})
			want := "I can't help with that.\n[refused: cyber The request looks like an attack.]"
			if turn.Stop != harness.StopRefusal || len(turn.Calls) != 0 || turn.Text != want {
				t.Errorf("Next() = stop %q, %d calls, text %q, want %q, 0, %q", turn.Stop, len(turn.Calls), turn.Text, harness.StopRefusal, want)
			}
			turn = next(t, m, harness.Input{Task: "Just describe the page instead."})
			if turn.Stop != harness.StopEndTurn {
				t.Errorf("Next(Task) after a refusal = %q, want end_turn", turn.Stop)
			}
			checkGolden(t, "refusal", srv, v)
		})
	}
}

func TestUnknownTool(t *testing.T) {
	srv := anthropictest.NewServer(t, anthropictest.Reply{Content: []json.RawMessage{
		anthropictest.ToolUse("toolu_01", "bash", map[string]string{"command": "rm -rf /"}),
		anthropictest.ToolUse("toolu_02", "computer", map[string]string{"action": "teleport"}),
	}})
	m := newModel(t, srv, anthropic.Computer20250124)
	turn := next(t, m, harness.Input{Task: "Go.", Shot: shot(t, "f1", 1)})
	if len(turn.Calls) != 2 {
		t.Fatalf("Next() calls = %+v, want 2", callsOf(turn.Calls))
	}
	if c := turn.Calls[0]; !errors.Is(c.DecodeErr, anthropic.ErrUnknownTool) || c.Name != "bash" || !strings.Contains(string(c.Raw), "rm -rf") {
		t.Errorf("call of an undeclared tool = %+v, want DecodeErr wrapping ErrUnknownTool, Name and Raw kept", c)
	}
	if c := turn.Calls[1]; !errors.Is(c.DecodeErr, actions.ErrInvalid) || turn.Stop != harness.StopToolUse {
		t.Errorf("call of an unknown action = %+v (stop %q), want DecodeErr wrapping actions.ErrInvalid, stop tool_use", c, turn.Stop)
	}
}

// TestCursorTracking checks that a 20241022 drag starts where the model's
// own moves left the pointer, and becomes a decode error once a failed
// pointer action makes the position unknown.
func TestCursorTracking(t *testing.T) {
	move := anthropictest.ToolUse("toolu_m", "computer", json.RawMessage(`{"action":"mouse_move","coordinate":[10,20]}`))
	drag := anthropictest.ToolUse("toolu_d", "computer", json.RawMessage(`{"action":"left_click_drag","coordinate":[30,40]}`))
	srv := anthropictest.NewServer(t,
		anthropictest.Reply{Content: []json.RawMessage{move, drag}}, // the drag follows the move in the same turn
		anthropictest.Reply{Content: []json.RawMessage{drag}},       // the drag ended at (30,40)
		anthropictest.Reply{Content: []json.RawMessage{move}},
		anthropictest.Reply{Content: []json.RawMessage{drag}}, // the move failed: unknown
	)
	m := newModel(t, srv, anthropic.Computer20241022)
	turn := next(t, m, harness.Input{Task: "Drag.", Shot: shot(t, "f1", 1)})
	if got := turn.Calls[1].Actions; len(got) != 1 || !cmp.Equal(got[0].Path, []actions.Point{at(10, 20), at(30, 40)}) {
		t.Errorf("drag after a move in the same turn = %+v, want from (10,20)", callsOf(turn.Calls[1:]))
	}
	ok := func(calls []harness.Call) harness.Input {
		var in harness.Input
		for _, c := range calls {
			in.Results = append(in.Results, harness.Result{CallID: c.ID, Shot: shot(t, "f", 2), Ran: len(c.Actions)})
		}
		return in
	}
	turn = next(t, m, ok(turn.Calls))
	if got := turn.Calls[0].Actions; len(got) != 1 || !cmp.Equal(got[0].Path, []actions.Point{at(30, 40), at(30, 40)}) {
		t.Errorf("drag after a drag = %+v, want from (30,40)", callsOf(turn.Calls))
	}
	turn = next(t, m, ok(turn.Calls))
	turn = next(t, m, harness.Input{Results: []harness.Result{{CallID: turn.Calls[0].ID, Err: errors.New("lost"), Ran: 0}}})
	if err := turn.Calls[0].DecodeErr; !errors.Is(err, actions.ErrInvalid) || !strings.Contains(err.Error(), "mouse_move first") {
		t.Errorf("drag after a failed move: DecodeErr %v, want one asking for mouse_move", err)
	}
}

func TestInputErrors(t *testing.T) {
	newWithCall := func(t *testing.T) *anthropic.Model {
		srv := anthropictest.NewServer(t, anthropictest.Reply{Content: []json.RawMessage{
			anthropictest.ToolUse("toolu_01", "computer", json.RawMessage(`{"action":"screenshot"}`)),
			anthropictest.ToolUse("toolu_02", "computer", json.RawMessage(`{"action":"screenshot"}`)),
		}})
		m := newModel(t, srv, anthropic.Computer20250124)
		next(t, m, harness.Input{Task: "Go.", Shot: shot(t, "f1", 1)})
		return m
	}
	small := shot(t, "f9", 1)
	small.Frame.Sent = screen.Size{W: 640, H: 400}
	tests := []struct {
		name  string
		setup func(t *testing.T) *anthropic.Model
		in    harness.Input
		want  error
	}{
		{"nothing to send", func(t *testing.T) *anthropic.Model {
			return newModel(t, anthropictest.NewServer(t), anthropic.Computer20250124)
		}, harness.Input{}, anthropic.ErrInput},
		{"results on the first turn", func(t *testing.T) *anthropic.Model {
			return newModel(t, anthropictest.NewServer(t), anthropic.Computer20250124)
		}, harness.Input{Results: []harness.Result{{CallID: "x"}}}, anthropic.ErrInput},
		{"first shot of the wrong size", func(t *testing.T) *anthropic.Model {
			return newModel(t, anthropictest.NewServer(t), anthropic.Computer20250124)
		}, harness.Input{Task: "Go.", Shot: small}, anthropic.ErrDisplaySize},
		{"too few results", newWithCall, harness.Input{Results: []harness.Result{{CallID: "toolu_01"}}}, anthropic.ErrInput},
		{"results out of order", newWithCall, harness.Input{Results: []harness.Result{{CallID: "toolu_02"}, {CallID: "toolu_01"}}}, anthropic.ErrInput},
		{"no results", newWithCall, harness.Input{Task: "What now?"}, anthropic.ErrInput},
		{"result shot of the wrong size", newWithCall, harness.Input{Results: []harness.Result{{Shot: small}, {Shot: small}}}, anthropic.ErrDisplaySize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.setup(t)
			if _, err := m.Next(t.Context(), tt.in); !errors.Is(err, tt.want) {
				t.Errorf("Next(%+v) = %v, want %v", tt.in, err, tt.want)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  anthropic.Config
	}{
		{"no display", anthropic.Config{APIKey: "k"}},
		{"no key for the real API", anthropic.Config{Display: display}},
		{"unknown tool version", anthropic.Config{APIKey: "k", Display: display, Tool: "computer_1999"}},
		{"negative max tokens", anthropic.Config{APIKey: "k", Display: display, MaxTokens: -1}},
	}
	for _, tt := range tests {
		if m, err := anthropic.New(tt.cfg); err == nil {
			t.Errorf("%s: New(%+v) = %v, want an error", tt.name, tt.cfg, m)
		}
	}
}

func TestConfigOverrides(t *testing.T) {
	srv := anthropictest.NewServer(t, anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("ok")}})
	m := newModel(t, srv, anthropic.Computer20250124, func(c *anthropic.Config) {
		c.Model = "claude-opus-4-5" // would be computer_20251124
		c.Tool = anthropic.Computer20250124
		c.System = "Be brief."
		c.MaxTokens = 1000
	})
	next(t, m, harness.Input{Task: "Hi."})
	var body struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
		System    []struct {
			Text string `json:"text"`
		} `json:"system"`
		Tools []struct {
			Type string `json:"type"`
		} `json:"tools"`
	}
	r := srv.Requests()[0]
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Model != "claude-opus-4-5" || body.MaxTokens != 1000 || body.System[0].Text != "Be brief." ||
		body.Tools[0].Type != "computer_20250124" || r.Header.Get("Anthropic-Beta") != "computer-use-2025-01-24" {
		t.Errorf("request = %s (beta %q), want the configured model, max_tokens, system and tool", r.Body, r.Header.Get("Anthropic-Beta"))
	}
}

func TestDisableZoom(t *testing.T) {
	srv := anthropictest.NewServer(t, anthropictest.Reply{Content: []json.RawMessage{
		anthropictest.ToolUse("toolu_01", "computer", json.RawMessage(`{"action":"zoom","region":[0,0,10,10]}`))}})
	m := newModel(t, srv, anthropic.Computer20251124, func(c *anthropic.Config) { c.DisableZoom = true })
	turn := next(t, m, harness.Input{Task: "Zoom."})
	if !errors.Is(turn.Calls[0].DecodeErr, actions.ErrInvalid) {
		t.Errorf("zoom with DisableZoom: DecodeErr %v, want actions.ErrInvalid", turn.Calls[0].DecodeErr)
	}
	if body := string(srv.Requests()[0].Body); strings.Contains(body, "enable_zoom") {
		t.Errorf("tool declared with DisableZoom: %s, want no enable_zoom", body)
	}
}

func TestUsage(t *testing.T) {
	tests := []struct {
		model string
		u     anthropictest.Usage
		want  harness.Usage
	}{
		{"claude-sonnet-4-5-20250929",
			anthropictest.Usage{InputTokens: 100, OutputTokens: 50, CacheCreationInputTokens: 1000, CacheReadInputTokens: 2000},
			harness.Usage{InputTokens: 3100, OutputTokens: 50, CachedTokens: 2000, CostUSD: (100*3 + 1000*3.75 + 2000*0.3 + 50*15) / 1e6}},
		{"claude-opus-4-5", anthropictest.Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000},
			harness.Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000, CostUSD: 30}},
		{"claude-haiku-9", anthropictest.Usage{InputTokens: 1_000_000}, // unknown haiku: the newest haiku price
			harness.Usage{InputTokens: 1_000_000, CostUSD: 1}},
		{"some-other-model", anthropictest.Usage{InputTokens: 10, OutputTokens: 5},
			harness.Usage{InputTokens: 10, OutputTokens: 5}},
	}
	for _, tt := range tests {
		srv := anthropictest.NewServer(t, anthropictest.Reply{Usage: &tt.u, Content: []json.RawMessage{anthropictest.Text("ok")}})
		m, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: srv.URL, Model: tt.model, Display: display})
		if err != nil {
			t.Fatal(err)
		}
		turn := next(t, m, harness.Input{Task: "Hi."})
		if diff := cmp.Diff(tt.want, turn.Usage, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-12 })); diff != "" {
			t.Errorf("model %s, usage %+v: Turn.Usage (-want +got):\n%s", tt.model, tt.u, diff)
		}
	}
}

// TestRetryAfter checks that a retry waits as long as retry-after asks, in
// fake time (the fault suite retries over real HTTP).
func TestRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := anthropictest.New(t,
			anthropictest.Reply{Status: 429, ErrorType: "rate_limit_error", Header: map[string]string{"retry-after": "1"}},
			anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("ok")}},
		)
		m := newModel(t, srv, anthropic.Computer20250124)
		start := time.Now()
		turn := next(t, m, harness.Input{Task: "Hi."})
		if d := time.Since(start); d != time.Second {
			t.Errorf("Next() took %v after a 429 with retry-after: 1, want 1s", d)
		}
		if n := len(srv.Requests()); n != 2 || turn.Text != "ok" {
			t.Errorf("Next() = %q after %d requests, want \"ok\" after 2", turn.Text, n)
		}
	})
}

// TestRetryBackoff checks retries on overload and their delays in fake
// time: the delay the server asks for, or the SDK's backoff.
func TestRetryBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := anthropictest.New(t,
			anthropictest.Reply{Status: 529, ErrorType: "overloaded_error", Header: map[string]string{"retry-after": "30"}},
			anthropictest.Reply{Status: 500},
			anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("ok")}},
		)
		m := newModel(t, srv, anthropic.Computer20250124)
		start := time.Now()
		next(t, m, harness.Input{Task: "Hi."})
		// 30s as asked, then the SDK's second backoff: 1s less up to 25% jitter.
		if d := time.Since(start); d < 30*time.Second+750*time.Millisecond || d > 31*time.Second {
			t.Errorf("Next() took %v, want 30s then a backoff of 0.75-1s", d)
		}
		if n := len(srv.Requests()); n != 3 {
			t.Errorf("Next() sent %d requests, want 3", n)
		}
	})
}

func TestAPIErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := anthropictest.New(t,
			anthropictest.Reply{Status: 400, ErrorType: "invalid_request_error", Message: "messages.0: bad"},
			anthropictest.Reply{Status: 529, ErrorType: "overloaded_error"},
			anthropictest.Reply{Content: []json.RawMessage{anthropictest.ToolUse("toolu_01", "computer", json.RawMessage(`{"action":"screenshot"}`))}},
		)
		m := newModel(t, srv, anthropic.Computer20250124, func(c *anthropic.Config) { c.MaxRetries = -1 })
		in := harness.Input{Task: "Hi.", Shot: shot(t, "f1", 1)}
		for i, want := range []string{"status 400 invalid_request_error: messages.0: bad (request req_fake_000)", "the Anthropic API answered 529 Overloaded; giving up: overloaded_error"} {
			_, err := m.Next(t.Context(), in)
			if !errors.Is(err, anthropic.ErrAPI) || !strings.Contains(err.Error(), want) {
				t.Errorf("Next() #%d = %v, want ErrAPI saying %q", i, err, want)
			}
		}
		// The failures left the conversation as it was: the same Input again.
		turn := next(t, m, in)
		if len(turn.Calls) != 1 {
			t.Errorf("Next() after errors = %+v, want one call", turn)
		}
		reqs := srv.Requests()
		if len(reqs) != 3 || !bytes.Equal(reqs[0].Body, reqs[2].Body) {
			t.Errorf("got %d requests; the retried request differs from the first", len(reqs))
		}
	})
}

func TestTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := anthropictest.New(t, anthropictest.Reply{Delay: time.Hour})
		m := newModel(t, srv, anthropic.Computer20250124, func(c *anthropic.Config) {
			c.Timeout, c.MaxRetries = 5*time.Second, -1
		})
		start := time.Now()
		_, err := m.Next(t.Context(), harness.Input{Task: "Hi."})
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 5*time.Second {
			t.Errorf("Next() = %v after %v, want a deadline error after 5s", err, time.Since(start))
		}
	})
}

func TestCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := anthropictest.New(t, anthropictest.Reply{Delay: time.Hour})
		m := newModel(t, srv, anthropic.Computer20250124)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if _, err := m.Next(ctx, harness.Input{Task: "Hi."}); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Next(ctx that ends) = %v, want context.DeadlineExceeded", err)
		}
	})
}

func TestConfigFromEnv(t *testing.T) {
	env := map[string]string{
		"ANTHROPIC_API_KEY":  "sk-test",
		"ANTHROPIC_BASE_URL": "http://127.0.0.1:9999",
		"ANTHROPIC_MODEL":    "claude-opus-4-5",
	}
	got := anthropic.ConfigFromEnv(func(k string) string { return env[k] })
	want := anthropic.Config{APIKey: "sk-test", BaseURL: "http://127.0.0.1:9999", Model: "claude-opus-4-5"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ConfigFromEnv (-want +got):\n%s", diff)
	}
}

// TestLogs checks that a turn is logged without the API key, the task or
// image bytes.
func TestLogs(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv := anthropictest.NewServer(t, anthropictest.Reply{Content: []json.RawMessage{
		anthropictest.ToolUse("toolu_01", "computer", json.RawMessage(`{"action":"type","text":"hunter2"}`))}})
	m := newModel(t, srv, anthropic.Computer20250124, func(c *anthropic.Config) { c.Logger = log })
	s := shot(t, "f1", 1)
	next(t, m, harness.Input{Task: "Type the password.", Shot: s})
	out := buf.String()
	if !strings.Contains(out, `"stop_reason":"tool_use"`) || !strings.Contains(out, `"calls":1`) {
		t.Errorf("log = %s, want the stop reason and call count", out)
	}
	for _, secret := range []string{"test-key", "hunter2", "password", base64.StdEncoding.EncodeToString(s.Data)} {
		if strings.Contains(out, secret) {
			t.Errorf("log = %s, which shows %q", out, secret)
		}
	}
}

// TestRealResponse parses a response as the API writes it, with a thinking
// block, and checks the block goes back unchanged, signature and all.
func TestRealResponse(t *testing.T) {
	resp, err := os.ReadFile(filepath.Join("testdata", "response_thinking.json"))
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		bodies [][]byte
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		n := len(bodies)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if n == 1 {
			_, _ = w.Write(resp)
			return
		}
		_, _ = io.WriteString(w, `{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",
			"content":[{"type":"text","text":"Done."}],"stop_reason":"end_turn","stop_sequence":null,
			"usage":{"input_tokens":5,"output_tokens":2}}`)
	}))
	defer srv.Close()
	m, err := anthropic.New(anthropic.Config{APIKey: "k", BaseURL: srv.URL, Model: "claude-sonnet-4-5-20250929", Display: display})
	if err != nil {
		t.Fatal(err)
	}
	turn := next(t, m, harness.Input{Task: "Search for running shoes.", Shot: shot(t, "f1", 1)})
	want := []callView{
		{ID: "toolu_01A09q90qw90lq917835lq9", Name: "computer", Actions: []actions.Action{{Kind: actions.Click, At: at(512, 48), HasAt: true}}},
		{ID: "toolu_01B18r81rx81mr826946mr8", Name: "computer", Actions: []actions.Action{{Kind: actions.Type, Text: "running shoes"}}},
	}
	if diff := cmp.Diff(want, callsOf(turn.Calls)); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	wantUsage := harness.Usage{InputTokens: 2060, OutputTokens: 187, CostUSD: (12*3 + 2048*3.75 + 187*15) / 1e6}
	if diff := cmp.Diff(wantUsage, turn.Usage, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-12 })); diff != "" || turn.Text != "I'll click the search box." {
		t.Errorf("turn text %q, usage (-want +got):\n%s", turn.Text, diff)
	}
	next(t, m, harness.Input{Results: []harness.Result{
		{CallID: turn.Calls[0].ID, Shot: shot(t, "f2", 2), Ran: 1},
		{CallID: turn.Calls[1].ID, Shot: shot(t, "f3", 3), Ran: 1},
	}})
	var sent struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	mu.Lock()
	defer mu.Unlock()
	if err := json.Unmarshal(bodies[1], &sent); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Content []json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(resp, &got); err != nil {
		t.Fatal(err)
	}
	asst := sent.Messages[1]
	if asst.Role != "assistant" || len(asst.Content) != len(got.Content) {
		t.Fatalf("assistant message sent back = %s, want the %d blocks received", asst.Content, len(got.Content))
	}
	for i := range got.Content {
		var a, b any
		if err := errors.Join(json.Unmarshal(got.Content[i], &a), json.Unmarshal(asst.Content[i], &b)); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(a, b); diff != "" {
			t.Errorf("block %d sent back differs from the one received (-received +sent):\n%s", i, diff)
		}
	}
}
