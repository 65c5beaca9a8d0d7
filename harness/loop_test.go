package harness_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/script"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/screentest"
)

var _ harness.Display = (*screentest.Fake)(nil)

// permissive allows every kind and any host.
var permissive = actions.Policy{Allow: actions.Kinds(), Hosts: []string{"*"}}

// runScript runs turns (as YAML) on a fake 1280x800 display sent at size.
func runScript(t *testing.T, yamlTurns string, size screen.Size, mod func(*harness.Config)) (harness.Outcome, *script.Model, *screentest.Fake) {
	t.Helper()
	turns, err := parseTurns(yamlTurns)
	if err != nil {
		t.Fatalf("parse turns: %v", err)
	}
	m := script.New(turns, false)
	d := &screentest.Fake{}
	cfg := harness.Config{Model: m, Display: d, Task: "test", Policy: permissive,
		Capture: screen.CaptureOptions{Size: size}, MaxSteps: 20}
	if mod != nil {
		mod(&cfg)
	}
	out, err := harness.Run(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	return out, m, d
}

// results returns the results the model received, flattened in order.
func results(m *script.Model) []harness.Result {
	var rs []harness.Result
	for _, in := range m.Received {
		rs = append(rs, in.Results...)
	}
	return rs
}

func TestClickMapsWithTheFrameTheModelSaw(t *testing.T) {
	tests := []struct {
		name string
		size screen.Size
		x, y float64
		want actions.Point // CSS px: the centre of the image pixel
	}{
		{"full size", screen.Size{W: 1280, H: 800}, 512, 320, actions.Pt(512.5, 320.5)},
		{"downscaled 1024x640", screen.Size{W: 1024, H: 640}, 512, 320, actions.Pt(640.625, 400.625)},
		{"last pixel", screen.Size{W: 1024, H: 640}, 1023, 639, actions.Pt(1279.375, 799.375)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, d := runScript(t, fmt.Sprintf(`- actions: [{type: click, x: %g, y: %g}]`, tt.x, tt.y), tt.size, nil)
			if !out.OK() || out.Failed != 0 {
				t.Fatalf("Run() outcome = %+v, want end_turn with no failures", out)
			}
			p := d.Performed()
			if len(p) != 1 || p[0].Kind != actions.Click {
				t.Fatalf("performed %v, want one click", p)
			}
			if diff := cmp.Diff(tt.want, p[0].At); diff != "" {
				t.Errorf("click at (%g,%g) in %v image: CSS point (-want +got):\n%s", tt.x, tt.y, tt.size, diff)
			}
		})
	}
}

// TestBadInputBecomesErrorResults checks that each kind of bad model output
// gives the model an error result with a screenshot, runs nothing, and the
// run goes on to the next turn.
func TestBadInputBecomesErrorResults(t *testing.T) {
	big := strings.Repeat("x", 1<<20) // 100 times the limit
	tests := []struct {
		name, batch, wantErr string
	}{
		{"malformed JSON", `'[{"type":"click","x":1'`, "could not decode"},
		{"unknown action", `[{type: teleport, x: 1, y: 2}]`, "teleport"},
		{"missing field", `[{type: click, y: 2}]`, `"x"`},
		{"out of image", `[{type: click, x: 1100, y: 20}]`, "outside"},
		{"far negative", `[{type: click, x: -50, y: 20}]`, "outside"},
		{"unknown key", `[{type: keypress, keys: ["CTRL", "Pgdwn"]}]`, "Pgdwn"},
		{"1 MB text", `[{type: type, text: "` + big + `"}]`, "limit"},
		{"drag of one point", `[{type: drag, path: [{x: 1, y: 1}]}]`, "path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			turns := "- actions: " + tt.batch + "\n- actions: [{type: click, x: 10, y: 10}]\n"
			out, m, d := runScript(t, turns, screen.Size{W: 1024, H: 640}, nil)
			if !out.OK() {
				t.Fatalf("Run() stop = %s (%s), want end_turn: the run must go on", out.Stop, out.Err)
			}
			rs := results(m)
			if len(rs) != 2 {
				t.Fatalf("model got %d results, want 2", len(rs))
			}
			if rs[0].Err == nil || !strings.Contains(rs[0].Err.Error(), tt.wantErr) {
				t.Errorf("first result error = %v, want one containing %q", rs[0].Err, tt.wantErr)
			}
			if rs[0].Shot == nil || rs[0].Ran != 0 {
				t.Errorf("first result: shot %v, ran %d; want a screenshot and nothing run", rs[0].Shot != nil, rs[0].Ran)
			}
			if rs[1].Err != nil {
				t.Errorf("second result error = %v, want nil", rs[1].Err)
			}
			if p := d.Performed(); len(p) != 1 {
				t.Errorf("performed %d actions, want only the second turn's click", len(p))
			}
		})
	}
}

