// Package batch runs many tasks from a jobs file, a bounded number at a
// time, into one batch directory, and can be interrupted and resumed.
//
// A jobs file holds one task per line (see Parse). Run gives each job its
// own directory, DIR/<id>, where the runner writes the trace, report.html
// and result.json. A job is finished when its result.json is complete; the
// runner writes it last, by renaming a temporary file, so a job killed
// mid-run has none. Run skips finished jobs and reuses their results, so
// running the same jobs into the same directory again picks up where a
// killed or interrupted batch stopped; an unfinished job's partial
// directory is moved to DIR/.partial/<id> before it runs again.
//
// At the end Run writes DIR/summary.json (Summary) and DIR/junit.xml, one
// testsuite with a testcase per job. A batch that took several runs to
// finish reports the time of all of them: each run is recorded as an
// Attempt in DIR/.attempts.json when it starts, and junit.xml's time is
// their sum (see Summary.TotalElapsed). A shard (see Shard) writes
// summary.I-of-N.json and junit.I-of-N.xml instead, so shards on several
// machines can share one directory.
package batch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/internal/runner"
	"github.com/spotter-harness/spotter/internal/wiring"
)

// ErrLocked marks a batch directory (or shard of one) that another
// process is running right now.
var ErrLocked = errors.New("batch is already running")

// File names in the batch directory.
const (
	ResultFile   = "result.json"    // in DIR/<id>: written by the runner, last
	PartialDir   = ".partial"       // unfinished attempts, moved aside
	AttemptsFile = ".attempts.json" // every run of the batch; a shard's is .attempts.I-of-N.json
)

// Isolation says where a job runs.
type Isolation string

// Isolations. None runs each job's browser as a child process of spotter,
// with no egress proxy; Local does the same behind isolate/local's egress
// proxy when Config.Sandboxes is set; Containerd runs each job in a
// containerd sandbox of its own, which needs Config.Sandboxes (or a
// Config.Runner).
const (
	None       Isolation = "none"
	Local      Isolation = "local"
	Containerd Isolation = "containerd"
)

// RunFunc runs one job: the shape of runner.Run. It writes the job's
// trace, report and result.json into o.Out, and returns an error only when
// the job could not run at all.
type RunFunc func(ctx context.Context, t runner.Task, o runner.Options) (runner.Result, error)

// Config is how a batch runs. Zero values are the documented defaults.
type Config struct {
	Out      string // required: the batch directory; created if missing
	Parallel int    // jobs at a time; default 1
	Shard    Shard  // which part of the jobs to run; zero: all of them

	// Isolation is recorded in the summary; Containerd requires
	// Sandboxes or Runner. Default Local.
	Isolation Isolation
	// Sandboxes, if not nil, starts a sandbox for each job (passed to the
	// runner as runner.Options.Sandboxes); its backend must be Isolation.
	// Nil with Local isolation runs the browsers on the host without a
	// proxy, as None does.
	Sandboxes *wiring.Sandboxes
	// Runner runs one job. Nil means runner.Run in this process, which is
	// only allowed with Local isolation. This is the hook for sandboxes:
	// cmd/spotter sets it to a containerd-backed runner for Containerd.
	Runner RunFunc

	Browser string              // passed to the runner: Chromium executable
	Getenv  func(string) string // passed to the runner: provider keys; nil: none
	// Approvals is passed to the runner (runner.Options.Approvals): the
	// rules that decide which of a job's actions need a human. A batch
	// has nobody to ask, so its Asker should be nil: a flagged action is
	// refused with its rule's reason. Nil means no approver.
	Approvals *runner.ApprovalConfig
	Logger    *slog.Logger // nil: slog.Default(); each job's is narrowed with its id

	// Progress receives one JSON line per job start, skip and finish and
	// a summary line; with Bar, a progress bar for a terminal instead.
	// Nil: no progress.
	Progress io.Writer
	Bar      bool
	Width    int // the terminal's width for the bar; default 80

	Name     string // the batch's name in junit.xml; default the base name of Out
	Hostname string // for junit.xml; default "localhost"
}

// Status is how a job ended.
type Status string

// Statuses.
const (
	Passed  Status = "passed"  // the model ended the run and every check held
	Failed  Status = "failed"  // the job ran, but did not succeed
	Error   Status = "error"   // the job could not run (no browser, bad cassette, ...)
	Skipped Status = "skipped" // the job did not run: the batch was interrupted first
)

