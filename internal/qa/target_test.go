package qa

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/script"
	"github.com/spotter-harness/spotter/screen"
)

func TestParseTargets(t *testing.T) {
	const head = "name: t\ntask: t\nstart_url: \"demo:/\"\nmodel:\n  turns:\n    - actions: "
	ok := []string{
		`[{type: click, target: "Check in"}]`,
		`[{type: click, target: {role: button, name: "Check in"}}, {type: type, text: Ada}]`,
		`[{type: double_click, target: {text: Seat, exact: true, nth: 2}}]`,
		`[{type: scroll, target: {role: list}, scroll_y: 300}]`,
	}
	for _, a := range ok {
		test, err := parse([]byte(head+a+"\n"), ".")
		if err != nil {
			t.Errorf("parse(actions %s) error = %v", a, err)
			continue
		}
		if has, _ := scriptTargets(test.Task.Model.Turns); !has {
			t.Errorf("scriptTargets(actions %s) = false, want a target", a)
		}
	}
	bad := []struct{ actions, want string }{
		{`[{type: keypress, keys: [Enter], target: x}]`, `model.turns[0].actions[0]: a target is for one-point pointer actions`},
		{`[{type: click, target: x, x: 4, y: 5}]`, "a target or x and y, not both"},
		{`[{type: click, target: {}}]`, "visible text or its role"},
		{`[{type: click, target: {name: Buy}}]`, "name goes with role"},
		{`[{type: click, target: {text: Buy, nth: -1}}]`, "nth -1"},
		{`[{type: click, target: {txt: Buy}}]`, `unknown field "txt"`},
		{`[{type: click, target: 7}]`, "want visible text or {text, role, name, exact, nth}"},
	}
	for _, tt := range bad {
		_, err := parse([]byte(head+tt.actions+"\n"), ".")
		if !errors.Is(err, ErrTest) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parse(actions %s) error = %v, want ErrTest containing %q", tt.actions, err, tt.want)
		}
	}
	_, err := parse([]byte(head+`[{type: click, target: Buy}]`+"\nvnc: {addr: \"127.0.0.1:5900\"}\n"), ".")
	if err == nil || !strings.Contains(err.Error(), "no DOM") {
		t.Errorf("parse(a target on a desktop) error = %v, want one saying a desktop has no DOM", err)
	}
}

// A test whose cassette is missing is refused when the file is read.
func TestParseMissingCassette(t *testing.T) {
	_, err := parse([]byte("name: t\ntask: t\nstart_url: \"demo:/\"\nmodel: {provider: anthropic, cassette: gone.json}\n"), t.TempDir())
	if !errors.Is(err, ErrTest) || !strings.Contains(err.Error(), "model.cassette") || !strings.Contains(err.Error(), "gone.json") {
		t.Errorf("parse(a missing cassette) error = %v, want ErrTest naming model.cassette and the file", err)
	}
}

// evalFunc answers Eval with a function of the expression.
type evalFunc func(expr string) string

func (f evalFunc) Eval(_ context.Context, expr string) (json.RawMessage, error) {
	return json.RawMessage(f(expr)), nil
}

// The targeting model gives a targeted action the image pixel of the CSS
// point the page named, in the frame of the newest screenshot, and leaves
// the script's other actions as they were.
func TestTargetingResolves(t *testing.T) {
	frame := screen.Frame{ID: "f0002", Viewport: screen.Size{W: 1280, H: 800}, DPR: 1,
		Clip: actions.Rect{Max: actions.Pt(1280, 800)}, Capture: screen.Size{W: 1280, H: 800}, Sent: screen.Size{W: 1024, H: 640}}
	first := frame
	first.ID = "f0001"
	turns := []script.Turn{
		{Say: "typing", Actions: script.Batch(`[{"type":"click","target":{"role":"textbox","name":"Passenger name"}},{"type":"type","text":"Ada"}]`)},
		{Actions: script.Batch(`[{"type":"click","target":"Nowhere"}]`)},
	}
	var asked []string
	m := &targeting{model: script.New(turns, false), eval: evalFunc(func(expr string) string {
		asked = append(asked, expr)
		if strings.Contains(expr, `"Nowhere"`) {
			return `{"Error": "no visible element matches"}`
		}
		return `{"X": 227.5, "Y": 141.5, "What": "<input#name> \"Passenger name\""}`
	})}
	turn, err := m.Next(t.Context(), harness.Input{Task: "t", Shot: &screen.Shot{Frame: first}})
	if err != nil {
		t.Fatal(err)
	}
	if len(turn.Calls) != 1 || turn.Calls[0].DecodeErr != nil {
		t.Fatalf("turn = %+v, want one call that decodes", turn)
	}
	c := turn.Calls[0]
	want := []actions.Action{
		{Kind: actions.Click, At: actions.Pt(182, 113), HasAt: true}, // 227.5 * 1024/1280, floored
		{Kind: actions.Type, Text: "Ada"},
	}
	if diff := cmp.Diff(want, c.Actions); diff != "" {
		t.Errorf("resolved actions (-want +got):\n%s", diff)
	}
	if c.FrameID != "f0001" || !strings.Contains(string(c.Raw), `"x":182`) || !strings.Contains(string(c.Raw), `"target"`) {
		t.Errorf("call frame %q, raw %s; want frame f0001 and the raw call with its target and the point", c.FrameID, c.Raw)
	}
	if len(asked) != 1 || !strings.Contains(asked[0], `"role":"textbox"`) {
		t.Errorf("evaluated %q, want one lookup of the textbox", asked)
	}

	// The next turn is placed in the newest screenshot; a target that is
	// not there makes the call an error that runs nothing.
	turn, err = m.Next(t.Context(), harness.Input{Results: []harness.Result{{CallID: c.ID, Shot: &screen.Shot{Frame: frame}}}})
	if err != nil {
		t.Fatal(err)
	}
	if c := turn.Calls[0]; c.DecodeErr == nil || len(c.Actions) != 0 ||
		!strings.Contains(c.DecodeErr.Error(), `actions[0]: target text "Nowhere": no visible element matches`) {
		t.Errorf("call with a missing target: actions %v, error %v; want no actions and the reason", c.Actions, c.DecodeErr)
	}
}
