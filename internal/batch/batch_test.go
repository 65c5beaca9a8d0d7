package batch_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/internal/batch"
	"github.com/spotter-harness/spotter/internal/runner"
)

// fake is a batch.RunFunc that does what a job's task text says, after
// sleeping the task's MaxSteps in seconds (inside synctest, no real time):
//
//	pass     the model ended the run
//	fail     the step cap was reached
//	missing  the demo app's stages were not all done
//	error    the job could not run at all
//	block    the job runs until ctx is done, as a real run does
//	weird    the model refused, with an error full of XML's special characters
//
// Like the runner, it writes a trace file first and result.json last,
// through a rename.
type fake struct {
	mu      sync.Mutex
	ran     []string // job directories, in the order jobs started
	running atomic.Int32
	most    atomic.Int32 // the most jobs that ran at once
	opts    []runner.Options
}

func (f *fake) run(ctx context.Context, t runner.Task, o runner.Options) (runner.Result, error) {
	f.mu.Lock()
	f.ran = append(f.ran, filepath.Base(o.Out))
	f.opts = append(f.opts, o)
	f.mu.Unlock()
	n := f.running.Add(1)
	defer f.running.Add(-1)
	for {
		m := f.most.Load()
		if n <= m || f.most.CompareAndSwap(m, n) {
			break
		}
	}
	if t.Task == "error" {
		return runner.Result{}, errors.New("launch chromium: no such file")
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return runner.Result{}, err
	}
	if err := os.WriteFile(filepath.Join(o.Out, "events.jsonl"), []byte("{}\n"), 0o644); err != nil {
		return runner.Result{}, err
	}
	res := runner.Result{Task: t.Name, Started: time.Now(), Trace: o.Out, Report: filepath.Join(o.Out, "report.html")}
	select {
	case <-time.After(time.Duration(t.MaxSteps) * time.Second):
	case <-ctx.Done():
	}
	res.Outcome = harness.Outcome{Stop: harness.StopEndTurn, Steps: 2, Elapsed: time.Duration(t.MaxSteps) * time.Second}
	switch {
	case t.Task == "block" || ctx.Err() != nil:
		<-ctx.Done()
		res.Outcome = harness.Outcome{Stop: harness.StopError, Err: context.Cause(ctx).Error()}
	case t.Task == "fail":
		res.Outcome = harness.Outcome{Stop: harness.StopMaxSteps, Steps: 3, Err: "step cap of 3 reached"}
	case t.Task == "weird":
		res.Outcome = harness.Outcome{Stop: harness.StopRefusal, Err: weirdError}
	case t.Task == "missing":
		res.Demo = &runner.DemoState{Missing: []string{"seat", "tray"}}
	}
	res.OK = res.Outcome.OK()
	b, err := json.Marshal(res)
	if err != nil {
		return res, err
	}
	tmp := filepath.Join(o.Out, "result.json.tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return res, err
	}
	// The file's time is the clock's, which is fake inside synctest.
	if err := os.Chtimes(tmp, time.Now(), time.Now()); err != nil {
		return res, err
	}
	return res, os.Rename(tmp, filepath.Join(o.Out, batch.ResultFile))
}

// weirdError has what XML must escape or cannot hold at all.
const weirdError = "refused: <b>&amp;</b> \"quoted\" 'single'\nsecond line\x00\x1b[31m \u00e9\u4e2d"

func (f *fake) started() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ran...)
}

// jobs makes one job per "id:what[:seconds]".
func jobs(specs ...string) []batch.Job {
	var out []batch.Job
	for i, s := range specs {
		parts := strings.Split(s, ":")
		j := batch.Job{ID: parts[0], Line: i + 1, Task: runner.Task{Name: parts[0], Task: parts[1]}}
		if len(parts) > 2 {
			fmt.Sscan(parts[2], &j.Task.MaxSteps)
		}
		out = append(out, j)
	}
	return out
}

func statuses(s batch.Summary) map[string]batch.Status {
	m := map[string]batch.Status{}
	for _, j := range s.Jobs {
		m[j.ID] = j.Status
	}
	return m
}

