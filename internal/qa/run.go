// Package qa runs test suites: task files with checks on the end state
// (the URL, visible text, an element, a screenshot region against a stored
// baseline, the model's own verdict). Run executes each test on a fresh
// display through the harness loop, prints progress, and writes for the
// suite a JUnit file and report.html: per test the checks, a timeline of the
// screenshots, an animated replay (GIF) and, for replays that diverged, the
// side-by-side diff.
//
// With Options.Record, a passing run is saved as a recording (package
// internal/replay); with Options.Replay, a test replays its recording
// without a model, comparing each step's screenshot with the recorded one.
package qa

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/internal/demo"
	"github.com/spotter-harness/spotter/internal/replay"
	"github.com/spotter-harness/spotter/internal/runner"
	"github.com/spotter-harness/spotter/internal/wiring"
	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
)

// Options are a suite run's surroundings.
type Options struct {
	Out     string       // output directory; required, created
	Browser string       // Chromium executable; empty: looked up on PATH
	Logger  *slog.Logger // nil: discard the loop's logs
	// Getenv supplies provider keys and VNC passwords; nil means none.
	Getenv func(string) string
	// Progress receives a line per test and per action; nil: none.
	Progress io.Writer

	Record          bool // save each passing run as the test's recording
	Replay          bool // replay recordings instead of running the model
	UpdateBaselines bool // write region baselines instead of comparing

	// Sandboxes, MemoryMiB and Approvals are as in runner.Options: each
	// test's display is opened as `spotter run` opens a task's
	// (runner.Open), in a sandbox of its own whose egress proxy allows
	// the test's policy hosts and start URL only, and its flagged actions
	// go to Approvals' asker (or are refused). Nil Sandboxes means a
	// browser context of the suite's browser with no proxy; nil Approvals,
	// no approver.
	Sandboxes *wiring.Sandboxes
	MemoryMiB uint64
	Approvals *runner.ApprovalConfig
}