func TestBatchStopsAtFirstFailure(t *testing.T) {
	turns := `- actions: [{type: click, x: 1, y: 1}, {type: type, text: boom}, {type: click, x: 2, y: 2}]`
	out, m, d := runScript(t, turns, screen.Size{}, func(c *harness.Config) {
		c.Display.(*screentest.Fake).Fail = func(m screen.Mapped) error {
			if m.Kind == actions.Type {
				return errors.New("keyboard jammed")
			}
			return nil
		}
	})
	if !out.OK() || out.Failed != 1 {
		t.Fatalf("outcome = %+v, want end_turn with one failed call", out)
	}
	r := results(m)[0]
	if r.Ran != 1 || r.Err == nil || !strings.Contains(r.Err.Error(), "action 1 (type): keyboard jammed") {
		t.Errorf("result ran %d err %v, want ran 1 and the type failure", r.Ran, r.Err)
	}
	if got := len(d.Performed()); got != 1 {
		t.Errorf("performed %d actions, want 1 (the batch stops at the failure)", got)
	}
}

func TestPolicyRefusesWhatItDoesNotAllow(t *testing.T) {
	turns := `
- actions: [{type: navigate, url: "https://evil.test/"}]
- actions: [{type: keypress, keys: ["CTRL", "W"]}]
- actions: [{type: click, x: 1, y: 1}]`
	out, m, d := runScript(t, turns, screen.Size{}, func(c *harness.Config) {
		c.Policy = actions.Standard()
		c.Policy.Hosts = []string{"localhost"}
	})
	if !out.OK() {
		t.Fatalf("outcome = %+v", out)
	}
	rs := results(m)
	for i, want := range []string{"evil.test", "Control+w"} {
		if rs[i].Err == nil || !errors.Is(rs[i].Err, actions.ErrNotAllowed) || !strings.Contains(rs[i].Err.Error(), want) {
			t.Errorf("result %d error = %v, want ErrNotAllowed naming %q", i, rs[i].Err, want)
		}
	}
	if p := d.Performed(); len(p) != 1 || p[0].Kind != actions.Click {
		t.Errorf("performed %v, want only the click", p)
	}
}

func TestZeroPolicyAllowsOnlyScreenshots(t *testing.T) {
	turns := "- actions: [{type: screenshot}]\n- actions: [{type: click, x: 1, y: 1}]"
	_, m, d := runScript(t, turns, screen.Size{}, func(c *harness.Config) { c.Policy = actions.Policy{} })
	rs := results(m)
	if rs[0].Err != nil || rs[1].Err == nil {
		t.Errorf("results errors = %v, %v; want screenshot ok and click refused", rs[0].Err, rs[1].Err)
	}
	if len(d.Performed()) != 0 {
		t.Errorf("performed %v, want nothing", d.Performed())
	}
}

func TestRepeatDetection(t *testing.T) {
	var turns strings.Builder
	for range 8 {
		turns.WriteString("- actions: [{type: click, x: 5, y: 5}]\n")
	}
	out, m, _ := runScript(t, turns.String(), screen.Size{}, nil)
	if out.Stop != harness.StopRepeat {
		t.Fatalf("stop = %s, want %s", out.Stop, harness.StopRepeat)
	}
	rs := results(m)
	// Results of calls 1..4 reach the model; the 5th stops the run.
	if len(rs) != 4 {
		t.Fatalf("model got %d results, want 4", len(rs))
	}
	if len(rs[1].Notes) != 0 || !strings.Contains(strings.Join(rs[2].Notes, " "), "3 times") {
		t.Errorf("notes = %q / %q, want a warning from the third repeat on", rs[1].Notes, rs[2].Notes)
	}
}

// loopModel proposes a different click every turn, forever.
type loopModel struct{ n int }

func (m *loopModel) Next(context.Context, harness.Input) (harness.Turn, error) {
	m.n++
	return harness.Turn{Stop: harness.StopToolUse, Calls: []harness.Call{{ID: fmt.Sprint("c", m.n), Name: "computer",
		Actions: []actions.Action{{Kind: actions.Click, HasAt: true, At: actions.Pt(float64(m.n%100), 1)}}}}}, nil
}