func TestRunReportsEachJob(t *testing.T) {
	dir := t.TempDir()
	f := &fake{}
	sum, err := batch.Run(t.Context(), jobs("a:pass", "b:fail", "c:error", "d:missing", "e:pass"),
		batch.Config{Out: dir, Parallel: 2, Runner: f.run, Name: "nightly", Browser: "/usr/bin/chromium"})
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	want := map[string]batch.Status{"a": batch.Passed, "b": batch.Failed, "c": batch.Error, "d": batch.Failed, "e": batch.Passed}
	if diff := cmp.Diff(want, statuses(sum)); diff != "" {
		t.Errorf("Run() statuses (-want +got):\n%s", diff)
	}
	counts := [6]int{sum.Total, sum.Passed, sum.Failed, sum.Errors, sum.Skipped, sum.Reused}
	if counts != [6]int{5, 2, 2, 1, 0, 0} {
		t.Errorf("Run() total, passed, failed, errors, skipped, reused = %v, want [5 2 2 1 0 0]", counts)
	}
	if sum.OK() {
		t.Errorf("Summary.OK() = true with failures")
	}
	byID := map[string]batch.JobResult{}
	for _, j := range sum.Jobs {
		byID[j.ID] = j
	}
	if got := byID["b"]; got.Error != "step cap of 3 reached" || got.Stop != harness.StopMaxSteps || got.Steps != 3 {
		t.Errorf("failed job = %+v, want the outcome's error, stop and steps", got)
	}
	if got := byID["c"]; got.Error != "launch chromium: no such file" || got.Result != "" {
		t.Errorf("erred job = %+v, want the runner's error and no result", got)
	}
	if got := byID["d"]; !strings.Contains(got.Error, "seat, tray") {
		t.Errorf("job with missing demo stages = %+v, want an error naming them", got)
	}
	if got := byID["a"]; got.Result != filepath.Join("a", "result.json") || got.Report != filepath.Join("a", "report.html") || got.Dir != "a" {
		t.Errorf("passed job paths = %q %q %q, want relative to the batch directory", got.Dir, got.Result, got.Report)
	}

	// summary.json holds what Run returned.
	summaryPath, junitPath := batch.Files(dir, batch.Shard{})
	raw, err := os.ReadFile(summaryPath)
	if err != nil {
		t.Fatal(err)
	}
	var saved batch.Summary
	if err := json.Unmarshal(raw, &saved); err != nil {
		t.Fatalf("summary.json: %v", err)
	}
	if diff := cmp.Diff(sum, saved); diff != "" {
		t.Errorf("summary.json (-returned +saved):\n%s", diff)
	}
	if saved.Name != "nightly" || saved.Isolation != batch.Local || saved.Parallel != 2 {
		t.Errorf("summary name, isolation, parallel = %q %q %d, want nightly local 2", saved.Name, saved.Isolation, saved.Parallel)
	}
	if _, err := os.Stat(junitPath); err != nil {
		t.Errorf("junit.xml: %v", err)
	}
	// The runner is told where each job goes, and the batch's settings.
	for _, o := range f.opts {
		if filepath.Dir(o.Out) != dir || o.Browser != "/usr/bin/chromium" || o.Logger == nil {
			t.Errorf("runner options = %+v, want Out in %s, the browser and a logger", o, dir)
		}
	}
}