// Suite is how a suite run went; summary.json holds it.
type Suite struct {
	Tests   []TestResult  `json:"tests"`
	Passed  int           `json:"passed"`
	Failed  int           `json:"failed"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Report  string        `json:"report"`
	JUnit   string        `json:"junit"`
}

// OK reports whether every test passed.
func (s Suite) OK() bool { return s.Failed == 0 && len(s.Tests) > 0 }

// TestResult is how one test went. Paths are relative to the suite's
// output directory.
type TestResult struct {
	Name    string          `json:"name"`
	File    string          `json:"file"`
	OK      bool            `json:"ok"`
	Failure string          `json:"failure,omitempty"` // why it failed, in words
	Outcome harness.Outcome `json:"outcome"`
	Checks  []CheckResult   `json:"checks,omitempty"`
	Dir     string          `json:"dir"`              // the test's trace directory
	Report  string          `json:"report,omitempty"` // the trace's own report
	GIF     string          `json:"gif,omitempty"`    // the animated replay
	Shots   []TimelineShot  `json:"shots,omitempty"`  // the screenshot timeline
	Replay  *ReplayResult   `json:"replay,omitempty"`
	// Sandbox is what the test's sandbox did (its egress decisions, its
	// restarts), for a test that ran in one.
	Sandbox *runner.SandboxState `json:"sandbox,omitempty"`
	Started time.Time            `json:"started"`
	Elapsed time.Duration        `json:"elapsed_ns"`
}

// ReplayResult says how a replay went, or where a recording was saved.
type ReplayResult struct {
	Replayed    bool                `json:"replayed"`
	Divergences []replay.Divergence `json:"divergences,omitempty"` // Diff paths relative to the suite
	HealedAt    int                 `json:"healed_at,omitempty"`
	Recorded    string              `json:"recorded,omitempty"` // where this run was saved as a recording
}

// Run runs the test files in order and writes report.html, junit.xml and
// summary.json into o.Out. It returns an error only when the suite could
// not run at all (an unreadable file, a bad output directory); failing
// tests are in the Suite.
func Run(ctx context.Context, files []string, o Options) (Suite, error) {
	if o.Out == "" {
		return Suite{}, errors.New("qa: no output directory")
	}
	if o.Approvals != nil {
		if err := o.Approvals.Rules.Validate(); err != nil {
			return Suite{}, fmt.Errorf("approval rules: %w", err)
		}
	}
	tests := make([]Test, len(files))
	for i, f := range files {
		t, err := Load(f)
		if err != nil {
			return Suite{}, err
		}
		tests[i] = t
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return Suite{}, err
	}
	start := time.Now()
	var s Suite
	used := map[string]bool{}
	// One browser serves the whole suite (unless a test runs in a
	// containerd sandbox); each test gets a browser context of its own,
	// so tests share no cookies or storage, behind its own egress proxy
	// under local Sandboxes.
	br := &shared{exe: o.Browser}
	defer br.close()
	for _, t := range tests {
		if err := ctx.Err(); err != nil {
			return s, context.Cause(ctx)
		}
		dir := dirName(t.Task.Name, used)
		r := runTest(ctx, t, dir, o, br)
		s.Tests = append(s.Tests, r)
		if r.OK {
			s.Passed++
		} else {
			s.Failed++
		}
	}
	s.Elapsed = time.Since(start)
	s.Report, s.JUnit = ReportFile, JUnitFile
	if err := writeJUnit(filepath.Join(o.Out, JUnitFile), s); err != nil {
		return s, err
	}
	if err := writeReport(filepath.Join(o.Out, ReportFile), s); err != nil {
		return s, err
	}
	return s, writeJSON(filepath.Join(o.Out, "summary.json"), s)
}

// Files a suite run writes into its output directory.
const (
	ReportFile = "report.html"
	JUnitFile  = "junit.xml"
)

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// dirName is a directory name for a test, unique within the suite.
func dirName(name string, used map[string]bool) string {
	base := strings.Trim(unsafeName.ReplaceAllString(name, "-"), "-.")
	if base == "" {
		base = "test"
	}
	d := base
	for i := 2; used[d]; i++ {
		d = fmt.Sprintf("%s-%d", base, i)
	}
	used[d] = true
	return d
}

func (o Options) progress(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", args...)
	}
}

// runTest runs one test in o.Out/dir and reports how it went.
func runTest(ctx context.Context, t Test, dir string, o Options, br *shared) TestResult {
	r := TestResult{Name: t.Task.Name, File: t.Path, Dir: dir, Started: time.Now()}
	o.progress("=== RUN   %s", r.Name)
	fail := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		r.Failure = strings.TrimSpace(r.Failure + "\n" + msg)
	}
	abs := filepath.Join(o.Out, dir)
	if err := os.RemoveAll(abs); err != nil {
		fail("clean %s: %v", abs, err)
	} else if err := execute(ctx, t, abs, o, br, &r, fail); err != nil {
		fail("%v", err)
	}
	r.OK = r.Failure == ""
	r.Elapsed = time.Since(r.Started)
	if r.OK {
		o.progress("--- PASS: %s (%s)", r.Name, r.Elapsed.Round(10*time.Millisecond))
	} else {
		o.progress("--- FAIL: %s (%s)", r.Name, r.Elapsed.Round(10*time.Millisecond))
		for _, l := range strings.Split(r.Failure, "\n") {
			o.progress("    %s", l)
		}
	}
	if err := writeJSON(filepath.Join(abs, "result.json"), r); err != nil && r.Failure == "" {
		r.OK, r.Failure = false, "write result.json: "+err.Error()
	}
	return r
}

// execute runs t in dir: display, model, loop, checks, report. Failures of
// the test go to fail; an error means the test could not run.
func execute(ctx context.Context, t Test, dir string, o Options, br *shared, r *TestResult, fail func(string, ...any)) error {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithTimeout(ctx, t.Task.Timeout)
	defer cancel()

	task := t.Task
	startURL, stopDemo, err := serveDemo(ctx, t, &task)
	if err != nil {
		return err
	}
	defer stopDemo()

	image := imageSize(t)
	model, player, err := wiring.NewTaskModel(task.Model, image, o.Getenv, log)
	if err != nil {
		return err
	}
	var rp *replay.Model
	if o.Replay {
		if rp, image, err = newReplay(t, dir, model); err != nil {
			return err
		}
		model = rp
	}

	tw, err := trace.Create(dir)
	if err != nil {
		return err
	}
	closeTrace := sync.OnceValue(tw.Close)
	defer closeTrace()
	// Egress decisions, restarts and approvals come from other goroutines
	// than the loop's; the trace writer is safe for that.
	note := func(text string) { tw.Write(trace.Event{Type: trace.TypeNote, Text: text}) }
	sur, err := openDisplay(ctx, t.VNC, task, startURL, o, br, note, log)
	if err != nil {
		return errors.Join(err, closeTrace())
	}
	// Closed once the checks ran, or when the test could not run.
	closeDisp := sync.OnceFunc(func() {
		var err error
		if r.Sandbox, err = sur.Close(context.WithoutCancel(ctx)); err != nil {
			log.Warn("close display", "err", err)
		}
	})
	defer closeDisp()
	disp := sur.Display
	eval, _ := disp.(Evaluator) // nil: a desktop, which has no DOM
	if rp == nil && task.Model.Provider == "script" {
		if targets, _ := scriptTargets(task.Model.Turns); targets { // checked when the file was read
			model = &targeting{model: model, eval: eval, note: func(s string) { o.progress("    %s", s) }}
		}
	}

	out, err := runLoop(ctx, tw, task, model, sur, image, o, log)
	if cerr := closeTrace(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	r.Outcome = out
	if !out.OK() {
		fail("the run ended with %s: %s", out.Stop, out.Err)
	}
	if player != nil {
		if err := player.Err(); err != nil {
			fail("cassette: %v", err)
		}
	}

	ck := &checker{test: t, disp: disp, eval: eval, final: out.Text, out: dir, update: o.UpdateBaselines}
	runChecks(ctx, ck, o, r, fail)
	closeDisp()
	if rp != nil {
		r.Replay = replayResult(rp, o, log)
	}
	record(t, dir, o, rp, r, fail)
	writeArtifacts(dir, r, fail)
	return nil
}

// serveDemo starts the demo app when a browser test's start URL is a demo:
// URL, and points the URL and task's allowed hosts at the app. It returns
// the URL to open and a func that stops the app, which the caller must call
// when the test is done.
func serveDemo(ctx context.Context, t Test, task *runner.Task) (string, func(), error) {
	path, ok := strings.CutPrefix(task.StartURL, runner.DemoScheme)
	if !ok || t.VNC != nil {
		return task.StartURL, func() {}, nil
	}
	base, stop, err := demo.NewServer().Serve(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("start the demo app: %w", err)
	}
	task.Policy.Hosts = runner.DemoHosts(task.Policy.Hosts, base)
	return base + "/" + strings.TrimPrefix(path, "/"), stop, nil
}

// imageSize is the size of the screenshots sent to t's model: the task's
// image size, else the model's preferred size for the display; a VNC test
// with no image width gets the desktop's own size (the zero Size).
func imageSize(t Test) screen.Size {
	task := t.Task
	image := screen.Size{W: task.Image.Width, H: task.Image.Height}
	if image.Empty() {
		image = wiring.ImageSize(task.Model, screen.Size{W: task.Display.Width, H: task.Display.Height})
	}
	if t.VNC != nil && task.Image.Width == 0 {
		image = screen.Size{} // the desktop's own size
	}
	return image
}

// newReplay loads t's recording and returns a model that replays it, and
// the size of the recorded screenshots. Unless t's model is a script, model
// takes over where the screen changed; diffs are written under dir/diffs.
func newReplay(t Test, dir string, model harness.Model) (*replay.Model, screen.Size, error) {
	rec, err := replay.Load(t.Replay)
	if err != nil {
		return nil, screen.Size{}, fmt.Errorf("no recording to replay (run with --record-replay first): %w", err)
	}
	var heal harness.Model
	if t.Task.Model.Provider != "script" {
		heal = model // a real model can take over where the screen changed
	}
	rp, err := replay.New(replay.Config{Recording: rec, Dir: t.Replay, Threshold: t.Threshold, Heal: heal,
		DiffDir: filepath.Join(dir, "diffs")})
	if err != nil {
		return nil, screen.Size{}, err
	}
	return rp, rec.Image, nil
}

// runLoop runs the harness loop for task with model on sur's display and
// approver, tracing into tw and reporting each event to o's progress.
func runLoop(ctx context.Context, tw *trace.Writer, task runner.Task, model harness.Model, sur *runner.Surroundings, image screen.Size, o Options, log *slog.Logger) (harness.Outcome, error) {
	return harness.Run(ctx, harness.Config{
		Model:     model,
		Display:   sur.Display,
		Approver:  sur.Approver,
		Task:      task.Task,
		Policy:    task.Policy,
		Capture:   screen.CaptureOptions{Size: image, Format: task.Image.Format, Quality: task.Image.Quality},
		MaxSteps:  task.MaxSteps,
		Trace:     tw,
		ModelName: strings.Trim(task.Model.Provider+"/"+task.Model.Name, "/"),
		Logger:    log,
		OnEvent:   func(e trace.Event) { progressEvent(o, e) },
	})
}

// runChecks runs the test's checks on the end state, reports each to o's
// progress and adds it to r; a failed check fails the test.
func runChecks(ctx context.Context, ck *checker, o Options, r *TestResult, fail func(string, ...any)) {
	for _, c := range ck.run(ctx) {
		status := "ok  "
		if !c.OK {
			status = "FAIL"
			fail("check %s: %s", c.Name, c.Detail)
		}
		o.progress("    check %s %s", status, c.Name)
		c.Actual, c.Diff = rel(r.Dir, c.Actual), rel(r.Dir, c.Diff)
		r.Checks = append(r.Checks, c)
	}
}

// replayResult says how rp's replay went: its divergences, with their diff
// images captioned and their paths relative to the suite's directory, each
// reported to o's progress.
func replayResult(rp *replay.Model, o Options, log *slog.Logger) *ReplayResult {
	res := &ReplayResult{Replayed: true, HealedAt: rp.HealedAt}
	for _, d := range rp.Divergences {
		if d.Diff != "" {
			if err := captionFile(d.Diff, replayCaptions); err != nil {
				log.Warn("caption a replay's diff", "file", d.Diff, "err", err)
			}
			if p, err := filepath.Rel(o.Out, d.Diff); err == nil {
				d.Diff = filepath.ToSlash(p)
			}
		}
		res.Divergences = append(res.Divergences, d)
		o.progress("    replay diverged at step %d: %s", d.Step, d.Err)
	}
	return res
}

// record saves a passing run in dir as a recording: a healed replay next to
// its trace, and in place of t's recording with o.Record; a model's run (not
// a replay) as t's recording with o.Record. Failing to save fails the test.
func record(t Test, dir string, o Options, rp *replay.Model, r *TestResult, fail func(string, ...any)) {
	if r.Failure != "" {
		return
	}
	switch {
	case rp != nil && rp.HealedAt > 0:
		// The healed path is the new recording: next to the trace always,
		// and in place of the old one when recording.
		to := filepath.Join(dir, "replay")
		if o.Record {
			to = t.Replay
		}
		if _, err := replay.Record(dir, to); err != nil {
			fail("record the healed run: %v", err)
		} else {
			r.Replay.Recorded = to
		}
	case o.Record && rp == nil:
		if _, err := replay.Record(dir, t.Replay); err != nil {
			fail("record the run: %v", err)
		} else {
			r.Replay = &ReplayResult{Recorded: t.Replay}
			o.progress("    recorded %s", t.Replay)
		}
	}
}

// writeArtifacts writes the trace's report, the screenshot timeline and the
// animated replay of the test traced in dir into r; failing to write one
// fails the test.
func writeArtifacts(dir string, r *TestResult, fail func(string, ...any)) {
	if rep, err := trace.WriteReport(dir); err != nil {
		fail("write the trace report: %v", err)
	} else {
		r.Report = rel(r.Dir, filepath.Base(rep))
	}
	evs, err := trace.Read(dir)
	if err != nil {
		fail("read the trace: %v", err)
		return
	}
	r.Shots = timeline(evs, r.Dir)
	if err := writeGIF(filepath.Join(dir, "replay.gif"), dir, evs); err != nil {
		fail("write the animated replay: %v", err)
	} else {
		r.GIF = rel(r.Dir, "replay.gif")
	}
}

// rel joins a test directory and a path inside it, with slashes; "" stays "".
func rel(dir, p string) string {
	if p == "" {
		return ""
	}
	return dir + "/" + p
}

// openDisplay opens a test's display and approver as `spotter run` opens a
// task's (runner.Open): the desktop v names, over VNC, or else a chromium
// display at startURL, as a browser context of the suite's browser unless
// it runs in a containerd sandbox. task's policy hosts are the demo app's
// for a demo test.
func openDisplay(ctx context.Context, v *VNCSpec, task runner.Task, startURL string, o Options, br *shared, note func(string), log *slog.Logger) (*runner.Surroundings, error) {
	ro := runner.Options{Browser: o.Browser, Getenv: o.Getenv, Sandboxes: o.Sandboxes, MemoryMiB: o.MemoryMiB,
		Approvals: o.Approvals}
	if v != nil {
		task.Display = wiring.DisplaySpec{Backend: wiring.VNC, Width: task.Display.Width, Height: task.Display.Height,
			Address: v.Addr, PasswordEnv: v.PasswordEnv}
		if v.Network == "unix" {
			task.Display.Address = "unix:" + v.Addr
		}
		if v.ownSize {
			size, err := wiring.VNCScreenSize(ctx, task.Display, o.Getenv)
			if err != nil {
				return nil, err
			}
			task.Display.Width, task.Display.Height = size.W, size.H
		}
		startURL = ""
	} else if o.Sandboxes == nil || o.Sandboxes.Backend() == isolate.Local {
		var err error
		if ro.Shared, err = br.get(ctx, log); err != nil {
			return nil, err
		}
	}
	return runner.Open(ctx, task, startURL, task.Policy, ro, note, log)
}

// shared is the suite's browser, launched at the first test that needs it.
type shared struct {
	exe  string
	pool *cdp.Pool
}

func (s *shared) get(ctx context.Context, log *slog.Logger) (*cdp.Pool, error) {
	if s.pool == nil {
		p, err := cdp.LaunchPool(ctx, cdp.Config{Exec: s.exe, Logger: log}, 1)
		if err != nil {
			return nil, err
		}
		s.pool = p
	}
	return s.pool, nil
}

func (s *shared) close() {
	if s.pool != nil {
		s.pool.Close(context.Background())
	}
}

// progressEvent prints a line for each action the loop performs.
func progressEvent(o Options, e trace.Event) {
	switch e.Type {
	case trace.TypeAction:
		line := fmt.Sprintf("    step %d: %s", e.Step, e.Action.Kind)
		if e.Action.HasAt {
			line += fmt.Sprintf(" at (%g,%g)", e.Action.At.X, e.Action.At.Y)
		}
		if e.Error != "" {
			line += ": " + e.Error
		}
		o.progress("%s", line)
	case trace.TypeModelTurn:
		if e.Text != "" {
			o.progress("    step %d: %s", e.Step, clip(strings.Join(strings.Fields(e.Text), " "), 100))
		}
	}
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
