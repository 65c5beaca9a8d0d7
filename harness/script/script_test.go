package script_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/script"
	"github.com/spotter-harness/spotter/screen"
)

func turns(t *testing.T, s string) []script.Turn {
	t.Helper()
	var ts []script.Turn
	if err := yaml.Unmarshal([]byte(s), &ts); err != nil {
		t.Fatalf("yaml.Unmarshal(%q) error = %v", s, err)
	}
	return ts
}

func TestNextDecodesTurns(t *testing.T) {
	m := script.New(turns(t, `
- say: clicking
  actions: [{type: click, x: 512, y: 320}]
- calls:
    - [{type: type, text: hi}]
    - '[{"type":"keypress","keys":["CTRL","A"]}]'
  frame: f0002
- say: done`), false)

	got, err := m.Next(t.Context(), harness.Input{Task: "t"})
	if err != nil {
		t.Fatal(err)
	}
	want := harness.Turn{Text: "clicking", Stop: harness.StopToolUse, Calls: []harness.Call{{
		ID: "call_001_0", Name: "computer", Space: screen.Image,
		Actions: []actions.Action{{Kind: actions.Click, HasAt: true, At: actions.Pt(512, 320)}},
	}}}
	if diff := cmp.Diff(want, got, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Raw" }, cmp.Ignore())); diff != "" {
		t.Errorf("Next() turn 1 (-want +got):\n%s", diff)
	}

	got, err = m.Next(t.Context(), harness.Input{Results: []harness.Result{{CallID: "call_001_0"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Calls) != 2 || got.Calls[0].FrameID != "f0002" || got.Calls[1].Actions[0].Kind != actions.Keypress {
		t.Errorf("Next() turn 2 = %+v, want two calls on frame f0002, the second a keypress", got)
	}

	got, _ = m.Next(t.Context(), harness.Input{})
	if got.Stop != harness.StopEndTurn || got.Text != "done" || len(got.Calls) != 0 {
		t.Errorf("Next() turn 3 = %+v, want end_turn saying done", got)
	}
	got, _ = m.Next(t.Context(), harness.Input{})
	if got.Stop != harness.StopEndTurn {
		t.Errorf("Next() past the end = %+v, want end_turn", got)
	}
}

func TestMalformedBatchIsADecodeError(t *testing.T) {
	m := script.New(turns(t, `- actions: '[{"type":"click","x":'`), false)
	got, err := m.Next(t.Context(), harness.Input{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Calls) != 1 || got.Calls[0].DecodeErr == nil {
		t.Fatalf("Next() = %+v, want one call with a decode error", got)
	}
	if string(got.Calls[0].Raw) != `[{"type":"click","x":` {
		t.Errorf("Raw = %q, want the malformed text kept", got.Calls[0].Raw)
	}
}

func TestStrictAndExpectations(t *testing.T) {
	failed := []harness.Result{{CallID: "c", Err: errors.New("point (1100,20) is outside the screenshot")}}
	tests := []struct {
		name    string
		script  string
		strict  bool
		results []harness.Result
		wantErr bool
	}{
		{"lenient ignores errors", `[{actions: [{type: screenshot}]}, {say: end}]`, false, failed, false},
		{"strict fails on an error", `[{actions: [{type: screenshot}]}, {say: end}]`, true, failed, true},
		{"expected error passes", `[{actions: [{type: screenshot}], expect_error: outside}, {say: end}]`, true, failed, false},
		{"expected error missing fails", `[{actions: [{type: screenshot}], expect_error: outside}, {say: end}]`, false,
			[]harness.Result{{CallID: "c"}}, true},
		{"wrong error fails", `[{actions: [{type: screenshot}], expect_error: "unknown key"}, {say: end}]`, false, failed, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := script.New(turns(t, tt.script), tt.strict)
			if _, err := m.Next(t.Context(), harness.Input{}); err != nil {
				t.Fatal(err)
			}
			_, err := m.Next(t.Context(), harness.Input{Results: tt.results})
			if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, script.ErrUnexpected)) {
				t.Errorf("Next() error = %v, want error %v (ErrUnexpected)", err, tt.wantErr)
			}
		})
	}
}

func TestLoadRejectsBadYAML(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/s.yaml"
	if err := writeFile(path, "- actions: [{type: click\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := script.Load(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("Load(bad yaml) error = %v, want one naming the file", err)
	}
}