// TestRunResumes runs a batch whose earlier run finished some jobs, left
// one half done, and one with a torn result.json: only the unfinished jobs
// run again, and their partial directories are moved aside.
func TestRunResumes(t *testing.T) {
	dir := t.TempDir()
	f := &fake{}
	cfg := batch.Config{Out: dir, Parallel: 3, Runner: f.run}
	all := jobs("a:pass", "b:fail", "c:pass", "d:pass", "e:error")
	if _, err := batch.Run(t.Context(), all[:2], cfg); err != nil {
		t.Fatal(err)
	}
	// c was killed mid-run: a trace, no result.
	writeFile(t, filepath.Join(dir, "c", "events.jsonl"), "{}\n")
	writeFile(t, filepath.Join(dir, "c", "result.json.tmp"), "{")
	// d's result.json is torn.
	writeFile(t, filepath.Join(dir, "d", "result.json"), `{"task":"d","ok":tr`)

	f2 := &fake{}
	cfg.Runner = f2.run
	sum, err := batch.Run(t.Context(), all, cfg)
	if err != nil {
		t.Fatalf("Run() again error = %v", err)
	}
	got := f2.started()
	if diff := cmp.Diff([]string{"c", "d", "e"}, sortedCopy(got)); diff != "" {
		t.Errorf("jobs run again (-want +got):\n%s", diff)
	}
	want := map[string]batch.Status{"a": batch.Passed, "b": batch.Failed, "c": batch.Passed, "d": batch.Passed, "e": batch.Error}
	if diff := cmp.Diff(want, statuses(sum)); diff != "" {
		t.Errorf("statuses after resume (-want +got):\n%s", diff)
	}
	if sum.Reused != 2 || !sum.Jobs[0].Reused || !sum.Jobs[1].Reused || sum.Jobs[2].Reused {
		t.Errorf("reused = %d (a %t, b %t, c %t), want 2: a and b only", sum.Reused, sum.Jobs[0].Reused, sum.Jobs[1].Reused, sum.Jobs[2].Reused)
	}
	if sum.Jobs[1].Error != "step cap of 3 reached" {
		t.Errorf("reused failure's error = %q, want the recorded one", sum.Jobs[1].Error)
	}
	for _, id := range []string{"c", "d"} {
		if _, err := os.Stat(filepath.Join(dir, batch.PartialDir, id, "events.jsonl")); err != nil && id == "c" {
			t.Errorf("partial attempt of %s was not moved aside: %v", id, err)
		}
		if _, err := os.Stat(filepath.Join(dir, id, "result.json.tmp")); err == nil {
			t.Errorf("job %s's new directory still holds the old attempt's files", id)
		}
	}

	// A third run has nothing left to do but the job that erred.
	f3 := &fake{}
	cfg.Runner = f3.run
	if _, err := batch.Run(t.Context(), all, cfg); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"e"}, f3.started()); diff != "" {
		t.Errorf("jobs run a third time (-want +got):\n%s", diff)
	}
}

func TestRunBoundsParallelism(t *testing.T) {
	for _, n := range []int{1, 2, 3, 8} {
		t.Run(fmt.Sprint("parallel ", n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fake{}
				var specs []string
				for i := range 7 {
					specs = append(specs, fmt.Sprintf("j%d:pass:10", i))
				}
				start := time.Now()
				sum, err := batch.Run(t.Context(), jobs(specs...), batch.Config{Out: t.TempDir(), Parallel: n, Runner: f.run})
				if err != nil {
					t.Fatal(err)
				}
				wantMost := min(n, 7)
				if got := int(f.most.Load()); got != wantMost {
					t.Errorf("Run(7 jobs, Parallel %d) ran %d at once, want %d", n, got, wantMost)
				}
				rounds := (7 + n - 1) / n
				if got, want := time.Since(start), time.Duration(rounds)*10*time.Second; got != want {
					t.Errorf("Run(7 jobs of 10s, Parallel %d) took %v, want %v", n, got, want)
				}
				if sum.JobTime != 70*time.Second || sum.Slowest != 10*time.Second {
					t.Errorf("job time, slowest = %v, %v, want 1m10s, 10s", sum.JobTime, sum.Slowest)
				}
			})
		})
	}
}