// JobResult is one job's line in the summary. Paths are relative to the
// batch directory.
type JobResult struct {
	ID   string `json:"id"`
	Line int    `json:"line"`
	Task string `json:"task"`
	// Display is the job's display backend (chromium, vnc, desktop or
	// playwright).
	Display string             `json:"display,omitempty"`
	Status  Status             `json:"status"`
	Reused  bool               `json:"reused,omitempty"` // finished by an earlier run, not run again
	Stop    harness.StopReason `json:"stop,omitempty"`
	Steps   int                `json:"steps,omitempty"`
	Error   string             `json:"error,omitempty"` // why it failed, erred or was skipped
	// Started is when the job started; Duration is its wall time (for a
	// reused job, its run's).
	Started  time.Time     `json:"started,omitzero"`
	Duration time.Duration `json:"duration_ns"`
	Dir      string        `json:"dir"`
	Result   string        `json:"result,omitempty"`
	Report   string        `json:"report,omitempty"`
}

// Summary is what summary.json holds.
type Summary struct {
	Name      string        `json:"name"`
	Shard     string        `json:"shard,omitempty"` // "I/N"
	Isolation Isolation     `json:"isolation"`
	Parallel  int           `json:"parallel"`
	Started   time.Time     `json:"started"`
	Elapsed   time.Duration `json:"elapsed_ns"` // this run's

	// Attempts are the runs of the batch into its directory, oldest
	// first, this one last. TotalElapsed is their sum: the batch's time
	// over every run it took, which junit.xml reports.
	Attempts     []Attempt     `json:"attempts,omitempty"`
	TotalElapsed time.Duration `json:"total_elapsed_ns"`

	Total   int `json:"total"`
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Errors  int `json:"errors"`
	Skipped int `json:"skipped"` // not run: the batch was interrupted
	// Reused counts jobs an earlier run finished; they are also counted
	// as passed or failed.
	Reused int `json:"reused"`
	// JobTime is the sum of the durations of the jobs run this time.
	JobTime time.Duration `json:"job_time_ns"`
	// Slowest is the longest a job run this time took.
	Slowest time.Duration `json:"slowest_ns"`

	Jobs []JobResult `json:"jobs"`
}

