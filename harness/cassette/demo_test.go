package cassette_test

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/harness/cassette"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/screentest"
)

const demoTaskFile = "../../examples/demo-anthropic.yaml"

// demoTask is the part of examples/demo-anthropic.yaml these tests use.
type demoTask struct {
	Task    string `yaml:"task"`
	Display struct {
		Width  int `yaml:"width"`
		Height int `yaml:"height"`
	} `yaml:"display"`
	Policy   actions.Policy `yaml:"policy"`
	MaxSteps int            `yaml:"max_steps"`
	Model    struct {
		Provider string `yaml:"provider"`
		Name     string `yaml:"name"`
		Cassette string `yaml:"cassette"`
	} `yaml:"model"`
}

func loadDemoTask(t *testing.T) (demoTask, string) {
	t.Helper()
	b, err := os.ReadFile(demoTaskFile)
	if err != nil {
		t.Fatal(err)
	}
	var task demoTask
	if err := yaml.Unmarshal(b, &task); err != nil {
		t.Fatalf("%s: %v", demoTaskFile, err)
	}
	if task.Model.Provider != "anthropic" || task.Model.Cassette == "" {
		t.Fatalf("%s: model %+v, want provider anthropic with a cassette", demoTaskFile, task.Model)
	}
	return task, filepath.Join(filepath.Dir(demoTaskFile), task.Model.Cassette)
}

// demoImage is the image size the runner sends for the demo task: the
// model's size rule applied to the viewport.
func demoImage(task demoTask) screen.Size {
	return screen.RuleFor(task.Model.Provider, task.Model.Name).Fit(screen.Size{W: task.Display.Width, H: task.Display.Height})
}

// describe writes a performed action compactly, in CSS pixels.
func describe(m screen.Mapped) string {
	a := m.Action
	switch a.Kind {
	case actions.Click:
		return fmt.Sprintf("click %s", a.At)
	case actions.Type:
		return fmt.Sprintf("type %q", a.Text)
	case actions.Keypress:
		return fmt.Sprintf("keypress %s", a.Keys)
	case actions.Scroll:
		return fmt.Sprintf("scroll %s by (%g,%g)", a.At, a.DeltaX, a.DeltaY)
	case actions.Drag:
		return fmt.Sprintf("drag %s->%s", a.Path[0], a.Path[len(a.Path)-1])
	}
	return a.Kind.String()
}

// wantDemoActions are the actions the demo cassette drives, in CSS pixels
// (an image pixel maps to the centre of its CSS pixel, hence the halves)
// of the demo page (internal/demo/site/index.html): the name field's and
// the Check in button's centres; the seat list's centre, scrolled 19
// wheel clicks of 53 px; seat 30's button after that scroll; the ticket's
// centre dragged to the tray's.
var wantDemoActions = []string{
	"click (227.5,141.5)",
	`type "Ada Lovelace"`,
	"click (482.5,141.5)",
	"keypress Control+Shift+k",
	"scroll (301.5,531.5) by (0,1007)",
	"click (430.5,555.5)",
	"drag (721.5,181.5)->(1051.5,201.5)",
}

// runDemo runs the demo task with an Anthropic model on a fake display.
func runDemo(t *testing.T, task demoTask, cfg anthropic.Config) (harness.Outcome, []string) {
	t.Helper()
	m, err := anthropic.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := &screentest.Fake{Viewport: screen.Size{W: task.Display.Width, H: task.Display.Height}}
	out, err := harness.Run(t.Context(), harness.Config{
		Model:    m,
		Display:  d,
		Task:     task.Task,
		Policy:   task.Policy,
		Capture:  screen.CaptureOptions{Size: cfg.Display},
		MaxSteps: task.MaxSteps,
	})
	if err != nil {
		t.Fatalf("harness.Run: %v", err)
	}
	var got []string
	for _, p := range d.Performed() {
		got = append(got, describe(p))
	}
	return out, got
}

func TestDemoCassetteImageSize(t *testing.T) {
	task, _ := loadDemoTask(t)
	if got, want := demoImage(task), (screen.Size{W: 1280, H: 800}); got != want {
		t.Errorf("RuleFor(%q, %q).Fit(%dx%d) = %v, want %v: the cassette's coordinates assume CSS pixels",
			task.Model.Provider, task.Model.Name, task.Display.Width, task.Display.Height, got, want)
	}
}