// TestRunInterrupted cancels a batch while jobs run: it stops starting
// jobs, waits for the running ones, records the rest as skipped, and
// leaves no result.json for the jobs it cut short, so a rerun runs them.
func TestRunInterrupted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		f := &fake{}
		ctx, cancel := context.WithCancel(t.Context())
		all := jobs("a:pass:1", "b:block", "c:pass:5", "d:pass:1", "e:pass:1", "f:pass:1")
		time.AfterFunc(3*time.Second, cancel)
		sum, err := batch.Run(ctx, all, batch.Config{Out: dir, Parallel: 2, Runner: f.run})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run(cancelled) error = %v, want context.Canceled", err)
		}
		// a (1s) finished, then d (1s) and e (1s) in a's slot; at 3s b and
		// f were running and c had not... : every job that had not ended
		// with a pass is skipped.
		for _, j := range sum.Jobs {
			_, statErr := os.Stat(filepath.Join(dir, j.ID, batch.ResultFile))
			if (j.Status == batch.Passed) != (statErr == nil) {
				t.Errorf("job %s is %s, result.json: %v; want a result.json exactly for passed jobs", j.ID, j.Status, statErr)
			}
			if j.Status != batch.Passed && j.Status != batch.Skipped {
				t.Errorf("job %s is %s, want passed or skipped", j.ID, j.Status)
			}
		}
		if sum.Skipped == 0 || sum.Passed == 0 || sum.Passed+sum.Skipped != 6 {
			t.Errorf("passed %d, skipped %d, want some of each adding to 6", sum.Passed, sum.Skipped)
		}
		if _, err := os.Stat(filepath.Join(dir, "b", "result.interrupted.json")); err != nil {
			t.Errorf("the interrupted job's result was not set aside: %v", err)
		}
		summaryPath, _ := batch.Files(dir, batch.Shard{})
		if _, err := os.Stat(summaryPath); err != nil {
			t.Errorf("an interrupted batch wrote no summary: %v", err)
		}

		// Resume: every job that did not pass runs now, and only those.
		var wantRerun []string
		for _, j := range sum.Jobs {
			if j.Status != batch.Passed {
				wantRerun = append(wantRerun, j.ID)
			}
		}
		f2 := &fake{}
		all[1].Task.Task = "pass"
		sum2, err := batch.Run(t.Context(), all, batch.Config{Out: dir, Parallel: 2, Runner: f2.run})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantRerun, sortedCopy(f2.started())); diff != "" {
			t.Errorf("jobs run on resume (-want +got):\n%s", diff)
		}
		if !sum2.OK() {
			t.Errorf("resumed summary = %+v, want every job passed", sum2)
		}
	})
}

func TestRunRefusesASecondProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		f := &fake{}
		done := make(chan error)
		go func() {
			_, err := batch.Run(t.Context(), jobs("a:pass:10"), batch.Config{Out: dir, Runner: f.run})
			done <- err
		}()
		synctest.Wait() // the first Run holds the lock and runs its job (10s of fake time)
		_, err := batch.Run(t.Context(), jobs("a:pass:10"), batch.Config{Out: dir, Runner: f.run})
		if !errors.Is(err, batch.ErrLocked) {
			t.Errorf("Run() on a running batch error = %v, want ErrLocked", err)
		}
		// Another shard of the same directory may run.
		if _, err := batch.Run(t.Context(), jobs("x:pass", "y:pass"), batch.Config{Out: dir, Runner: f.run, Shard: batch.Shard{Index: 1, Count: 2}}); err != nil {
			t.Errorf("Run(shard 1/2) beside a running batch error = %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("first Run() error = %v", err)
		}
	})
}

func TestRunShardFiles(t *testing.T) {
	dir := t.TempDir()
	f := &fake{}
	all := jobs("a:pass", "b:pass", "c:pass", "d:pass", "e:pass")
	for i := range 2 {
		if _, err := batch.Run(t.Context(), all, batch.Config{Out: dir, Runner: f.run, Shard: batch.Shard{Index: i, Count: 2}}); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"a", "c", "e", "b", "d"}, f.started()); diff != "" {
		t.Errorf("jobs the two shards ran (-want +got):\n%s", diff)
	}
	for i, want := range []int{3, 2} {
		summaryPath, junitPath := batch.Files(dir, batch.Shard{Index: i, Count: 2})
		if wantName := fmt.Sprintf("summary.%d-of-2.json", i); filepath.Base(summaryPath) != wantName {
			t.Errorf("Files(shard %d/2) summary = %s, want %s", i, summaryPath, wantName)
		}
		var s batch.Summary
		raw, err := os.ReadFile(summaryPath)
		if err == nil {
			err = json.Unmarshal(raw, &s)
		}
		if err != nil || s.Total != want || s.Shard != fmt.Sprintf("%d/2", i) {
			t.Errorf("shard %d summary: total %d shard %q (%v), want %d jobs", i, s.Total, s.Shard, err, want)
		}
		if _, err := os.Stat(junitPath); err != nil {
			t.Errorf("shard %d junit: %v", i, err)
		}
	}
}