// Attempt is one run of a batch (or of a shard of one).
type Attempt struct {
	Started time.Time     `json:"started"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// Estimated marks a run that did not get to record its end (it was
	// killed): its time is from its start to the end of the last job it
	// finished.
	Estimated bool `json:"estimated,omitempty"`
}

// OK reports whether every job passed.
func (s Summary) OK() bool { return s.Passed == s.Total }

// Files names the summary and JUnit files of a shard (or of the whole
// batch) in dir.
func Files(dir string, s Shard) (summary, junit string) {
	return filepath.Join(dir, "summary"+s.suffix()+".json"), filepath.Join(dir, "junit"+s.suffix()+".xml")
}

// Run runs cfg.Shard's part of jobs into cfg.Out, cfg.Parallel at a time,
// skipping jobs a previous run finished, then writes the summary and
// junit.xml and returns the summary. It blocks until every job it started
// has returned; its worker goroutines have exited when it returns.
//
// A failed job is no error: it is in the Summary. Run returns an error when
// the batch cannot run (a bad Config, jobs with bad or duplicate ids:
// ErrJobs, a directory it cannot write, another process running the same
// batch: ErrLocked) or its files cannot be
// written. When ctx is done, Run starts no more jobs, lets the running ones
// end (the runner cancels them), writes the files with the unfinished jobs
// as skipped, and returns the context's cause; a job cut short this way
// leaves no result.json, so running the batch again runs it.
func Run(ctx context.Context, jobs []Job, cfg Config) (Summary, error) {
	b, err := newBatch(cfg)
	if err != nil {
		return Summary{}, err
	}
	seen := map[string]bool{}
	for _, j := range jobs {
		if err := checkID(j.ID); err != nil {
			return Summary{}, err
		}
		if seen[j.ID] {
			return Summary{}, fmt.Errorf("%w: two jobs with id %q", ErrJobs, j.ID)
		}
		seen[j.ID] = true
	}
	jobs = cfg.Shard.Select(jobs)
	if err := os.MkdirAll(b.out, 0o755); err != nil {
		return Summary{}, fmt.Errorf("create batch directory: %w", err)
	}
	unlock, err := lock(filepath.Join(b.out, ".lock"+cfg.Shard.suffix()))
	if err != nil {
		return Summary{}, err
	}
	defer unlock()

	sum := Summary{
		Name: b.name, Shard: cfg.Shard.String(), Isolation: b.isolation, Parallel: b.parallel,
		Started: time.Now(), Total: len(jobs), Jobs: make([]JobResult, len(jobs)),
	}
	attemptsPath := filepath.Join(b.out, strings.TrimSuffix(AttemptsFile, ".json")+cfg.Shard.suffix()+".json")
	attempts, err := beginAttempt(attemptsPath, sum.Started)
	if err != nil {
		return Summary{}, err
	}
	b.progress.begin(len(jobs), sum.Started)
	var todo []int
	for i, j := range jobs {
		if r, ok := b.finished(j); ok {
			sum.Jobs[i] = r
			b.progress.skip(r)
			continue
		}
		if err := b.setAside(j.ID); err != nil {
			b.progress.end(sum)
			return Summary{}, err
		}
		sum.Jobs[i] = JobResult{ID: j.ID, Line: j.Line, Task: j.Task.Name, Status: Skipped,
			Error: "not run: the batch was interrupted", Dir: j.ID}
		todo = append(todo, i)
	}

	next := make(chan int)
	var wg sync.WaitGroup
	for range min(b.parallel, len(todo)) {
		wg.Go(func() {
			for i := range next {
				if r, ok := b.run(ctx, jobs[i]); ok {
					sum.Jobs[i] = r // each index is written by one goroutine, read after Wait
				}
			}
		})
	}
feed:
	for _, i := range todo {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()

	sum.Elapsed = time.Since(sum.Started)
	sum.count()
	attempts[len(attempts)-1].Elapsed = sum.Elapsed
	if err := writeAttempts(attemptsPath, attempts); err != nil {
		b.progress.end(sum)
		return sum, fmt.Errorf("record this run's time: %w", err)
	}
	sum.Attempts = estimate(attempts, sum.Jobs)
	for _, a := range sum.Attempts {
		sum.TotalElapsed += a.Elapsed
	}
	b.progress.end(sum)
	summaryPath, junitPath := Files(b.out, cfg.Shard)
	if err := writeFileAtomic(summaryPath, func(w io.Writer) error {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(sum)
	}); err != nil {
		return sum, fmt.Errorf("write summary: %w", err)
	}
	if err := writeFileAtomic(junitPath, func(w io.Writer) error {
		return writeJUnit(w, sum, b.abs, b.hostname)
	}); err != nil {
		return sum, fmt.Errorf("write junit: %w", err)
	}
	if ctx.Err() != nil && sum.Skipped > 0 {
		return sum, fmt.Errorf("batch interrupted with %d of %d jobs unfinished: %w", sum.Skipped, sum.Total, context.Cause(ctx))
	}
	return sum, nil
}

// batch is one Run's settled configuration.
type batch struct {
	cfg       Config
	out, abs  string // the batch directory as given, and absolute
	name      string
	hostname  string
	parallel  int
	isolation Isolation
	runJob    RunFunc
	log       *slog.Logger
	progress  *progress
}

func newBatch(cfg Config) (*batch, error) {
	if cfg.Out == "" {
		return nil, errors.New("batch: Config.Out is required")
	}
	abs, err := filepath.Abs(cfg.Out)
	if err != nil {
		return nil, fmt.Errorf("batch directory: %w", err)
	}
	b := &batch{
		cfg: cfg, out: cfg.Out, abs: abs,
		name:      cmp.Or(cfg.Name, filepath.Base(abs)),
		hostname:  cmp.Or(cfg.Hostname, "localhost"),
		parallel:  cmp.Or(cfg.Parallel, 1),
		isolation: cmp.Or(cfg.Isolation, Local),
		runJob:    cfg.Runner,
		log:       cmp.Or(cfg.Logger, slog.Default()),
	}
	if b.parallel < 1 || b.parallel > 256 {
		return nil, fmt.Errorf("batch: parallel %d is outside 1..256", cfg.Parallel)
	}
	switch b.isolation {
	case None:
		if cfg.Sandboxes != nil {
			return nil, errors.New("batch: isolation none takes no Sandboxes")
		}
	case Local, Containerd:
		if cfg.Sandboxes != nil && string(cfg.Sandboxes.Backend()) != string(b.isolation) {
			return nil, fmt.Errorf("batch: isolation %s with sandboxes of %s", b.isolation, cfg.Sandboxes.Backend())
		}
		if b.isolation == Containerd && b.runJob == nil && cfg.Sandboxes == nil {
			return nil, errors.New("batch: containerd isolation needs Sandboxes or a Runner")
		}
	default:
		return nil, fmt.Errorf("batch: unknown isolation %q (want none, local or containerd)", b.isolation)
	}
	if b.runJob == nil {
		b.runJob = runner.Run
	}
	b.progress = newProgress(cfg.Progress, cfg.Bar, cmp.Or(cfg.Width, 80))
	return b, nil
}

// finished returns the recorded result of a job an earlier run finished.
func (b *batch) finished(j Job) (JobResult, bool) {
	path := filepath.Join(b.out, j.ID, ResultFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		return JobResult{}, false
	}
	var res runner.Result
	if err := json.Unmarshal(raw, &res); err != nil || res.Task == "" || res.Started.IsZero() || res.Outcome.Stop == "" {
		return JobResult{}, false // not a result the runner finished writing
	}
	r := b.result(j, res)
	// The job's wall time, browser start included, as for a job run now:
	// from its start to when its result was written.
	r.Reused, r.Started, r.Duration = true, res.Started, res.Outcome.Elapsed
	if fi, err := os.Stat(path); err == nil && fi.ModTime().After(res.Started) {
		r.Duration = fi.ModTime().Sub(res.Started)
	}
	return r, true
}

// setAside moves an unfinished attempt's directory to DIR/.partial/<id>,
// replacing an older one there, so the job starts afresh.
func (b *batch) setAside(id string) error {
	dir := filepath.Join(b.out, id)
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	aside := filepath.Join(b.out, PartialDir, id)
	if err := os.MkdirAll(filepath.Dir(aside), 0o755); err != nil {
		return fmt.Errorf("set aside job %s: %w", id, err)
	}
	if err := os.RemoveAll(aside); err != nil {
		return fmt.Errorf("set aside job %s: %w", id, err)
	}
	if err := os.Rename(dir, aside); err != nil {
		return fmt.Errorf("set aside job %s: %w", id, err)
	}
	b.log.Info("moved an unfinished attempt aside", logKeyJob, id, "to", aside)
	return nil
}

const logKeyJob = "job"

// run runs one job. It reports false, leaving the job skipped, when ctx
// was done before the job started.
func (b *batch) run(ctx context.Context, j Job) (JobResult, bool) {
	if ctx.Err() != nil {
		return JobResult{}, false
	}
	b.progress.start(j)
	dir := filepath.Join(b.out, j.ID)
	start := time.Now()
	res, err := b.runJob(ctx, j.Task, runner.Options{
		Out: dir, Browser: b.cfg.Browser, Getenv: b.cfg.Getenv, Logger: b.log.With(logKeyJob, j.ID),
		Sandboxes: b.cfg.Sandboxes, Approvals: b.cfg.Approvals,
	})
	elapsed := time.Since(start)
	var r JobResult
	switch {
	case ctx.Err() != nil && (err != nil || b.result(j, res).Status != Passed):
		// Cut short by the batch's end, not finished: make sure a later
		// run runs it again.
		if rerr := os.Rename(filepath.Join(dir, ResultFile), filepath.Join(dir, "result.interrupted.json")); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			b.log.Error("set aside an interrupted job's result", logKeyJob, j.ID, "err", rerr)
		}
		r = JobResult{ID: j.ID, Line: j.Line, Task: j.Task.Name, Status: Skipped,
			Error: "interrupted: " + context.Cause(ctx).Error(), Dir: j.ID}
	case err != nil:
		r = JobResult{ID: j.ID, Line: j.Line, Task: j.Task.Name, Status: Error, Error: err.Error(), Dir: j.ID}
	default:
		r = b.result(j, res)
	}
	r.Started, r.Duration = start, elapsed
	b.progress.finish(r)
	return r, true
}

// result turns a runner result into a job result.
func (b *batch) result(j Job, res runner.Result) JobResult {
	o := res.Outcome
	r := JobResult{ID: j.ID, Line: j.Line, Task: cmp.Or(res.Task, j.Task.Name), Display: j.Task.Display.Backend, Status: Passed,
		Stop: o.Stop, Steps: o.Steps, Dir: j.ID, Result: filepath.Join(j.ID, ResultFile)}
	if res.Report != "" {
		r.Report = filepath.Join(j.ID, filepath.Base(res.Report))
	}
	switch {
	case !res.OK:
		r.Status, r.Error = Failed, cmp.Or(o.Err, fmt.Sprintf("the run stopped with %s", o.Stop))
	case res.Demo != nil && len(res.Demo.Missing) > 0:
		r.Status, r.Error = Failed, fmt.Sprintf("the demo app's stages %s were not completed", strings.Join(res.Demo.Missing, ", "))
	}
	return r
}

// count fills in the totals from the jobs.
func (s *Summary) count() {
	s.Passed, s.Failed, s.Errors, s.Skipped, s.Reused, s.JobTime, s.Slowest = 0, 0, 0, 0, 0, 0, 0
	for _, j := range s.Jobs {
		switch j.Status {
		case Passed:
			s.Passed++
		case Failed:
			s.Failed++
		case Error:
			s.Errors++
		case Skipped:
			s.Skipped++
		}
		if j.Reused {
			s.Reused++
		} else if j.Status != Skipped {
			s.JobTime += j.Duration
			s.Slowest = max(s.Slowest, j.Duration)
		}
	}
}

// beginAttempt records, in the attempts file at path, that a run of the
// batch starts now, and returns every run recorded there, this one last.
// A run records its end when it finishes (writeAttempts); one that was
// killed leaves its Elapsed zero.
func beginAttempt(path string, now time.Time) ([]Attempt, error) {
	var attempts []Attempt
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("read the batch's earlier runs: %w", err)
	default:
		if err := json.Unmarshal(raw, &attempts); err != nil {
			// A torn file (a crash in the middle of the rename cannot
			// leave one, a hand edit can): the earlier runs' times are
			// estimated from their jobs instead.
			attempts = nil
		}
	}
	attempts = append(attempts, Attempt{Started: now})
	if err := writeAttempts(path, attempts); err != nil {
		return nil, fmt.Errorf("record this run: %w", err)
	}
	return attempts, nil
}

func writeAttempts(path string, attempts []Attempt) error {
	return writeFileAtomic(path, func(w io.Writer) error { return json.NewEncoder(w).Encode(attempts) })
}

// estimate fills in the runs that did not record their end, from the jobs
// they finished (a reused job's start and duration), and adds a run for
// jobs finished before the first recorded one (a batch directory older than
// the attempts file). The last attempt is the current run.
func estimate(attempts []Attempt, jobs []JobResult) []Attempt {
	out := slices.Clone(attempts)
	var before Attempt // jobs before the first recorded run
	var beforeEnd time.Time
	for _, j := range jobs {
		if !j.Reused || j.Started.IsZero() {
			continue
		}
		end := j.Started.Add(j.Duration)
		i := sort.Search(len(out), func(i int) bool { return out[i].Started.After(j.Started) }) - 1
		switch {
		case i < 0:
			if before.Started.IsZero() || j.Started.Before(before.Started) {
				before.Started = j.Started
			}
			if end.After(beforeEnd) {
				beforeEnd = end
			}
		case i < len(out)-1 && (out[i].Elapsed == 0 || out[i].Estimated):
			if d := end.Sub(out[i].Started); d > out[i].Elapsed {
				out[i].Elapsed, out[i].Estimated = d, true
			}
		}
	}
	if !before.Started.IsZero() {
		before.Elapsed, before.Estimated = beforeEnd.Sub(before.Started), true
		out = append([]Attempt{before}, out...)
	}
	return out
}

// writeFileAtomic writes path through a temporary file and a rename, so a
// reader never sees half of it.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	err = errors.Join(f.Chmod(0o644), write(f))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return errors.Join(err, os.Remove(f.Name()))
	}
	return nil
}
