package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/cassette"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/internal/demo"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
)

// Options are the run's surroundings, as opposed to the task itself.
type Options struct {
	Out     string       // output directory; created, and must not hold a trace yet
	Browser string       // Chromium executable; empty: looked up on PATH
	Logger  *slog.Logger // nil: slog.Default()
	// Model, when set, replaces the model the task names (tests use it to
	// point a provider at a fake endpoint).
	Model harness.Model
	// Getenv supplies provider API keys and base URLs; cmd/spotter passes
	// os.Getenv. Nil means no environment.
	Getenv func(string) string
}

// Result is what result.json holds.
type Result struct {
	Task    string          `json:"task"`
	OK      bool            `json:"ok"`
	Outcome harness.Outcome `json:"outcome"`
	Image   screen.Size     `json:"image"`
	Trace   string          `json:"trace"`
	Report  string          `json:"report,omitempty"`
	Started time.Time       `json:"started"`
	// Demo lists the demo app's stages completed and missing, for tasks
	// that ran on it.
	Demo *DemoState `json:"demo,omitempty"`
}

// DemoState is the demo app's progress at the end of a run.
type DemoState struct {
	Completed map[string]string `json:"completed"`
	Missing   []string          `json:"missing,omitempty"`
}

// Run performs t and writes the trace, report.html and result.json into
// o.Out. It returns an error only when the run could not happen at all (no
// browser, a bad output directory); how the run itself ended is in Result.
func Run(ctx context.Context, t Task, o Options) (Result, error) {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	res := Result{Task: t.Name, Started: time.Now(), Trace: o.Out}

	startURL := t.StartURL
	policy := t.Policy
	var app *demo.Server
	if path, ok := strings.CutPrefix(t.StartURL, DemoScheme); ok {
		app = demo.NewServer()
		base, stop, err := app.Serve(ctx)
		if err != nil {
			return res, fmt.Errorf("start the demo app: %w", err)
		}
		defer stop()
		startURL = base + "/" + strings.TrimPrefix(path, "/")
		policy.Hosts = demoHosts(policy.Hosts, base)
	}

	viewport := screen.Size{W: t.Display.Width, H: t.Display.Height}
	res.Image = screen.Size{W: t.Image.Width, H: t.Image.Height}
	if res.Image.Empty() {
		res.Image = imageSize(t.Model, viewport)
	}
	model := o.Model
	var replay *cassette.Player
	if model == nil {
		var err error
		if model, replay, err = newModel(t.Model, res.Image, o.Getenv, log); err != nil {
			return res, err
		}
	}

	disp, err := cdp.Open(ctx, cdp.Config{Exec: o.Browser, Viewport: viewport, DPR: t.Display.DPR, Logger: log})
	if err != nil {
		return res, err
	}
	defer disp.Close(context.WithoutCancel(ctx))
	// The start URL is the operator's choice, so it is not subject to the
	// model's policy.
	if err := disp.Perform(ctx, screen.Mapped{Action: actions.Action{Kind: actions.Navigate, URL: startURL}}); err != nil {
		return res, fmt.Errorf("open %s: %w", startURL, err)
	}

	tw, err := trace.Create(o.Out)
	if err != nil {
		return res, err
	}
	out, err := harness.Run(ctx, harness.Config{
		Model:     model,
		Display:   disp,
		Task:      t.Task,
		Policy:    policy,
		Capture:   screen.CaptureOptions{Size: res.Image, Format: t.Image.Format, Quality: t.Image.Quality},
		MaxSteps:  t.MaxSteps,
		Trace:     tw,
		ModelName: strings.Trim(t.Model.Provider+"/"+t.Model.Name, "/"),
		Logger:    log,
	})
	if cerr := tw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return res, err
	}
	res.Outcome, res.OK = out, out.OK()
	if replay != nil {
		// A model that gave up after a refused request can still end its
		// turn normally: the replay itself must have gone as recorded.
		if err := replay.Err(); err != nil {
			res.OK = false
			res.Outcome.Err = strings.TrimSpace(res.Outcome.Err + "\ncassette: " + err.Error())
		}
	}
	if app != nil {
		res.Demo = &DemoState{Completed: app.State(), Missing: app.Missing()}
	}
	if res.Report, err = trace.WriteReport(o.Out); err != nil {
		log.Error("write report", "err", err)
	}
	return res, writeJSON(filepath.Join(o.Out, "result.json"), res)
}

// imageSize is the largest image the model's size rule allows for the
// viewport. A script's coordinates are written against the viewport itself.
func imageSize(m ModelSpec, viewport screen.Size) screen.Size {
	if m.Provider == "script" {
		return viewport
	}
	return screen.RuleFor(m.Provider, m.Name).Fit(viewport)
}

// demoHosts replaces the host name "demo" in a policy's hosts with the demo
// app's loopback address, which is only known once it listens.
func demoHosts(hosts []string, base string) []string {
	u, err := url.Parse(base)
	if err != nil {
		return hosts
	}
	out := make([]string, len(hosts))
	for i, h := range hosts {
		if h == "demo" {
			h = u.Host
		}
		out[i] = h
	}
	return out
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return errors.Join(err, os.Remove(tmp))
	}
	return os.Rename(tmp, path)
}
