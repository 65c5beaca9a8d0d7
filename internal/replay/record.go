// Package replay records a passing run and plays it back without a model.
//
// A Recording holds the run's steps: for each model turn, the batches of
// actions it sent, converted to pixels of the screenshot it was sent (image
// space), and that screenshot. Record builds one from a trace directory and
// writes it as replay.json beside a shots/ directory; Load reads it back.
//
// Model plays a Recording back through the harness loop, so every replayed
// action goes through the same validation, policy and mapping as a model's.
// Before each step it compares the screenshot it is shown with the recorded
// one (Compare, a perceptual difference on a small blurred grayscale image).
// When they differ by more than the threshold, it writes a side-by-side diff
// image and either fails the run with ErrDiverged or, when a healing model is
// configured, hands the rest of the run to that model, whose new path the
// run's trace records.
package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/screen"
)

// File is the name of a recording's index inside its directory.
const File = "replay.json"

// ErrNotReplayable marks a trace that cannot become a Recording.
var ErrNotReplayable = errors.New("trace cannot be replayed")

// Recording is a run saved for replay. It is plain data.
type Recording struct {
	Task  string      `json:"task"`
	Image screen.Size `json:"image"` // the size of the screenshots; actions are in its pixels
	Steps []Step      `json:"steps"`
	// Final is the model's last words, and FinalShot the screenshot it saw
	// when it ended the run.
	Final     string `json:"final,omitempty"`
	FinalShot string `json:"final_shot"`
}

// Step is one model turn.
type Step struct {
	Say   string             `json:"say,omitempty"`
	Shot  string             `json:"shot"`  // the screenshot the turn was decided on, relative to the recording
	Calls [][]actions.Action `json:"calls"` // each call's batch, in image pixels
}

// Record reads the trace in traceDir and writes it as a Recording into dir
// (replay.json and shots/), replacing any recording there. Only actions
// that ran are kept; a run with application-side tool calls or actions on a
// zoomed screenshot cannot be recorded.
func Record(traceDir, dir string) (*Recording, error) {
	evs, err := trace.Read(traceDir)
	if err != nil {
		return nil, err
	}
	rec, shots, err := fromEvents(evs)
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(filepath.Join(dir, "shots")); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "shots"), 0o755); err != nil {
		return nil, err
	}
	for _, s := range shots {
		b, err := os.ReadFile(filepath.Join(traceDir, filepath.FromSlash(s)))
		if err != nil {
			return nil, fmt.Errorf("record: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(s)), b, 0o644); err != nil {
			return nil, fmt.Errorf("record: %w", err)
		}
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return nil, err
	}
	return rec, os.WriteFile(filepath.Join(dir, File), append(b, '\n'), 0o644)
}

// Load reads the recording in dir.
func Load(dir string) (*Recording, error) {
	b, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil {
		return nil, err
	}
	var r Recording
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, File), err)
	}
	if r.Image.Empty() || r.FinalShot == "" {
		return nil, fmt.Errorf("%s: no image size or final screenshot", filepath.Join(dir, File))
	}
	return &r, nil
}

// fromEvents builds a Recording from a trace's events and lists the shot
// files it refers to.
func fromEvents(evs []trace.Event) (*Recording, []string, error) {
	rec := &Recording{}
	var latest string
	var cur *Step
	spaces := map[string]screen.Space{} // call id -> space
	index := map[string]int{}           // call id -> index in cur.Calls
	used := map[string]bool{}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrNotReplayable, fmt.Sprintf(format, args...))
	}
	for _, e := range evs {
		switch e.Type {
		case trace.TypeRunStart:
			rec.Task, latest, rec.Image = e.Task, e.Shot, e.Frame.Sent
		case trace.TypeModelTurn:
			rec.Steps = append(rec.Steps, Step{Say: e.Text, Shot: latest})
			cur = &rec.Steps[len(rec.Steps)-1]
			clear(index)
		case trace.TypeCall:
			if e.Client {
				return nil, nil, bad("step %d calls the application-side tool %q", e.Step, e.Name)
			}
			spaces[e.CallID] = e.Space
		case trace.TypeAction:
			if cur == nil || e.Error != "" {
				continue
			}
			if e.Frame.Zoomed() {
				return nil, nil, bad("step %d acts on a zoomed screenshot", e.Step)
			}
			space := spaces[e.CallID]
			if e.Edited { // a human's edit is in image pixels already
				space = screen.Image
			}
			a, err := ToImage(e.Action, e.Frame, space)
			if err != nil {
				return nil, nil, bad("step %d: %v", e.Step, err)
			}
			i, ok := index[e.CallID]
			if !ok {
				i = len(cur.Calls)
				index[e.CallID] = i
				cur.Calls = append(cur.Calls, nil)
			}
			cur.Calls[i] = append(cur.Calls[i], a)
		case trace.TypeResult:
			if !e.Client && e.Shot != "" && !e.Frame.Zoomed() {
				latest = e.Shot
			}
		case trace.TypeRunEnd:
			rec.Final = e.Text
		}
	}
	if latest == "" || rec.Image.Empty() {
		return nil, nil, bad("the trace has no screenshots")
	}
	rec.FinalShot = latest
	// The last turn ends the run; turns in which nothing ran are dropped.
	steps := rec.Steps[:0]
	for _, s := range rec.Steps {
		if len(s.Calls) > 0 {
			steps = append(steps, s)
			used[s.Shot] = true
		}
	}
	rec.Steps = steps
	used[rec.FinalShot] = true
	shots := make([]string, 0, len(used))
	for s := range used {
		shots = append(shots, s)
	}
	return rec, shots, nil
}

// ToImage converts a's coordinates from the model's space s to pixels of
// f's sent image. Scroll distances are scaled the way screen.Frame.Map
// scales them.
func ToImage(a actions.Action, f screen.Frame, s screen.Space) (actions.Action, error) {
	if s.Kind == screen.ImageSpace {
		return a, nil
	}
	out := a
	var err error
	if a.HasAt {
		if out.At, err = f.ToImage(a.At, s); err != nil {
			return a, err
		}
	}
	if len(a.Path) > 0 {
		out.Path = make([]actions.Point, len(a.Path))
		for i, p := range a.Path {
			if out.Path[i], err = f.ToImage(p, s); err != nil {
				return a, err
			}
		}
	}
	if !a.Region.Empty() {
		if out.Region.Min, err = f.ToImage(a.Region.Min, s); err != nil {
			return a, err
		}
		if out.Region.Max, err = f.ToImage(a.Region.Max, s); err != nil {
			return a, err
		}
	}
	var w, h float64
	switch s.Kind {
	case screen.GridSpace:
		w, h = float64(s.Grid), float64(s.Grid)
	case screen.ResizedSpace:
		w, h = float64(s.Resized.W), float64(s.Resized.H)
	}
	if w > 0 && h > 0 {
		out.DeltaX = a.DeltaX * float64(f.Sent.W) / w
		out.DeltaY = a.DeltaY * float64(f.Sent.H) / h
	}
	return out, nil
}
