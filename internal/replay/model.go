package replay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"image"
	"os"
	"path/filepath"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
)

// DefaultThreshold is the share of visibly changed pixels above which a
// screen counts as diverged.
const DefaultThreshold = 0.01

// ErrDiverged marks a replay whose screen no longer looks as recorded.
var ErrDiverged = errors.New("replay diverged")

// Config configures a replay.
type Config struct {
	Recording *Recording // required
	Dir       string     // the recording's directory; its shots are read from there
	// Threshold is the largest Diff.Score that still counts as the same
	// screen; zero means DefaultThreshold.
	Threshold float64
	// Heal, when set, takes over the run at the first divergence: it is
	// sent the task and the current screenshot, and answers every later
	// turn. Nil: a divergence fails the run.
	Heal harness.Model
	// DiffDir is where side-by-side diff images are written (created if
	// needed); empty means none are.
	DiffDir string
}

// Divergence is a step whose screen did not look as recorded.
type Divergence struct {
	Step  int     `json:"step"` // 1-based; len(Steps)+1 is the final screen
	Score float64 `json:"score"`
	Diff  string  `json:"diff,omitempty"` // the side-by-side image, if written
	Err   string  `json:"error,omitempty"`
}

// Model replays a Recording as a harness.Model. It is not safe for
// concurrent use; a run uses it from one goroutine.
type Model struct {
	cfg  Config
	step int

	// Divergences lists where the screen differed, in order.
	Divergences []Divergence
	// HealedAt is the step at which Heal took over; zero if it did not.
	HealedAt int
	// Scores holds every step's difference score, in order.
	Scores []float64
}

// New returns a Model that replays cfg.Recording.
func New(cfg Config) (*Model, error) {
	if cfg.Recording == nil {
		return nil, errors.New("replay: no recording")
	}
	cfg.Threshold = cmp.Or(cfg.Threshold, DefaultThreshold)
	return &Model{cfg: cfg}, nil
}

// Next compares the screen with the recording and returns the recorded
// turn, or hands over to the healing model at a divergence.
func (m *Model) Next(ctx context.Context, in harness.Input) (harness.Turn, error) {
	if m.HealedAt > 0 {
		return m.cfg.Heal.Next(ctx, in)
	}
	rec := m.cfg.Recording
	shot := in.Shot
	var failed error
	for _, r := range in.Results {
		if r.Shot != nil && !r.Shot.Frame.Zoomed() {
			shot = r.Shot
		}
		if r.Err != nil && failed == nil {
			failed = fmt.Errorf("call %s failed: %w", r.CallID, r.Err)
		}
	}
	m.step++
	want := rec.FinalShot
	if m.step <= len(rec.Steps) {
		want = rec.Steps[m.step-1].Shot
	}
	if err := m.check(shot, want, failed); err != nil {
		if m.cfg.Heal == nil {
			return harness.Turn{}, err
		}
		m.HealedAt = m.step
		return m.cfg.Heal.Next(ctx, harness.Input{Task: rec.Task, Shot: shot})
	}
	if m.step > len(rec.Steps) {
		return harness.Turn{Text: rec.Final, Stop: harness.StopEndTurn}, nil
	}
	st := rec.Steps[m.step-1]
	t := harness.Turn{Text: st.Say, Stop: harness.StopToolUse}
	for i, batch := range st.Calls {
		t.Calls = append(t.Calls, harness.Call{ID: fmt.Sprintf("replay-%d-%d", m.step, i+1), Name: "computer",
			Actions: batch, Space: screen.Image})
	}
	return t, nil
}

// check compares the screenshot shown with the recorded one at want, and
// records a divergence.
func (m *Model) check(shot *screen.Shot, want string, failed error) error {
	d := Divergence{Step: m.step}
	fail := func(err error) error {
		d.Err = err.Error()
		m.Divergences = append(m.Divergences, d)
		return fmt.Errorf("%w at step %d: %v", ErrDiverged, m.step, err)
	}
	if failed != nil {
		return fail(failed)
	}
	if shot == nil {
		return fail(errors.New("no screenshot to compare"))
	}
	wb, err := os.ReadFile(filepath.Join(m.cfg.Dir, filepath.FromSlash(want)))
	if err != nil {
		return fail(fmt.Errorf("recorded screenshot: %w", err))
	}
	wi, err := Decode(wb)
	if err != nil {
		return fail(fmt.Errorf("recorded screenshot: %w", err))
	}
	gi, err := Decode(shot.Data)
	if err != nil {
		return fail(err)
	}
	diff := Compare(wi, gi)
	d.Score = diff.Score
	m.Scores = append(m.Scores, diff.Score)
	if diff.Score <= m.cfg.Threshold {
		return nil
	}
	if m.cfg.DiffDir != "" {
		d.Diff, err = writeDiff(m.cfg.DiffDir, m.step, wi, gi, diff)
		if err != nil {
			return fail(fmt.Errorf("screen differs by %.1f%% (threshold %.1f%%); diff image: %v",
				100*diff.Score, 100*m.cfg.Threshold, err))
		}
	}
	return fail(fmt.Errorf("screen differs by %.1f%% (threshold %.1f%%)", 100*diff.Score, 100*m.cfg.Threshold))
}

func writeDiff(dir string, step int, want, got image.Image, d Diff) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, err := EncodePNG(SideBySide(want, got, d))
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("diff-step%02d.png", step))
	return path, os.WriteFile(path, b, 0o644)
}
