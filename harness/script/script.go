// Package script is a Model that replays turns written in advance, so that a
// run is deterministic and needs no API key. Each turn holds one or more
// calls, and each call is an OpenAI computer_call `actions` array, e.g.
// [{"type":"click","x":512,"y":320}], in the pixel space of the last
// screenshot the model was sent.
//
// A script can also state what it expects back: with Strict set, a call
// whose result carries an error the script did not expect (expect_error)
// ends the run, which makes a script a test.
//
// A Model is harness.Stateful: its state is where the replay stands, and a
// Model made with the same script continues from it.
package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/openai"
	"github.com/spotter-harness/spotter/screen"
)

// ErrUnexpected marks a result that did not match what the script expected.
var ErrUnexpected = errors.New("script: unexpected result")

// Turn is one scripted reply of the model.
type Turn struct {
	Say string `yaml:"say,omitempty" json:"say,omitempty"` // the model's words
	// Actions is one call's batch. Calls holds several parallel calls;
	// a turn uses one or the other, or neither to end the run.
	Actions Batch   `yaml:"actions,omitempty" json:"actions,omitempty"`
	Calls   []Batch `yaml:"calls,omitempty" json:"calls,omitempty"`
	// Frame names the screenshot the coordinates refer to; empty means
	// the latest.
	Frame string `yaml:"frame,omitempty" json:"frame,omitempty"`
	// ExpectError, when set, is a substring every call of this turn must
	// have in its result's error.
	ExpectError string `yaml:"expect_error,omitempty" json:"expect_error,omitempty"`
}

// Batch is an OpenAI `actions` array as raw JSON. In YAML it may be written
// as a list of maps or as a string of JSON; the string form keeps arbitrary
// (even malformed) JSON for tests of bad model output.
type Batch json.RawMessage

// UnmarshalYAML accepts a YAML list or a string of JSON.
func (b *Batch) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		*b = Batch(n.Value)
		return nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("script actions at line %d: %w", n.Line, err)
	}
	*b = raw
	return nil
}

// MarshalJSON writes the batch as it is.
func (b Batch) MarshalJSON() ([]byte, error) {
	if len(b) == 0 {
		return []byte("null"), nil
	}
	if json.Valid(b) {
		return b, nil
	}
	return json.Marshal(string(b))
}

// UnmarshalJSON keeps the batch as it is.
func (b *Batch) UnmarshalJSON(d []byte) error {
	*b = append((*b)[:0], d...)
	return nil
}

// Model replays a script. It is not safe for concurrent use; a run uses it
// from one goroutine.
type Model struct {
	Turns  []Turn
	Strict bool // an unexpected result error ends the run

	next     int
	expect   string // ExpectError of the previous turn
	Received []harness.Input
}

// Check reports the first scripted action that does not decode, by its
// place: "turns[2].actions[0]: click: "x" must be a number, got a string".
func Check(turns []Turn) error {
	for i, t := range turns {
		if len(t.Actions) > 0 {
			if err := checkBatch(t.Actions); err != nil {
				return fmt.Errorf("turns[%d].%v", i, err)
			}
		}
		for j, b := range t.Calls {
			if err := checkBatch(b); err != nil {
				return fmt.Errorf("turns[%d].calls[%d]%s", i, j, strings.TrimPrefix(err.Error(), "actions"))
			}
		}
	}
	return nil
}

// checkBatch decodes b as the model will, and says what fails without
// the decoder's "invalid action" prefix.
func checkBatch(b Batch) error {
	_, err := openai.DecodeActions(json.RawMessage(b))
	if err == nil {
		return nil
	}
	msg := strings.TrimPrefix(err.Error(), actions.ErrInvalid.Error()+": ")
	if !strings.HasPrefix(msg, "actions") {
		msg = "actions: " + msg
	}
	return errors.New(msg)
}

// New returns a Model that replays turns.
func New(turns []Turn, strict bool) *Model { return &Model{Turns: turns, Strict: strict} }

// Load reads a script file: a YAML (or JSON) list of turns.
func Load(path string) ([]Turn, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var turns []Turn
	if err := yaml.Unmarshal(b, &turns); err != nil {
		return nil, fmt.Errorf("script %s: %w", path, err)
	}
	return turns, nil
}

// Next checks the results against the previous turn's expectations, then
// returns the next scripted turn, or an end_turn when the script is done.
func (m *Model) Next(ctx context.Context, in harness.Input) (harness.Turn, error) {
	m.Received = append(m.Received, in)
	if err := m.check(in.Results); err != nil {
		return harness.Turn{}, err
	}
	if m.next >= len(m.Turns) {
		return harness.Turn{Stop: harness.StopEndTurn, Text: "The script is finished."}, nil
	}
	t := m.Turns[m.next]
	m.next++
	m.expect = t.ExpectError
	batches := t.Calls
	if len(t.Actions) > 0 {
		batches = append([]Batch{t.Actions}, batches...)
	}
	out := harness.Turn{Text: t.Say, Stop: harness.StopToolUse}
	if len(batches) == 0 {
		out.Stop = harness.StopEndTurn
	}
	for i, b := range batches {
		c := harness.Call{
			ID:      fmt.Sprintf("call_%03d_%d", m.next, i),
			Name:    "computer",
			Space:   screen.Image,
			FrameID: t.Frame,
			Raw:     json.RawMessage(b),
		}
		c.Actions, c.DecodeErr = openai.DecodeActions(json.RawMessage(b))
		out.Calls = append(out.Calls, c)
	}
	return out, nil
}

func (m *Model) check(rs []harness.Result) error {
	for _, r := range rs {
		switch {
		case m.expect != "" && (r.Err == nil || !strings.Contains(r.Err.Error(), m.expect)):
			return fmt.Errorf("%w: call %s: got error %v, want one containing %q", ErrUnexpected, r.CallID, r.Err, m.expect)
		case m.expect == "" && m.Strict && r.Err != nil:
			return fmt.Errorf("%w: call %s failed: %v", ErrUnexpected, r.CallID, r.Err)
		}
	}
	return nil
}

var _ harness.Stateful = (*Model)(nil)

// scriptState is where a replay stands.
type scriptState struct {
	Next   int    `json:"next"`
	Expect string `json:"expect,omitempty"`
}

// MarshalState saves where the replay stands: the next turn and the
// previous turn's expected error. The turns themselves are not saved: a
// restored Model must be made with the same script.
func (m *Model) MarshalState() ([]byte, error) {
	return json.Marshal(scriptState{Next: m.next, Expect: m.expect})
}

// UnmarshalState continues a replay saved by MarshalState, on a Model made
// with the same script.
func (m *Model) UnmarshalState(b []byte) error {
	var s scriptState
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("script: restore state: %w", err)
	}
	if s.Next < 0 || s.Next > len(m.Turns) {
		return fmt.Errorf("script: restore state: turn %d of a script of %d turns", s.Next, len(m.Turns))
	}
	m.next, m.expect = s.Next, s.Expect
	return nil
}