// TestDemoCassette runs the real Anthropic adapter and the harness loop on
// the demo cassette, in memory and through a local server.
func TestDemoCassette(t *testing.T) {
	task, path := loadDemoTask(t)
	for _, mode := range []string{"transport", "server"} {
		t.Run(mode, func(t *testing.T) {
			p, err := cassette.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			cfg := anthropic.Config{Model: task.Model.Name, Display: demoImage(task), MaxRetries: -1}
			switch mode {
			case "transport":
				// The adapter's own base URL and a placeholder key: the
				// in-memory client sends nothing anywhere.
				cfg.HTTPClient, cfg.APIKey = p.Client(), "cassette-replay"
			case "server":
				base, stop, err := p.Serve(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				defer stop()
				cfg.BaseURL = base
			}
			out, got := runDemo(t, task, cfg)
			if err := p.Err(); err != nil {
				t.Errorf("Player.Err() = %v, want nil", err)
			}
			if out.Stop != harness.StopEndTurn || out.Failed != 0 || out.Err != "" {
				t.Errorf("outcome = %+v, want end_turn with no failed call", out)
			}
			if out.Steps != 7 || out.Calls != 7 {
				t.Errorf("outcome has %d steps and %d calls, want 7 and 7", out.Steps, out.Calls)
			}
			if !strings.Contains(out.Text, "All four stages are done") {
				t.Errorf("last words = %q, want the cassette's final text", out.Text)
			}
			if out.Usage.OutputTokens == 0 || out.Usage.CachedTokens == 0 || out.Usage.CostUSD == 0 {
				t.Errorf("usage = %+v, want the cassette's token counts and a cost", out.Usage)
			}
			if diff := cmp.Diff(wantDemoActions, got); diff != "" {
				t.Errorf("performed actions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDemoCassetteMismatch replays the demo cassette to a model that asks
// for another model and tool: the first request gets a 400 that says what
// differs, the run fails, and the Player reports it.
func TestDemoCassetteMismatch(t *testing.T) {
	task, path := loadDemoTask(t)
	p, err := cassette.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	out, got := runDemo(t, task, anthropic.Config{Model: "claude-opus-4-5", Display: demoImage(task),
		HTTPClient: p.Client(), APIKey: "cassette-replay"})
	if out.Stop != harness.StopError || len(got) != 0 {
		t.Errorf("outcome = %+v after %v, want an error before any action", out, got)
	}
	for _, want := range []string{"status 400", "cassette_mismatch", `model: got "claude-opus-4-5"`} {
		if !strings.Contains(out.Err, want) {
			t.Errorf("outcome error = %q, want it to contain %q", out.Err, want)
		}
	}
	err = p.Err()
	if !errors.Is(err, cassette.ErrMismatch) || !errors.Is(err, cassette.ErrUnplayed) {
		t.Fatalf("Player.Err() = %v, want ErrMismatch and ErrUnplayed", err)
	}
	ms := p.Mismatches()
	if len(ms) != 1 {
		t.Fatalf("Mismatches() = %v, want 1", ms)
	}
	want := []string{
		`model: got "claude-opus-4-5", want "claude-sonnet-4-5"`,
		`tool: got "computer_20251124", want "computer_20250124"`,
	}
	if diff := cmp.Diff(want, ms[0].Diffs); diff != "" {
		t.Errorf("mismatch diffs (-want +got):\n%s", diff)
	}
}

// TestDemoCassetteBadImageSize replays the demo cassette to a model that
// declares a downscaled display: its coordinates would be wrong, so the
// first request must be refused.
func TestDemoCassetteBadImageSize(t *testing.T) {
	task, path := loadDemoTask(t)
	p, err := cassette.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := runDemo(t, task, anthropic.Config{Model: task.Model.Name, Display: screen.Size{W: 1024, H: 640},
		HTTPClient: &http.Client{Transport: p}, APIKey: "cassette-replay"})
	if out.Stop != harness.StopError {
		t.Errorf("outcome = %+v, want an error", out)
	}
	ms := p.Mismatches()
	if len(ms) != 1 || !cmp.Equal(ms[0].Diffs, []string{`display: got "1024x640", want "1280x800"`}) {
		t.Errorf("Mismatches() = %v, want one display mismatch", ms)
	}
}
