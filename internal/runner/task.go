// Package runner turns a task file into a finished run: it opens the
// display the task names (through package wiring: Chromium, a desktop, a
// VNC server or Playwright, in a sandbox of its own when Options.Sandboxes
// is set), builds the model (wiring too), drives the harness loop, and
// writes the trace, the report and result.json into the output directory.
// `spotter run` is a thin shell around it; batch jobs and test suites reuse
// it.
package runner

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
	"github.com/spotter-harness/spotter/harness/script"
	"github.com/spotter-harness/spotter/internal/wiring"
	"github.com/spotter-harness/spotter/internal/yamldoc"
	"github.com/spotter-harness/spotter/screen"
)

// ErrTask marks a task file that cannot be run as written. It is
// wiring.ErrSpec: a task's model and display are checked there.
var ErrTask = wiring.ErrSpec

// DemoScheme prefixes a start URL served by the built-in demo app:
// "demo:/" is its front page.
const DemoScheme = "demo:"

// Task is one task file. It is plain data.
type Task struct {
	Name     string `yaml:"name"`
	Task     string `yaml:"task"`      // what the model is asked to do
	StartURL string `yaml:"start_url"` // http(s) URL, or demo:/path for the built-in demo app

	// Display is the display's backend (chromium by default; vnc,
	// desktop or playwright), its size and where it is.
	Display wiring.DisplaySpec `yaml:"display"`
	Image   ImageSpec          `yaml:"image"`

	Policy     actions.Policy `yaml:"policy"`
	PolicyFile string         `yaml:"policy_file"` // instead of policy: a YAML file, relative to the task file

	Model wiring.ModelSpec `yaml:"model"`

	MaxSteps int           `yaml:"max_steps"` // default 50
	Timeout  time.Duration `yaml:"timeout"`   // the whole run; default 10m
}

// ImageSpec is the screenshot sent to the model.
type ImageSpec struct {
	Width  int           `yaml:"width"`  // zero: the model's size rule applied to the viewport
	Height int           `yaml:"height"` // must keep the viewport's aspect within a pixel
	Format screen.Format `yaml:"format"` // png (default) or jpeg
	// Quality is the JPEG quality, 1..100; zero means 80.
	Quality int `yaml:"quality"`
}

// Load reads and checks a task file. Its policy_file and cassette are read
// relative to it, and its name defaults to the file's.
func Load(path string) (Task, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Task{}, err
	}
	t, err := ParseIn(b, filepath.Dir(path))
	if err != nil {
		return Task{}, fmt.Errorf("%s: %w", path, err)
	}
	if t.Name == "" {
		t.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return t, nil
}

// ParseIn is Parse for a task that lives in dir: it reads the task's
// policy_file and makes its cassette path absolute, both relative to dir.
func ParseIn(b []byte, dir string) (Task, error) { return parseIn(b, dir, true) }

// ParseTest is ParseIn for a task of `spotter test`, whose script actions
// may name their element (target: "Check in") instead of coordinates:
// package qa resolves them while the test runs, so the script's actions
// are not decoded here.
func ParseTest(b []byte, dir string) (Task, error) { return parseIn(b, dir, false) }

func parseIn(b []byte, dir string, scripted bool) (Task, error) {
	t, err := parse(b, scripted)
	if err != nil {
		return Task{}, err
	}
	rel := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	if t.PolicyFile != "" {
		if t.Policy, err = actions.LoadPolicy(rel(t.PolicyFile)); err != nil {
			return Task{}, fmt.Errorf("%w: policy_file: %v", ErrTask, err)
		}
	}
	if t.Model.Cassette != "" {
		t.Model.Cassette = rel(t.Model.Cassette)
	}
	return t, nil
}

// Parse decodes a task from YAML (or JSON, which is YAML too), rejecting
// unknown fields, and fills in defaults.
func Parse(b []byte) (Task, error) { return parse(b, true) }

// parse is Parse; scripted says whether a script model's actions are
// decoded as the model will.
func parse(b []byte, scripted bool) (Task, error) {
	var t Task
	if err := yamldoc.Decode(b, &t); err != nil {
		return Task{}, fmt.Errorf("%w: %v", ErrTask, err)
	}
	t.defaults()
	if err := t.check(); err != nil {
		return Task{}, err
	}
	if scripted {
		if err := script.Check(t.Model.Turns); err != nil {
			return Task{}, fmt.Errorf("%w: model.%v", ErrTask, err)
		}
	}
	return t, nil
}