func TestRunConfigErrors(t *testing.T) {
	dir := t.TempDir()
	f := &fake{}
	tests := []struct {
		name string
		cfg  batch.Config
		want string
	}{
		{"no out", batch.Config{Runner: f.run}, "Out is required"},
		{"parallel", batch.Config{Out: dir, Parallel: 1000, Runner: f.run}, "parallel 1000"},
		{"negative parallel", batch.Config{Out: dir, Parallel: -1, Runner: f.run}, "parallel -1"},
		{"containerd without runner", batch.Config{Out: dir, Isolation: batch.Containerd}, "needs Sandboxes or a Runner"},
		{"unknown isolation", batch.Config{Out: dir, Isolation: "vm", Runner: f.run}, `unknown isolation "vm"`},
		{"duplicate ids", batch.Config{Out: dir, Runner: f.run}, `two jobs with id "a"`},
		{"out is a file", batch.Config{Out: writeFile(t, filepath.Join(dir, "file"), ""), Runner: f.run}, "create batch directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			js := jobs("a:pass")
			if tt.name == "duplicate ids" {
				js = jobs("a:pass", "a:fail")
			}
			_, err := batch.Run(t.Context(), js, tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run(%+v) error = %v, want one containing %q", tt.cfg, err, tt.want)
			}
		})
	}
	if got := f.started(); len(got) != 0 {
		t.Errorf("a misconfigured batch ran jobs %v", got)
	}
}

// TestContainerdUsesTheRunner checks the hook for sandboxes: with
// Containerd isolation every job goes through Config.Runner.
func TestContainerdUsesTheRunner(t *testing.T) {
	f := &fake{}
	sum, err := batch.Run(t.Context(), jobs("a:pass", "b:pass"), batch.Config{Out: t.TempDir(), Isolation: batch.Containerd, Runner: f.run})
	if err != nil || !sum.OK() || sum.Isolation != batch.Containerd || len(f.started()) != 2 {
		t.Errorf("Run(containerd) = %+v, %v; want both jobs run by the Runner", sum, err)
	}
}

func TestProgressJSONLines(t *testing.T) {
	dir := t.TempDir()
	f := &fake{}
	if _, err := batch.Run(t.Context(), jobs("a:pass"), batch.Config{Out: dir, Runner: f.run}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_, err := batch.Run(t.Context(), jobs("a:pass", "b:fail", "c:error"), batch.Config{Out: dir, Runner: f.run, Progress: &buf})
	if err != nil {
		t.Fatal(err)
	}
	type line struct {
		Event, ID string
		Status    batch.Status
		Done      int
	}
	var got []line
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		var e batch.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("progress line %q: %v", sc.Text(), err)
		}
		if e.Time.IsZero() || e.Total != 3 {
			t.Errorf("progress line %q has no time or a wrong total", sc.Text())
		}
		got = append(got, line{e.Event, e.ID, e.Status, e.Done})
	}
	want := []line{
		{"skip", "a", batch.Passed, 1},
		{"start", "b", "", 1},
		{"finish", "b", batch.Failed, 2},
		{"start", "c", "", 2},
		{"finish", "c", batch.Error, 3},
		{"summary", "", "", 3},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("progress lines (-want +got):\n%s", diff)
	}
}

func TestProgressBar(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf syncBuffer
		f := &fake{}
		_, err := batch.Run(t.Context(), jobs("a:pass:3", "b:fail:3", "c:pass:3"),
			batch.Config{Out: t.TempDir(), Runner: f.run, Progress: &buf, Bar: true, Width: 100})
		if err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		for _, want := range []string{
			"\r\x1b[K[------------------------] 0/3",
			"\r\x1b[KFAIL  b (3s): step cap of 3 reached\n",
			"[################--------] 2/3  1 passed  1 failed  0 errors  0:06",
			"\r\x1b[K[########################] 3/3  2 passed  1 failed  0 errors  0:09\n",
			"0:04  running: b", // the ticker redraws while a job runs
		} {
			if !strings.Contains(out, want) {
				t.Errorf("bar output %q\ndoes not contain %q", out, want)
			}
		}
		for l := range strings.SplitSeq(out, "\r\x1b[K") {
			if n := len([]rune(strings.TrimSuffix(l, "\n"))); n > 99 {
				t.Errorf("bar line %q is %d columns wide, want at most 99", l, n)
			}
		}
	})
}

