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
	"sync"
	"time"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/cassette"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/internal/demo"
	"github.com/spotter-harness/spotter/internal/wiring"
	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/isolate/egress"
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
	// Sandboxes, if not nil, runs the task's browser (or, with
	// containerd, its desktop) in a sandbox of its own, whose egress proxy
	// allows the policy's hosts and the start URL's host (the demo app's
	// address for demo tasks), and nothing else. Nil means a display on the
	// host, with no proxy (see wiring.OpenDisplay).
	Sandboxes *wiring.Sandboxes
	// MemoryMiB limits the sandbox's memory; zero means the Sandboxes'
	// default.
	MemoryMiB uint64
	// Shared, if not nil, opens a chromium display on the host (no
	// Sandboxes, or local ones) as a browser context of one of its
	// browsers, behind the display's own egress proxy when it has one
	// (wiring.DisplayRequest.Shared): `spotter test` runs a suite's tests
	// in one browser. Nil means a browser of the display's own.
	Shared *cdp.Pool
	// Approvals, if not nil, sends the actions its rules flag to a human
	// (see ApprovalConfig). Nil means no approver: actions run once the
	// policy allows them, and provider safety checks are denied.
	Approvals *ApprovalConfig
}

// Result is what result.json holds.
type Result struct {
	Task    string          `json:"task"`
	OK      bool            `json:"ok"`
	Outcome harness.Outcome `json:"outcome"`
	Image   screen.Size     `json:"image"`
	// Display is the display's backend: chromium, vnc, desktop or
	// playwright.
	Display string    `json:"display"`
	Trace   string    `json:"trace"`
	Report  string    `json:"report,omitempty"`
	Started time.Time `json:"started"`
	// Demo lists the demo app's stages completed and missing, for tasks
	// that ran on it.
	Demo *DemoState `json:"demo,omitempty"`
	// Sandbox describes the run's sandbox, for sandboxed runs.
	Sandbox *SandboxState `json:"sandbox,omitempty"`
}

// SandboxState is what a sandboxed run's sandbox did.
type SandboxState struct {
	Backend isolate.Backend `json:"backend"`
	Egress  egress.Policy   `json:"egress"`
	// Allowed and Refused count the egress proxy's decisions; each one is
	// a note in the trace.
	Allowed int `json:"egress_allowed"`
	Refused int `json:"egress_refused"`
	// Restarts has a note for each time the sandbox died and was started
	// anew.
	Restarts []string `json:"restarts,omitempty"`
	// FirstShot is how long the sandbox took from its start to the first
	// screenshot.
	FirstShot time.Duration `json:"first_shot_ns"`
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
	res := Result{Task: t.Name, Started: time.Now(), Trace: o.Out, Display: t.Display.Backend}
	if o.Approvals != nil {
		if err := o.Approvals.Rules.Validate(); err != nil {
			return res, fmt.Errorf("approval rules: %w", err)
		}
	}

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
		policy.Hosts = DemoHosts(policy.Hosts, base)
	}

	viewport := screen.Size{W: t.Display.Width, H: t.Display.Height}
	res.Image = screen.Size{W: t.Image.Width, H: t.Image.Height}
	if res.Image.Empty() {
		res.Image = wiring.ImageSize(t.Model, viewport)
	}
	model := o.Model
	var replay *cassette.Player
	if model == nil {
		var err error
		if model, replay, err = wiring.NewTaskModel(t.Model, res.Image, o.Getenv, log); err != nil {
			return res, err
		}
	}

	tw, err := trace.Create(o.Out)
	if err != nil {
		return res, err
	}
	closeTrace := sync.OnceValue(tw.Close)
	defer closeTrace()
	// Egress decisions and restarts come from other goroutines than the
	// loop's; the trace writer is safe for that.
	note := func(text string) { tw.Write(trace.Event{Type: trace.TypeNote, Text: text}) }
	sur, err := Open(ctx, t, startURL, policy, o, note, log)
	if err != nil {
		return res, errors.Join(err, closeTrace())
	}
	cfg := harness.Config{
		Model:     model,
		Display:   sur.Display,
		Approver:  sur.Approver,
		Task:      t.Task,
		Policy:    policy,
		Capture:   screen.CaptureOptions{Size: res.Image, Format: t.Image.Format, Quality: t.Image.Quality},
		MaxSteps:  t.MaxSteps,
		Trace:     tw,
		ModelName: strings.Trim(t.Model.Provider+"/"+t.Model.Name, "/"),
		Logger:    log,
	}
	out, err := harness.Run(ctx, cfg)
	// Closed before the result is written: no egress decision may
	// arrive while it is.
	var cerr error
	if res.Sandbox, cerr = sur.Close(context.WithoutCancel(ctx)); cerr != nil {
		log.Warn("close display", "err", cerr)
	}
	if cerr := closeTrace(); err == nil {
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

// DemoHosts replaces the host name "demo" in a policy's hosts with the demo
// app's loopback address, which is only known once it listens.
func DemoHosts(hosts []string, base string) []string {
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

// decisionNote describes an egress decision for the trace.
func decisionNote(d egress.Decision) string {
	target := d.Host + ":" + d.Port
	if d.Allowed {
		return fmt.Sprintf("egress allowed: %s %s (rule %s)", d.Method, target, d.Rule)
	}
	return fmt.Sprintf("egress refused: %s %s: %s", d.Method, target, d.Reason)
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