func TestStepCap(t *testing.T) {
	m := &loopModel{}
	out, err := harness.Run(t.Context(), harness.Config{Model: m, Display: &screentest.Fake{}, Policy: permissive, MaxSteps: 7})
	if err != nil {
		t.Fatal(err)
	}
	if out.Stop != harness.StopMaxSteps || out.Steps != 7 || m.n != 7 {
		t.Errorf("outcome stop %s steps %d, model asked %d times; want max_steps after 7", out.Stop, out.Steps, m.n)
	}
}

func TestStaleFrame(t *testing.T) {
	turns := `
- actions: [{type: screenshot}]
- frame: f0001
  actions: [{type: click, x: 10, y: 10}]
- frame: f9999
  actions: [{type: click, x: 10, y: 10}]`
	_, m, d := runScript(t, turns, screen.Size{}, nil)
	rs := results(m)
	if !strings.Contains(strings.Join(rs[1].Notes, " "), "refers to screenshot f0001") {
		t.Errorf("stale call notes = %q, want a stale-screenshot note", rs[1].Notes)
	}
	if !errors.Is(rs[2].Err, harness.ErrUnknownFrame) {
		t.Errorf("unknown frame error = %v, want ErrUnknownFrame", rs[2].Err)
	}
	if len(d.Performed()) != 1 {
		t.Errorf("performed %d, want 1", len(d.Performed()))
	}

	_, m, d = runScript(t, turns, screen.Size{}, func(c *harness.Config) { c.RejectStale = true })
	if rs := results(m); !errors.Is(rs[1].Err, harness.ErrStaleFrame) {
		t.Errorf("with RejectStale, error = %v, want ErrStaleFrame", rs[1].Err)
	}
	if len(d.Performed()) != 0 {
		t.Errorf("with RejectStale, performed %d, want 0", len(d.Performed()))
	}
}

// checkModel asks once for a click guarded by a provider safety check.
type checkModel struct{ got []harness.Input }

func (m *checkModel) Next(_ context.Context, in harness.Input) (harness.Turn, error) {
	m.got = append(m.got, in)
	if len(m.got) > 1 {
		return harness.Turn{Stop: harness.StopEndTurn}, nil
	}
	return harness.Turn{Stop: harness.StopToolUse, Calls: []harness.Call{{ID: "c1", Name: "computer",
		SafetyChecks: []harness.SafetyCheck{{ID: "sc1", Code: "malicious_instructions"}},
		Actions:      []actions.Action{{Kind: actions.Click, HasAt: true, At: actions.Pt(3, 3)}}}}}, nil
}

func TestSafetyChecksNeedAHuman(t *testing.T) {
	tests := []struct {
		name     string
		approver harness.Approver
		wantErr  error
		wantRun  int
	}{
		{"no approver denies", nil, harness.ErrDenied, 0},
		{"human denies", harness.ApproverFunc(func(context.Context, harness.ApprovalRequest) (harness.Decision, error) {
			return harness.Decision{}, fmt.Errorf("%w: not on my watch", harness.ErrDenied)
		}), harness.ErrDenied, 0},
		{"human approves", harness.ApproverFunc(func(context.Context, harness.ApprovalRequest) (harness.Decision, error) {
			return harness.Decision{}, nil
		}), nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, d := &checkModel{}, &screentest.Fake{}
			if _, err := harness.Run(t.Context(), harness.Config{Model: m, Display: d, Policy: permissive, Approver: tt.approver}); err != nil {
				t.Fatal(err)
			}
			r := m.got[1].Results[0]
			if !errors.Is(r.Err, tt.wantErr) || (tt.wantErr == nil && r.Err != nil) {
				t.Errorf("result error = %v, want %v", r.Err, tt.wantErr)
			}
			if got := len(d.Performed()); got != tt.wantRun {
				t.Errorf("performed %d actions, want %d", got, tt.wantRun)
			}
			if acked := len(r.Acknowledged) > 0; acked != (tt.wantRun > 0) {
				t.Errorf("acknowledged %v, want acknowledged only when approved", r.Acknowledged)
			}
		})
	}
}

// truncModel returns a tool call in a turn cut short by max_tokens.
type truncModel struct{ got []harness.Input }