// syncBuffer is a bytes.Buffer safe for the bar's ticker goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func writeFile(t *testing.T, path, data string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func sortedCopy(s []string) []string { return slices.Sorted(slices.Values(s)) }

// TestJUnitTimeCoversEveryRun finishes a batch in three runs: one that
// completes, one killed (it leaves its end unrecorded) and the one that
// finishes. junit.xml's time is the sum of the three runs' time, from the
// first one's start, and leaves out the hour between runs.
func TestJUnitTimeCoversEveryRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		f := &fake{}
		all := jobs("a:pass:10", "b:pass:10", "c:pass:10")
		first := time.Now()
		if _, err := batch.Run(t.Context(), all[:1], batch.Config{Out: dir, Runner: f.run}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour) // nobody runs the batch for an hour (fake time)

		// The second run finishes b at 10s and is killed at 15s, while c
		// runs: it never records its end.
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(15*time.Second, cancel)
		if _, err := batch.Run(ctx, all, batch.Config{Out: dir, Runner: f.run}); !errors.Is(err, context.Canceled) {
			t.Fatalf("Run(cancelled) error = %v, want context.Canceled", err)
		}
		path := filepath.Join(dir, batch.AttemptsFile)
		var attempts []batch.Attempt
		raw, err := os.ReadFile(path)
		if err == nil {
			err = json.Unmarshal(raw, &attempts)
		}
		if err != nil || len(attempts) != 2 || attempts[1].Elapsed != 15*time.Second {
			t.Fatalf("%s = %s (%v), want two runs, the second of 15s", path, raw, err)
		}
		attempts[1].Elapsed = 0 // as SIGKILL leaves it
		raw, _ = json.Marshal(attempts)
		writeFile(t, path, string(raw))
		time.Sleep(time.Hour)

		sum, err := batch.Run(t.Context(), all, batch.Config{Out: dir, Runner: f.run})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Elapsed != 10*time.Second {
			t.Errorf("third run's elapsed = %v, want 10s (job c)", sum.Elapsed)
		}
		type span struct {
			Offset, Elapsed time.Duration
			Estimated       bool
		}
		var got []span
		for _, a := range sum.Attempts {
			got = append(got, span{a.Started.Sub(first), a.Elapsed, a.Estimated})
		}
		want := []span{
			{0, 10 * time.Second, false},
			{time.Hour + 10*time.Second, 10 * time.Second, true}, // to the end of b, the last job it finished
			{2*time.Hour + 25*time.Second, 10 * time.Second, false},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("summary's runs (-want +got):\n%s", diff)
		}
		if sum.TotalElapsed != 30*time.Second {
			t.Errorf("TotalElapsed = %v, want 30s", sum.TotalElapsed)
		}
		_, junitPath := batch.Files(dir, batch.Shard{})
		fh, err := os.Open(junitPath)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		root := parseXML(t, fh)
		suite := childrenNamed(root, "testsuite")[0]
		wantStamp := first.UTC().Format("2006-01-02T15:04:05")
		if root.attrs["time"] != "30.000" || suite.attrs["time"] != "30.000" || suite.attrs["timestamp"] != wantStamp {
			t.Errorf("junit time %q, suite time %q, timestamp %q; want 30.000, 30.000 and the first run's start %s",
				root.attrs["time"], suite.attrs["time"], suite.attrs["timestamp"], wantStamp)
		}
	})
}

// On a narrow terminal the bar still names the running job.
func TestProgressBarNarrow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf syncBuffer
		f := &fake{}
		_, err := batch.Run(t.Context(), jobs("checkout-with-saved-card:pass:3"),
			batch.Config{Out: t.TempDir(), Runner: f.run, Progress: &buf, Bar: true, Width: 30})
		if err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if !strings.Contains(out, "0/1 checkout-with-saved-card") {
			t.Errorf("bar output %q does not name the running job whole", out)
		}
		for l := range strings.SplitSeq(out, "\r\x1b[K") {
			if n := len([]rune(strings.TrimSuffix(l, "\n"))); n > 29 {
				t.Errorf("bar line %q is %d columns wide, want at most 29", l, n)
			}
		}
	})
}
