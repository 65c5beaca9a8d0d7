package playwright

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/harness/cassette"
	"github.com/spotter-harness/spotter/internal/demo"
	"github.com/spotter-harness/spotter/screen"
)

const demoTaskFile = "../../examples/demo-anthropic.yaml"

// demoTask is the part of examples/demo-anthropic.yaml the demo test uses.
type demoTask struct {
	Task     string `yaml:"task"`
	StartURL string `yaml:"start_url"`
	Display  struct {
		Width  int     `yaml:"width"`
		Height int     `yaml:"height"`
		DPR    float64 `yaml:"dpr"`
	} `yaml:"display"`
	Policy   actions.Policy `yaml:"policy"`
	MaxSteps int            `yaml:"max_steps"`
	Model    struct {
		Provider string `yaml:"provider"`
		Name     string `yaml:"name"`
		Cassette string `yaml:"cassette"`
	} `yaml:"model"`
}

// TestDemoTask runs the demo task (a replayed Claude session with the real
// Anthropic adapter, on the built-in demo app) through harness.Run on a
// Playwright display, launched, connected to a launchServer endpoint and
// connected to a run-server, and checks that the demo app saw every stage
// completed.
func TestDemoTask(t *testing.T) {
	integration(t)
	b, err := os.ReadFile(demoTaskFile)
	if err != nil {
		t.Fatal(err)
	}
	var task demoTask
	if err := yaml.Unmarshal(b, &task); err != nil {
		t.Fatalf("%s: %v", demoTaskFile, err)
	}
	path, ok := strings.CutPrefix(task.StartURL, "demo:")
	if task.Model.Provider != "anthropic" || task.Model.Cassette == "" || !ok {
		t.Fatalf("%s: model %+v, start URL %q; want an anthropic cassette on the demo app", demoTaskFile, task.Model, task.StartURL)
	}
	cfg := Config{
		Viewport: screen.Size{W: task.Display.Width, H: task.Display.Height},
		DPR:      task.Display.DPR,
	}
	for _, mode := range []string{"launched", "connected", "run-server"} {
		t.Run(mode, func(t *testing.T) {
			cfg := cfg
			switch mode {
			case "connected": // to a launchServer endpoint
				cfg.WSEndpoint = startServer(t).endpoint
			case "run-server": // as to a grid's
				cfg.WSEndpoint, cfg.WSHeaders = startRunServer(t).endpoint, runServerHeaders(t)
			}
			d := open(t, cfg)

			app := demo.NewServer()
			base, stop, err := app.Serve(t.Context())
			if err != nil {
				t.Fatalf("start the demo app: %v", err)
			}
			t.Cleanup(stop)
			policy := task.Policy
			u, err := url.Parse(base)
			if err != nil {
				t.Fatal(err)
			}
			// "demo" in the task's hosts stands for the demo app's address.
			policy.Hosts = slices.Clone(policy.Hosts)
			for i, h := range policy.Hosts {
				if h == "demo" {
					policy.Hosts[i] = u.Host
				}
			}
			// The start URL is the operator's, not the model's: opened
			// before the run, as the runner does.
			load(t, d, base+"/"+strings.TrimPrefix(path, "/"))

			p, err := cassette.Open(filepath.Join(filepath.Dir(demoTaskFile), task.Model.Cassette))
			if err != nil {
				t.Fatal(err)
			}
			image := screen.RuleFor(task.Model.Provider, task.Model.Name).Fit(cfg.Viewport)
			m, err := anthropic.New(anthropic.Config{Model: task.Model.Name, Display: image,
				HTTPClient: p.Client(), APIKey: "cassette-replay", MaxRetries: -1})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			out, err := harness.Run(ctx, harness.Config{
				Model:    m,
				Display:  d,
				Task:     task.Task,
				Policy:   policy,
				Capture:  screen.CaptureOptions{Size: image},
				MaxSteps: task.MaxSteps,
			})
			if err != nil {
				t.Fatalf("harness.Run() = %v", err)
			}
			if !out.OK() || out.Failed != 0 {
				t.Errorf("harness.Run() outcome = %+v, want success with no failed call", out)
			}
			if err := p.Err(); err != nil {
				t.Errorf("the cassette replay: %v", err)
			}
			if missing := app.Missing(); len(missing) > 0 {
				t.Errorf("demo stages not completed: %v (completed: %v)", missing, app.State())
			}
		})
	}
}