func (m *truncModel) Next(_ context.Context, in harness.Input) (harness.Turn, error) {
	m.got = append(m.got, in)
	if len(m.got) > 1 {
		return harness.Turn{Stop: harness.StopEndTurn}, nil
	}
	return harness.Turn{Stop: harness.StopMaxTokens, Calls: []harness.Call{{ID: "c1", Name: "computer",
		Actions: []actions.Action{{Kind: actions.Click, HasAt: true, At: actions.Pt(3, 3)}}}}}, nil
}

func TestTruncatedCallNeverRuns(t *testing.T) {
	m, d := &truncModel{}, &screentest.Fake{}
	if _, err := harness.Run(t.Context(), harness.Config{Model: m, Display: d, Policy: permissive}); err != nil {
		t.Fatal(err)
	}
	if r := m.got[1].Results[0]; !errors.Is(r.Err, harness.ErrTruncated) {
		t.Errorf("result error = %v, want ErrTruncated", r.Err)
	}
	if len(d.Performed()) != 0 {
		t.Errorf("performed %v, want nothing", d.Performed())
	}
}

func TestDeadDisplayEndsTheRunWithAnError(t *testing.T) {
	d := &screentest.Fake{}
	turns, _ := parseTurns("- actions: [{type: click, x: 1, y: 1}]\n- actions: [{type: click, x: 2, y: 2}]")
	m := script.New(turns, false)
	d.Fail = func(screen.Mapped) error { d.Kill(); return fmt.Errorf("browser crashed: %w", screen.ErrGone) }
	out, err := harness.Run(t.Context(), harness.Config{Model: m, Display: d, Policy: permissive})
	if err != nil {
		t.Fatal(err)
	}
	if out.Stop != harness.StopError || !strings.Contains(out.Err, "display is gone") {
		t.Errorf("outcome = %s %q, want error naming the gone display", out.Stop, out.Err)
	}
}

func TestZoomAndCursorPosition(t *testing.T) {
	turns := `
- actions: [{type: move, x: 100, y: 50}, {type: cursor_position}]
- actions: [{type: zoom, x1: 0, y1: 0, x2: 320, y2: 200}]`
	_, m, _ := runScript(t, turns, screen.Size{W: 640, H: 400}, nil)
	rs := results(m)
	if rs[0].Err != nil || rs[0].Cursor == nil || *rs[0].Cursor != actions.Pt(100, 50) {
		t.Errorf("cursor_position = %v (err %v), want (100,50) in image space", rs[0].Cursor, rs[0].Err)
	}
	if rs[1].Err != nil || rs[1].Zoom == nil {
		t.Fatalf("zoom result: err %v, zoom %v", rs[1].Err, rs[1].Zoom)
	}
	// The region 0..320 x 0..200 of a 640x400 image is CSS 0..640 x 0..400.
	want := actions.Rect{Max: actions.Pt(640, 400)}
	if diff := cmp.Diff(want, rs[1].Zoom.Frame.Clip); diff != "" {
		t.Errorf("zoom clip (-want +got):\n%s", diff)
	}
}

func TestTraceRecordsTheRun(t *testing.T) {
	dir := t.TempDir() + "/trace"
	w, err := trace.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, _, _ := runScript(t, "- say: hi\n  actions: [{type: click, x: 10, y: 20}]", screen.Size{W: 640, H: 400},
		func(c *harness.Config) { c.Trace = w })
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := trace.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var types []trace.Type
	for _, e := range evs {
		types = append(types, e.Type)
	}
	want := []trace.Type{trace.TypeRunStart, trace.TypeModelTurn, trace.TypeCall, trace.TypeAction, trace.TypeResult,
		trace.TypeModelTurn, trace.TypeRunEnd}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Fatalf("event types (-want +got):\n%s", diff)
	}
	act := evs[3]
	if act.Mapped.At != actions.Pt(21, 41) || act.Action.At != actions.Pt(10, 20) {
		t.Errorf("action event: model %v mapped %v, want (10,20) -> (21,41), the centre of the image pixel", act.Action.At, act.Mapped.At)
	}
	if evs[4].Shot == "" || evs[0].Shot == "" {
		t.Errorf("run_start shot %q, result shot %q: want both saved", evs[0].Shot, evs[4].Shot)
	}
	if evs[6].Stop != string(out.Stop) {
		t.Errorf("run_end stop = %q, want %q", evs[6].Stop, out.Stop)
	}
}