// MinTimeout and MaxTimeout bound a task's timeout: less than a second
// cannot start a browser, and a run is not left alone for more than a
// day.
const (
	MinTimeout = time.Second
	MaxTimeout = 24 * time.Hour
)

func (t *Task) defaults() {
	t.Display.Defaults()
	if t.StartURL == "" && !t.Display.Browser() {
		t.StartURL = "about:blank"
	}
	if t.Image.Format == "" {
		t.Image.Format = screen.PNG
	}
	if t.Model.Provider == "" && len(t.Model.Turns) > 0 {
		t.Model.Provider = "script"
	}
	if t.MaxSteps == 0 {
		t.MaxSteps = 50
	}
	if t.Timeout == 0 {
		t.Timeout = 10 * time.Minute
	}
}

func (t *Task) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrTask, fmt.Sprintf(format, args...))
	}
	if err := t.Display.Check(); err != nil {
		return err
	}
	if err := t.Display.CheckStartURL(t.StartURL); err != nil {
		return err
	}
	switch {
	case t.Image.Format != screen.PNG && t.Image.Format != screen.JPEG:
		return bad("image format %q: want png or jpeg", t.Image.Format)
	case t.Image.Quality < 0 || t.Image.Quality > 100:
		return bad("image quality %d is outside 1..100", t.Image.Quality)
	case (t.Image.Width == 0) != (t.Image.Height == 0):
		return bad("image needs both width and height, or neither")
	case t.Image.Width < 0 || t.Image.Height < 0 || t.Image.Width > t.Display.Width || t.Image.Height > t.Display.Height:
		return bad("image %dx%d must fit the %dx%d display (Spotter never upscales)", t.Image.Width, t.Image.Height, t.Display.Width, t.Display.Height)
	case t.StartURL == "":
		return bad("start_url is required")
	case t.MaxSteps < 0 || t.MaxSteps > 1000:
		return bad("max_steps %d is outside 1..1000", t.MaxSteps)
	case t.Timeout < 0:
		return bad("timeout %v is negative", t.Timeout)
	case t.Timeout < MinTimeout || t.Timeout > MaxTimeout:
		return bad("timeout %v is outside %v..%v", t.Timeout, MinTimeout, MaxTimeout)
	case t.Model.Provider == "":
		return bad("model.provider is required (one of %v)", wiring.Providers)
	case !slices.Contains(wiring.Providers, t.Model.Provider):
		return bad("unknown model provider %q (want one of %v)", t.Model.Provider, wiring.Providers)
	case t.Model.Provider == "script" && len(t.Model.Turns) == 0:
		return bad("a script model needs turns")
	case t.Model.Provider == "script" && t.Model.Context != (ctxpolicy.Policy{}):
		return bad("model.context: a script model is sent no screenshots")
	}
	if err := t.Model.Context.Check(); err != nil {
		return bad("model.%v", err)
	}
	if err := t.Policy.Validate(); err != nil {
		return bad("policy: %v", err)
	}
	if t.Image.Width > 0 {
		// The image must keep the viewport's aspect, or clicks drift on one axis.
		want := float64(t.Image.Width) * float64(t.Display.Height) / float64(t.Display.Width)
		if d := want - float64(t.Image.Height); d > 1 || d < -1 {
			return bad("image %dx%d does not keep the display's %dx%d aspect (height %.0f expected)",
				t.Image.Width, t.Image.Height, t.Display.Width, t.Display.Height, want)
		}
	}
	if !strings.HasPrefix(t.StartURL, DemoScheme) && !strings.HasPrefix(t.StartURL, "http://") &&
		!strings.HasPrefix(t.StartURL, "https://") && t.StartURL != "about:blank" {
		return bad("start_url %q: want http(s)://..., about:blank or demo:/...", t.StartURL)
	}
	return nil
}

// OneOff builds a task from the command line: a model, what it should do,
// and where it starts. Its policy is actions.Standard() with navigation
// allowed to the start URL's host only.
func OneOff(task, startURL, provider, model string) (Task, error) {
	t := Task{Name: "oneoff", Task: task, StartURL: startURL, Policy: actions.Standard(),
		Model: wiring.ModelSpec{Provider: provider, Name: model}}
	if u, err := url.Parse(startURL); err == nil && u.Host != "" {
		t.Policy.Hosts = []string{u.Host}
	}
	t.defaults()
	return t, t.check()
}
